/**
 * The lasting quota of an agent's `<workspace>/downloads/` folder
 * (`browser.downloads.maxFolderBytes`, services/browser/downloads.ts, folder-usage.ts): the walk
 * that measures a folder (unit: nested files counted, links not followed, a bounded walk), then
 * with Debian's Chromium in the real worker thread and a local site: a download that fits is
 * saved; one that would pass the quota with the files already there (the user's too) is
 * cancelled with LIMIT_EXCEEDED and nothing saved or staged; a folder already full refuses a
 * download as it starts; deleting files makes room again, also across browser sessions.
 * Skipped (the Chromium part) when /usr/bin/chromium is missing.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { folderUsage } from "../services/browser/folder-usage.js";
import { startFilesSite, type FilesSite } from "./harness/browser-files-site.js";
import { BrowserRig } from "./harness/browser-rig.js";
import { textOf } from "./harness/tools-actor.js";

const CHROMIUM = "/usr/bin/chromium";
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium)`;

describe("folderUsage", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "lurk-folder-usage-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("adds up the regular files below a folder, nested ones too; a missing folder holds nothing", async () => {
    const root = join(dir, "a");
    mkdirSync(join(root, "sub", "deeper"), { recursive: true });
    writeFileSync(join(root, "one"), Buffer.alloc(1000));
    writeFileSync(join(root, "sub", "two"), Buffer.alloc(300));
    writeFileSync(join(root, "sub", "deeper", "three"), Buffer.alloc(7));
    assert.deepEqual(await folderUsage(root), { bytes: 1307, files: 3, complete: true });
    assert.deepEqual(await folderUsage(join(dir, "missing")), { bytes: 0, files: 0, complete: true });
  });

  it("does not follow symbolic links, to files or to folders", async () => {
    const outside = join(dir, "outside");
    mkdirSync(outside);
    writeFileSync(join(outside, "huge"), Buffer.alloc(50_000));
    const root = join(dir, "b");
    mkdirSync(root);
    writeFileSync(join(root, "own"), Buffer.alloc(10));
    symlinkSync(join(outside, "huge"), join(root, "link-to-file"));
    symlinkSync(outside, join(root, "link-to-folder"));
    assert.deepEqual(await folderUsage(root), { bytes: 10, files: 1, complete: true });
    // the folder itself a link: not entered
    symlinkSync(outside, join(dir, "c"));
    assert.deepEqual(await folderUsage(join(dir, "c")), { bytes: 0, files: 0, complete: true });
  });

  it("stops after maxEntries entries and says the count is incomplete", async () => {
    const root = join(dir, "many");
    mkdirSync(root);
    for (let i = 0; i < 12; i++) writeFileSync(join(root, `f${i}`), Buffer.alloc(1));
    const cut = await folderUsage(root, 5);
    assert.equal(cut.complete, false);
    assert.ok(cut.files <= 5);
    assert.deepEqual(await folderUsage(root, 12), { bytes: 12, files: 12, complete: true });
  });
});

describe("the browser actor: browser.downloads.maxFolderBytes caps what an agent's downloads/ folder holds", { skip }, () => {
  let site: FilesSite;
  let downloads: string;
  const rig = new BrowserRig();
  const listed = () => (existsSync(downloads) ? readdirSync(downloads).sort() : []);
  const stagingOf = (home: string) => join(home, "data", "browser", "staging");
  const staged = () => {
    const root = stagingOf(rig.nats.home);
    return (existsSync(root) ? readdirSync(root) : []).flatMap((d) => readdirSync(join(root, d)));
  };

  before(async () => {
    site = await startFilesSite();
    // room for three reports
    await rig.start({
      agents: [{ id: "main", default: true, toolProfile: "full" }],
      tools: { timeoutMs: 60_000, web: { allowPrivateHosts: ["127.0.0.1"] } },
      browser: { downloads: { maxFolderBytes: site.report.length * 3 } },
    });
    downloads = join(rig.nats.home, "workspace", "downloads");
  });
  after(async () => {
    await rig.stop();
    await site?.close();
  });

  it("saves a download that fits with the files already there, and cancels one that would pass the quota", async () => {
    mkdirSync(join(downloads, "mine"), { recursive: true });
    // the user's own files count: one report's worth in a nested folder
    writeFileSync(join(downloads, "mine", "notes.bin"), Buffer.alloc(site.report.length));
    assert.match(await rig.ok({ action: "download", url: `${site.main}/file/report.csv` }), /^downloaded d\d+: downloads\/report\.csv/);
    assert.deepEqual(listed(), ["mine", "report.csv"]);
    // two reports held, a third fits exactly
    assert.match(await rig.ok({ action: "download", url: `${site.main}/file/report.csv` }), /^downloaded d\d+: downloads\/report-2\.csv/);
    writeFileSync(join(downloads, "mine", "notes.bin"), Buffer.alloc(site.report.length - 100));
    const over = await rig.call("browser", { action: "download", url: `${site.main}/file/report.csv` });
    assert.equal(over.errorCode, "LIMIT_EXCEEDED", textOf(over));
    assert.match(
      textOf(over),
      /failed: the workspace's downloads\/ folder holds .*, the most allowed being .* \(browser\.downloads\.maxFolderBytes\) and this file of .* would pass it: it was cancelled and nothing was saved; delete files from downloads\/ to make room$/,
    );
    assert.deepEqual(listed(), ["mine", "report-2.csv", "report.csv"]);
    assert.deepEqual(staged(), [], "nothing staged is left");
  });

  it("refuses a download as it starts when the folder is full already, and takes one again once files are deleted, in a new browser session too", async () => {
    writeFileSync(join(downloads, "mine", "notes.bin"), Buffer.alloc(site.report.length + 10));
    const full = await rig.call("browser", { action: "download", url: `${site.main}/file/evil` });
    assert.equal(full.errorCode, "LIMIT_EXCEEDED", textOf(full));
    assert.match(textOf(full), /failed: the workspace's downloads\/ folder holds .*, the most allowed being .* \(browser\.downloads\.maxFolderBytes\): it was cancelled and nothing was saved; delete files from downloads\/ to make room$/);
    assert.deepEqual(listed(), ["mine", "report-2.csv", "report.csv"]);
    // the quota lasts across browser sessions: it counts the folder, not this session
    await rig.ok({ action: "stop" });
    const still = await rig.call("browser", { action: "download", url: `${site.main}/file/evil` });
    assert.equal(still.errorCode, "LIMIT_EXCEEDED", textOf(still));
    rmSync(join(downloads, "mine"), { recursive: true });
    assert.match(await rig.ok({ action: "download", url: `${site.main}/file/report.csv` }), /downloaded d\d+: downloads\/report-3\.csv/);
    assert.deepEqual(staged(), []);
  });

  it("two downloads ending together are checked one after the other: only what fits is saved", async () => {
    rmSync(downloads, { recursive: true, force: true });
    mkdirSync(join(downloads, "mine"), { recursive: true });
    // room for one more report, not two
    writeFileSync(join(downloads, "mine", "notes.bin"), Buffer.alloc(Math.floor(site.report.length * 1.5)));
    const [a, b] = await Promise.all([
      rig.call("browser", { action: "download", url: `${site.main}/file/report.csv` }),
      rig.call("browser", { action: "download", url: `${site.main}/file/report.csv?copy=2` }),
    ]);
    const outcomes = [a, b].map((r) => (r.errorCode === undefined ? "saved" : r.errorCode)).sort();
    assert.deepEqual(outcomes, ["LIMIT_EXCEEDED", "saved"], `${textOf(a)}\n${textOf(b)}`);
    assert.equal(listed().filter((n) => n.endsWith(".csv")).length, 1);
    assert.deepEqual(staged(), []);
  });
});
