/**
 * Downloads and uploads of the browser actor (services/browser: downloads.ts,
 * download-actions.ts, uploads.ts, upload-approval.ts, workspace-files.ts, file-name.ts) with
 * Debian's Chromium in the real worker thread, the approvals actor, and a local site
 * (test/harness/browser-files-site.ts: 127.0.0.1 allowed by tools.web.allowPrivateHosts,
 * 127.0.0.2 not). Proves: names from pages made safe (unit); a link's file saved into
 * <workspace>/downloads/ with its bytes, size and MIME type, by `download` and by a plain click,
 * never over an existing file; a navigate to a file and `download {url}`; a name that climbs out
 * of the folder and is hidden neutralized; a download over browser.downloads.maxBytes cancelled
 * with LIMIT_EXCEEDED and no file left (workspace or staging folder); `downloads` listing; a
 * download from a private address refused by the proxy (the private server never reached); an
 * upload approved by a human (the notice names files, sizes and origin) whose bytes the site
 * receives, one denied; a button that opens a file chooser; an upload whose tab moved to another
 * origin after the approval refused; paths outside the workspace (absolute, `..`, symlinks out),
 * hard-linked files, missing files, a directory and files over the cap refused before anyone is
 * asked. Then, on a rig of its own: `browser.uploads.requireApproval: false` (no approval),
 * `agents[].requireApproval` naming the browser (one approval, with the upload's notice), and a
 * workspace whose downloads/ is a symlink out of it (PATH_ESCAPE, nothing written there).
 * Skipped when /usr/bin/chromium is missing.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { MAX_NAME_BYTES, safeFileName, withSuffix } from "../services/browser/file-name.js";
import { argsHash } from "../shared/runtime/approval-token.js";
import { BusClient } from "../shared/runtime/client.js";
import { browserConfigSchema } from "../shared/runtime/config-browser.js";
import { createLogger } from "../shared/runtime/logger.js";
import { BrowserHost } from "../services/browser/host.js";
import { waitFor } from "./harness/actors.js";
import { startFilesSite, TRUSTED_SPOOF, type FilesSite } from "./harness/browser-files-site.js";
import { BrowserRig, refOf } from "./harness/browser-rig.js";
import { pendingApproval, textOf } from "./harness/tools-actor.js";

const CHROMIUM = "/usr/bin/chromium";
const skip = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium)`;

/** The browser's staging root in a LurkBot home (`<dataDir>/browser/staging`). */
const stagingOf = (home: string) => join(home, "data", "browser", "staging");

/** Files in the browser's staging folders of a LurkBot home. */
function stagedFiles(home: string): string[] {
  const root = stagingOf(home);
  return (existsSync(root) ? readdirSync(root) : []).flatMap((d) => readdirSync(join(root, d)).map((f) => join(d, f)));
}

/** An approval token for a call with these arguments, asked and approved ahead of the call (a pre-issued token). */
async function preApproved(cli: BusClient, toolCallId: string, args: Record<string, unknown>): Promise<string> {
  const { approval } = await cli.call("approvals", "request", { toolCallId, tool: "browser", argsHash: argsHash(args), sessionKey: "agent:main:main", agentId: "main" });
  const { token } = await cli.call("approvals", "decide", { approvalId: approval.approvalId, decision: "approve", decidedBy: "cli:test" });
  assert.ok(token);
  return token;
}

describe("download names", () => {
  it("are one safe name: no path, no traversal, not hidden, no control characters, capped; a taken name gets a suffix", () => {
    assert.equal(safeFileName("report.pdf"), "report.pdf");
    assert.equal(safeFileName("../../etc/passwd"), "passwd");
    assert.equal(safeFileName("..\\..\\boot.ini"), "boot.ini");
    assert.equal(safeFileName(".bashrc"), "bashrc");
    assert.equal(safeFileName("_.._.bashrc"), "_._.bashrc");
    assert.equal(safeFileName("a..b.txt"), "a.b.txt");
    assert.equal(safeFileName("-rf .txt"), "rf.txt");
    assert.equal(safeFileName("..", "application/pdf"), "download.pdf");
    assert.equal(safeFileName("", undefined), "download");
    assert.equal(safeFileName("a\nb\u0000c\u202e.txt"), "abc.txt");
    assert.equal(safeFileName('q:a*b?"<>|.txt'), "q_a_b_____.txt");
    assert.equal(safeFileName("  spaced   out  .txt "), "spaced out.txt");
    const long = safeFileName(`${"é".repeat(200)}.pdf`);
    assert.ok(Buffer.byteLength(long) <= MAX_NAME_BYTES && long.endsWith(".pdf"), long);
    assert.equal(withSuffix("report.pdf", 1), "report.pdf");
    assert.equal(withSuffix("report.pdf", 2), "report-2.pdf");
    assert.equal(withSuffix("README", 3), "README-3");
    assert.ok(Buffer.byteLength(withSuffix(long, 12)) <= MAX_NAME_BYTES && withSuffix(long, 12).endsWith("-12.pdf"));
  });
});

describe("the browser actor: downloads and uploads on a real Chromium", { skip }, () => {
  let site: FilesSite;
  let tmp: string;
  let workspace: string;
  let cliNc: NatsConnection;
  let cli: BusClient;
  const rig = new BrowserRig();

  const decide = async (toolCallId: string, decision: "approve" | "deny") => {
    const record = await pendingApproval(cli, toolCallId);
    await cli.call("approvals", "decide", { approvalId: record.approvalId, decision, decidedBy: "cli:test" });
    return record;
  };
  const askedFor = async (toolCallId: string) => (await cli.call("approvals", "list", {})).approvals.some((a) => a.toolCallId === toolCallId);

  before(async () => {
    site = await startFilesSite();
    tmp = mkdtempSync(join(tmpdir(), "lurkbot-browser-files-"));
    await rig.start({
      agents: [{ id: "main", default: true, toolProfile: "full" }],
      tools: { timeoutMs: 60_000, web: { allowPrivateHosts: ["127.0.0.1"] } },
      approvals: { timeoutMs: 30_000 },
      browser: { downloads: { maxBytes: 1024 * 1024 }, uploads: { maxBytes: 200 * 1024 } },
    }, ["approvals"], { TMPDIR: tmp });
    workspace = join(rig.nats.home, "workspace");
    mkdirSync(join(workspace, "docs"), { recursive: true });
    cliNc = await rig.nats.connect("cli");
    cli = new BusClient(cliNc);
  });
  after(async () => {
    await cliNc?.close();
    await rig.stop();
    await site?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it("download: a link's file lands in downloads/ with its bytes, size and MIME type; a plain click saves too, never over the first", async () => {
    await rig.ok({ action: "open", url: `${site.main}/files` });
    const snap = await rig.ok({ action: "snapshot" });
    const saved = await rig.ok({ action: "download", ref: refOf(snap, /link "Get the report"/) });
    assert.match(saved, /^downloaded d\d+: downloads\/report\.csv \(\d+\.\d KB, text\/csv\) from http:\/\/127\.0\.0\.1:\d+\/file\/report\.csv$/);
    assert.deepEqual(readFileSync(join(workspace, "downloads", "report.csv")), site.report);
    const clicked = await rig.ok({ action: "act", kind: "click", ref: refOf(await rig.ok({ action: "snapshot" }), /link "Get the report"/) });
    assert.match(clicked, /still: t\d+ "Files"/);
    assert.match(clicked, /\ndownloaded d\d+: downloads\/report-2\.csv \(\d+\.\d KB, text\/csv\)/);
    assert.deepEqual(readFileSync(join(workspace, "downloads", "report-2.csv")), site.report);
    assert.deepEqual(readFileSync(join(workspace, "downloads", "report.csv")), site.report, "the first one is untouched");
  });

  it("download: navigate to a file's URL, and download {url}, save it; a page's URL is not a file", async () => {
    const tabsBefore = await rig.ok({ action: "tabs" });
    const navigated = await rig.ok({ action: "navigate", url: `${site.main}/file/report.csv` });
    assert.match(navigated, /^tab t\d+ "Files" http:\/\/127\.0\.0\.1:\d+\/files\n/, "the tab stays on its page");
    assert.match(navigated, /\nthe URL is a file: the browser downloaded it and the tab stayed where it was\ndownloaded d\d+: downloads\/report-3\.csv/);
    const byUrl = await rig.ok({ action: "download", url: `${site.main}/file/report.csv` });
    assert.match(byUrl, /^downloaded d\d+: downloads\/report-4\.csv \(\d+\.\d KB, text\/csv\)/);
    assert.deepEqual(readFileSync(join(workspace, "downloads", "report-4.csv")), site.report);
    assert.equal(await rig.ok({ action: "tabs" }), tabsBefore, "the download's own tab is closed, the current tab stays current");
    const page = await rig.call("browser", { action: "download", url: `${site.main}/page` });
    assert.equal(page.errorCode, "TOOL_INVALID_ARGS", textOf(page));
    assert.match(textOf(page), /is a page \(t\d+ "Just a page" .*\), not a file/);
  });

  it("download: a name that climbs out of the folder and is hidden is neutralized", async () => {
    await rig.ok({ action: "navigate", url: `${site.main}/files` });
    const evil = await rig.ok({ action: "download", ref: refOf(await rig.ok({ action: "snapshot" }), /link "Get the settings"/) });
    const path = /^downloaded d\d+: (downloads\/.+?) \(/.exec(evil)?.[1];
    assert.ok(path, evil);
    const name = path.slice("downloads/".length);
    assert.doesNotMatch(name, /[/\\\n\r]|^\.|\.\./, name);
    assert.equal(readFileSync(join(workspace, path), "utf8"), "echo owned\n");
    for (const dir of [workspace, join(workspace, "downloads"), rig.nats.home, dirname(rig.nats.home)]) assert.equal(existsSync(join(dir, ".bashrc")), false, dir);
  });

  it("download: one over browser.downloads.maxBytes is cancelled with a clear error; no file is left in the workspace or the staging folder", async () => {
    await rig.ok({ action: "navigate", url: `${site.main}/files` });
    const big = await rig.call("browser", { action: "download", ref: refOf(await rig.ok({ action: "snapshot" }), /link "Get the big file"/) });
    assert.equal(big.errorCode, "LIMIT_EXCEEDED", textOf(big));
    assert.match(textOf(big), /^download d\d+ \("big\.bin" from http:\/\/127\.0\.0\.1:\d+\/big\) failed: it is .*larger than 1\.0 MB \(browser\.downloads\.maxBytes\).*nothing was saved$/);
    assert.deepEqual(readdirSync(join(workspace, "downloads")).filter((n) => n.startsWith("big")), []);
    assert.deepEqual(stagedFiles(rig.nats.home), [], "nothing staged is left");
    assert.deepEqual(readdirSync(tmp).filter((d) => d.startsWith("lurkbot-browser-")), [], "nothing is staged in the OS temp folder");
  });

  it("downloads lists the recent downloads; a download from a private address is refused and the private server is never reached", async () => {
    await rig.ok({ action: "navigate", url: `${site.main}/files` });
    const refused = await rig.call("browser", { action: "download", ref: refOf(await rig.ok({ action: "snapshot" }), /link "Get the internal file"/) });
    assert.equal(refused.errorCode, "FORBIDDEN", textOf(refused));
    assert.match(textOf(refused), /started no download: it led to http:\/\/127\.0\.0\.2:\d+, which was refused: .*non-public/);
    assert.deepEqual(site.secretHits, [], "nothing reached 127.0.0.2");
    assert.equal(existsSync(join(workspace, "downloads", "secret.bin")), false);
    const listed = await rig.ok({ action: "downloads" });
    assert.match(listed, /^\d+ downloads \(oldest first\):\n/);
    assert.match(listed, /\nt\d+: downloaded d1: downloads\/report\.csv \(/);
    assert.match(listed, /\nt\d+: download d\d+ \("big\.bin" .*\) failed: it is .*larger than 1\.0 MB/);
  });

  it("upload: the notice names the files, their sizes and the page's origin; approved, the site receives the exact bytes; denied, nothing is set", async () => {
    const scan = randomBytes(50_000);
    writeFileSync(join(workspace, "notes.txt"), "my notes\n");
    writeFileSync(join(workspace, "docs", "scan.pdf"), scan);
    await rig.ok({ action: "navigate", url: `${site.main}/upload-form` });
    const form = await rig.ok({ action: "snapshot" });
    const input = refOf(form, /button "Document"/);
    const pending = rig.call("browser", { action: "upload", ref: input, paths: ["notes.txt", "docs/scan.pdf"] });
    const record = await decide(pending.toolCallId, "approve");
    assert.equal(record.tool, "browser");
    assert.match(record.command ?? "", new RegExp(`^upload to http://127\\.0\\.0\\.1:\\d+ \\(element ${input} of http://127\\.0\\.0\\.1:\\d+/upload-form \\(tab t\\d+\\)\\): notes\\.txt \\(9 bytes\\), docs/scan\\.pdf \\(48\\.8 KB\\)$`));
    const done = await pending;
    assert.equal(done.isError, false, textOf(done));
    assert.match(textOf(done), new RegExp(`^upload to ${input} on tab t\\d+: done: notes\\.txt \\(9 bytes\\), docs/scan\\.pdf \\(48\\.8 KB\\) set on the file input of http://127\\.0\\.0\\.1:\\d+`));
    const sent = await rig.ok({ action: "act", kind: "click", ref: refOf(form, /button "Send the document"/) });
    assert.match(sent, /heading "Received 2 files"/);
    assert.deepEqual(site.uploads.map((f) => [f.field, f.filename, f.bytes]), [["doc", "notes.txt", Buffer.from("my notes\n")], ["doc", "scan.pdf", scan]]);

    await rig.ok({ action: "navigate", url: `${site.main}/upload-form` });
    const again = await rig.ok({ action: "snapshot" });
    const denied = rig.call("browser", { action: "upload", ref: refOf(again, /button "Document"/), paths: ["notes.txt"] });
    await decide(denied.toolCallId, "deny");
    const no = await denied;
    assert.equal(no.errorCode, "TOOL_DENIED", textOf(no));
    assert.match(await rig.ok({ action: "act", kind: "click", ref: refOf(again, /button "Send the document"/) }), /heading "Received 0 files"/);
    assert.equal(site.uploads.length, 2, "nothing more was sent");
  });

  it("upload: a button that opens a file chooser gets the file; a tab that moved to another origin after the approval is refused", async () => {
    const photo = randomBytes(4_000);
    writeFileSync(join(workspace, "photo.png"), photo);
    await rig.ok({ action: "navigate", url: `${site.main}/upload-form` });
    const chooser = rig.call("browser", { action: "upload", ref: refOf(await rig.ok({ action: "snapshot" }), /button "Choose a picture"/), paths: ["photo.png"] });
    await decide(chooser.toolCallId, "approve");
    const done = await chooser;
    assert.equal(done.isError, false, textOf(done));
    assert.match(textOf(done), /set on the file chooser it opened of http:\/\/127\.0\.0\.1:\d+/);
    await waitFor(() => site.uploads.some((f) => f.field === "picture"), 10_000, "the page sent the picture");
    assert.deepEqual(site.uploads.filter((f) => f.field === "picture").map((f) => [f.filename, f.bytes]), [["photo.png", photo]]);
    // the form submitted itself: its navigation ends before the next one starts (or it would interrupt it)
    await waitFor(async () => (/"Received"/.test(await rig.ok({ action: "tabs" })) ? true : undefined), 10_000, "the tab shows the form's answer");

    await rig.ok({ action: "navigate", url: `${site.main}/upload-form` });
    const moved = rig.call("browser", { action: "upload", ref: refOf(await rig.ok({ action: "snapshot" }), /button "Document"/), paths: ["notes.txt"] });
    const record = await pendingApproval(cli, moved.toolCallId);
    assert.match(record.command ?? "", new RegExp(`^upload to ${site.main.replace(/\./g, "\\.")} `));
    // meanwhile the tab goes to the same form on another origin
    await rig.ok({ action: "navigate", url: `${site.other}/upload-form` });
    await cli.call("approvals", "decide", { approvalId: record.approvalId, decision: "approve", decidedBy: "cli:test" });
    const refused = await moved;
    assert.equal(refused.errorCode, "FORBIDDEN", textOf(refused));
    assert.match(textOf(refused), new RegExp(`approved for ${site.main.replace(/\./g, "\\.")}, but .* is now on ${site.other.replace(/\./g, "\\.")}/upload-form: nothing was uploaded`));
  });

  it("upload: a page that redefines its input's ownerDocument cannot change the origin the notice names or the upload is held to", async () => {
    writeFileSync(join(workspace, "statement.txt"), "my statement\n");
    const main = site.main.replace(/\./g, "\\.");
    // a fresh tab: the input's ref is of the main frame's first document (e<n>); then, navigated, of a later one (f<n>e<n>)
    for (const how of ["open", "navigate"] as const) {
      await rig.ok({ action: how, url: `${site.main}/spoof-upload` });
      const ref = refOf(await rig.ok({ action: "snapshot" }), /button "Statement"/);
      const reply = rig.call("browser", { action: "upload", ref, paths: ["statement.txt"] });
      const asked = await Promise.race([pendingApproval(cli, reply.toolCallId), reply.then(() => undefined)]);
      if (asked === undefined) {
        // refused because where the element is could not be told: fine, as long as nobody was asked and nothing was sent
        const answer = await reply;
        assert.equal(answer.errorCode, "TOOL_INVALID_ARGS", `${how} ${ref}: ${textOf(answer)}`);
        assert.doesNotMatch(textOf(answer), new RegExp(TRUSTED_SPOOF.replace(/\./g, "\\.")));
        continue;
      }
      assert.doesNotMatch(asked.command ?? "", /trusted-bank/, `${how} ${ref}: the page's lie is not in the notice`);
      assert.match(asked.command ?? "", new RegExp(`^upload to ${main} \\(element ${ref} of ${main}/spoof-upload \\(tab t\\d+\\)\\): statement\\.txt \\(13 bytes\\)$`), how);
      await cli.call("approvals", "decide", { approvalId: asked.approvalId, decision: "approve", decidedBy: "cli:test" });
      const done = await reply;
      assert.equal(done.isError, false, textOf(done));
      assert.match(textOf(done), new RegExp(`set on the file input of ${main};`));
    }
  });

  it("upload: where the element is cannot be told (no such ref, no tab): refused before anyone is asked; a pre-issued token is bound to the origin found when it runs", async () => {
    await rig.ok({ action: "navigate", url: `${site.main}/upload-form` });
    const input = refOf(await rig.ok({ action: "snapshot" }), /button "Document"/);
    for (const [ref, tabId] of [["e9999", undefined], ["f99e1", undefined], [input, "t999"]] as const) {
      const reply = rig.call("browser", { action: "upload", ref, paths: ["notes.txt"], ...(tabId ? { tabId } : {}) });
      const answer = await reply;
      assert.equal(answer.errorCode, "TOOL_INVALID_ARGS", `${ref}: ${textOf(answer)}`);
      assert.match(textOf(answer), /^nothing was uploaded: the origin of the page of .* could not be established \(.*\); take a snapshot and give the ref of the file input$/);
      assert.equal(await askedFor(reply.toolCallId), false, `no approval was asked for ${ref}`);
    }
    // a token approved ahead of the call: no notice was computed, the origin is found when the call runs
    const args = { action: "upload", ref: input, paths: ["notes.txt"] };
    const token = await preApproved(cli, "pre-issued-1", args);
    const done = await rig.call("browser", args, { toolCallId: "pre-issued-1", approvalToken: token });
    assert.equal(done.isError, false, textOf(done));
    assert.match(textOf(done), new RegExp(`set on the file input of ${site.main.replace(/\./g, "\\.")};`));
    const badArgs = { action: "upload", ref: "e9999", paths: ["notes.txt"] };
    const badToken = await preApproved(cli, "pre-issued-2", badArgs);
    const refused = await rig.call("browser", badArgs, { toolCallId: "pre-issued-2", approvalToken: badToken });
    assert.equal(refused.errorCode, "TOOL_INVALID_ARGS", textOf(refused));
    assert.match(textOf(refused), /could not be established/);
  });

  it("upload: paths outside the workspace, symlinks out of it, hard links, missing files and files over the cap are refused before anyone is asked", async () => {
    const outside = mkdtempSync(join(tmpdir(), "lurkbot-outside-"));
    try {
      writeFileSync(join(outside, "private.txt"), "not yours");
      symlinkSync(join(outside, "private.txt"), join(workspace, "link-out.txt"));
      symlinkSync(outside, join(workspace, "dir-out"));
      symlinkSync(join(outside, "nothing-here.txt"), join(workspace, "link-missing.txt"));
      writeFileSync(join(workspace, "large.bin"), Buffer.alloc(300 * 1024, 1));
      writeFileSync(join(rig.nats.home, "beside.txt"), "beside the workspace");
      writeFileSync(join(workspace, "shared.txt"), "one file, two names");
      linkSync(join(workspace, "shared.txt"), join(workspace, "shared-link.txt"));
      await rig.ok({ action: "navigate", url: `${site.main}/upload-form` });
      const input = refOf(await rig.ok({ action: "snapshot" }), /button "Document"/);
      for (const [paths, code, text] of [
        [[join(outside, "private.txt")], "PATH_ESCAPE", /is outside the workspace/],
        [["../beside.txt"], "PATH_ESCAPE", /is outside the workspace/],
        [["notes.txt", "docs/../../beside.txt"], "PATH_ESCAPE", /is outside the workspace/],
        [["link-out.txt"], "PATH_ESCAPE", /is \(or goes through\) a symlink that leads outside the workspace/],
        [["dir-out/private.txt"], "PATH_ESCAPE", /is \(or goes through\) a symlink that leads outside the workspace/],
        // a symlink to a missing file outside: an escape too, not "not found" (no probing outside)
        [["link-missing.txt"], "PATH_ESCAPE", /goes through a symlink that leads outside the workspace/],
        [["missing.txt"], "NOT_FOUND", /no such file in the workspace: "missing\.txt"/],
        [["docs"], "TOOL_INVALID_ARGS", /is a directory, not a file/],
        [["shared-link.txt"], "PATH_ESCAPE", /has 2 hard links/],
        [["large.bin"], "LIMIT_EXCEEDED", /"large\.bin" is 300\.0 KB, more than the 200\.0 KB one upload may send \(browser\.uploads\.maxBytes/],
      ] as const) {
        const reply = rig.call("browser", { action: "upload", ref: input, paths });
        const answer = await reply;
        assert.equal(answer.errorCode, code, `${paths.join()}: ${textOf(answer)}`);
        assert.match(textOf(answer), text);
        assert.match(textOf(answer), /^nothing was uploaded: /);
        assert.equal(await askedFor(reply.toolCallId), false, `no approval was asked for ${paths.join()}`);
      }
      const malformed = await rig.call("browser", { action: "upload", ref: input });
      assert.equal(malformed.errorCode, "TOOL_INVALID_ARGS");
      assert.match(textOf(malformed), /paths: required for upload/);
      assert.match(await rig.ok({ action: "act", kind: "click", ref: refOf(await rig.ok({ action: "snapshot" }), /button "Send the document"/) }), /heading "Received 0 files"/);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});

describe("the browser actor: upload approval as configured; a downloads/ folder that leads outside the workspace", { skip }, () => {
  let site: FilesSite;
  let cliNc: NatsConnection;
  let cli: BusClient;
  const rig = new BrowserRig();

  before(async () => {
    site = await startFilesSite();
    await rig.start({
      agents: [{ id: "main", default: true, toolProfile: "full" }, { id: "strict", toolProfile: "full", requireApproval: ["browser"] }],
      tools: { timeoutMs: 60_000, web: { allowPrivateHosts: ["127.0.0.1"] } },
      approvals: { timeoutMs: 30_000 },
      browser: { uploads: { requireApproval: false } },
    }, ["approvals"]);
    for (const [dir, text] of [["workspace", "main's file\n"], ["workspace-strict", "strict's file\n"]] as const) {
      mkdirSync(join(rig.nats.home, dir), { recursive: true });
      writeFileSync(join(rig.nats.home, dir, "note.txt"), text);
    }
    cliNc = await rig.nats.connect("cli");
    cli = new BusClient(cliNc);
  });
  after(async () => {
    await cliNc?.close();
    await rig.stop();
    await site?.close();
  });

  it("browser.uploads.requireApproval false: the upload runs without an approval", async () => {
    await rig.ok({ action: "open", url: `${site.main}/upload-form` });
    const form = await rig.ok({ action: "snapshot" });
    const reply = rig.call("browser", { action: "upload", ref: refOf(form, /button "Document"/), paths: ["note.txt"] });
    const done = await reply;
    assert.equal(done.isError, false, textOf(done));
    assert.equal((await cli.call("approvals", "list", {})).approvals.some((a) => a.toolCallId === reply.toolCallId), false);
    assert.match(await rig.ok({ action: "act", kind: "click", ref: refOf(form, /button "Send the document"/) }), /heading "Received 1 file"/);
    assert.deepEqual(site.uploads.map((f) => f.bytes.toString()), ["main's file\n"]);
  });

  it("an agent whose config names the browser for approval: one approval, whose notice is the upload's; its own workspace's file is sent", async () => {
    await rig.ok({ action: "navigate", url: `${site.main}/upload-form` });
    const form = await rig.ok({ action: "snapshot" });
    const strict = { agentId: "strict", sessionKey: "agent:strict:main" };
    const reply = rig.call("browser", { action: "upload", ref: refOf(form, /button "Document"/), paths: ["note.txt"] }, strict);
    const record = await pendingApproval(cli, reply.toolCallId);
    assert.match(record.command ?? "", /^upload to http:\/\/127\.0\.0\.1:\d+ \(element (f\d+)?e\d+ of .*\/upload-form \(tab t\d+\)\): note\.txt \(14 bytes\)$/);
    await cli.call("approvals", "decide", { approvalId: record.approvalId, decision: "approve", decidedBy: "cli:test" });
    const done = await reply;
    assert.equal(done.isError, false, textOf(done));
    const approvals = (await cli.call("approvals", "list", {})).approvals.filter((a) => a.toolCallId === reply.toolCallId);
    assert.equal(approvals.length, 1, "asked once");
    assert.match(await rig.ok({ action: "act", kind: "click", ref: refOf(form, /button "Send the document"/) }), /heading "Received 1 file"/);
    assert.deepEqual(site.uploads.map((f) => f.bytes.toString()), ["main's file\n", "strict's file\n"]);
  });

  it("a workspace whose downloads/ is a symlink out of it gets nothing: PATH_ESCAPE, and nothing is written there", async () => {
    const outside = mkdtempSync(join(tmpdir(), "lurkbot-outside-downloads-"));
    try {
      symlinkSync(outside, join(rig.nats.home, "workspace", "downloads"));
      const refused = await rig.call("browser", { action: "download", url: `${site.main}/file/report.csv` });
      assert.equal(refused.errorCode, "PATH_ESCAPE", textOf(refused));
      assert.match(textOf(refused), /failed: it could not be saved: downloads\/ in the workspace leads outside it \(a symlink\); nothing was saved/);
      assert.deepEqual(readdirSync(outside), []);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});

describe("the browser worker: an upload that needed an approval runs only bound to the real origin", { skip }, () => {
  let site: FilesSite;
  let dir: string;
  let host: BrowserHost;
  const call = (args: Record<string, unknown>, scope: Record<string, unknown> = {}) => host.call({ tool: "browser", args: args as never }, {
    timeoutMs: 30_000, imageCapBytes: 1 << 20, signal: new AbortController().signal, progress: () => undefined, workspace: join(dir, "workspace"), agentId: "main", ...scope,
  });
  const ok = async (args: Record<string, unknown>) => {
    const r = await call(args);
    assert.ok(r.ok, JSON.stringify(r));
    return r.text;
  };

  before(async () => {
    site = await startFilesSite();
    dir = mkdtempSync(join(tmpdir(), "lurkbot-browser-worker-"));
    mkdirSync(join(dir, "workspace"));
    writeFileSync(join(dir, "workspace", "statement.txt"), "my statement\n");
    host = new BrowserHost({
      config: browserConfigSchema.parse({ executablePath: CHROMIUM, persistentProfile: false }), profileDir: join(dir, "profile"), stagingRoot: join(dir, "staging"),
      allowPrivateHosts: ["127.0.0.1"], log: createLogger("browser-files-test", "silent"), activity: { count: 0 },
    });
  });
  after(async () => {
    await host?.stop("test done");
    await site?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("FORBIDDEN without an approved origin, and for the origin a spoofing page claims; the real origin works", async () => {
    await ok({ action: "open", url: `${site.main}/spoof-upload` });
    const ref = refOf(await ok({ action: "snapshot" }), /button "Statement"/);
    const args = { action: "upload", ref, paths: ["statement.txt"] };
    const missing = await call(args, { approvalRequired: true });
    assert.ok(!missing.ok && missing.error.code === "FORBIDDEN" && /none bound to a page's origin/.test(missing.error.message), JSON.stringify(missing));
    const spoofed = await call(args, { approvalRequired: true, approvedOrigin: TRUSTED_SPOOF });
    assert.ok(!spoofed.ok && spoofed.error.code === "FORBIDDEN", JSON.stringify(spoofed));
    assert.match(spoofed.error.message, new RegExp(`approved for ${TRUSTED_SPOOF.replace(/\./g, "\\.")}, but ${ref} is now on ${site.main.replace(/\./g, "\\.")}/spoof-upload`));
    const real = await call(args, { approvalRequired: true, approvedOrigin: site.main });
    assert.ok(real.ok, JSON.stringify(real));
    assert.ok(readdirSync(join(dir, "staging")).every((d) => /^\d+-[0-9a-f]{12}$/.test(d)), "staging folders are <pid>-<random>");
  });
});

describe("the browser actor: downloads belong to the acting agent, need an action, and are capped per browser session", { skip }, () => {
  let site: FilesSite;
  let home: string;
  const rig = new BrowserRig();
  const other = { agentId: "other", sessionKey: "agent:other:main" };
  const downloadsIn = (ws: string) => (existsSync(join(home, ws, "downloads")) ? readdirSync(join(home, ws, "downloads")).sort() : []);

  before(async () => {
    site = await startFilesSite();
    await rig.start({
      agents: [{ id: "main", default: true, toolProfile: "full" }, { id: "other", toolProfile: "full" }],
      tools: { timeoutMs: 60_000, web: { allowPrivateHosts: ["127.0.0.1"] } },
      browser: { downloads: { maxTotalBytes: Math.floor(site.report.length * 2.5), maxFiles: 4 } },
    });
    home = rig.nats.home;
  });
  after(async () => {
    await rig.stop();
    await site?.close();
  });

  it("a download a page starts on its own, seconds after the last action, is cancelled and nothing is saved", async () => {
    await rig.ok({ action: "open", url: `${site.main}/auto-download?after=6500` });
    const listed = await waitFor(async () => {
      const text = await rig.ok({ action: "downloads" });
      return /failed: /.test(text) ? text : undefined;
    }, 20_000, "the page's own download was noticed");
    assert.match(listed, /download d\d+ \("report\.csv" from http:\/\/127\.0\.0\.1:\d+\/file\/report\.csv\) failed: it was not started by an action/);
    assert.match(listed, /it was cancelled and nothing was saved$/m);
    assert.deepEqual(downloadsIn("workspace"), []);
    assert.deepEqual(stagedFiles(home), [], "nothing staged is left");
  });

  it("a download is saved into the workspace of the agent whose action started it; another agent neither lists it nor hears of it", async () => {
    const theirs = await rig.ok({ action: "download", url: `${site.main}/file/report.csv` }, other);
    assert.match(theirs, /^downloaded d\d+: downloads\/report\.csv/);
    assert.deepEqual(downloadsIn("workspace-other"), ["report.csv"]);
    assert.deepEqual(downloadsIn("workspace"), []);
    const mine = await rig.ok({ action: "downloads" });
    assert.doesNotMatch(mine, /downloaded/, "main does not see other's download");
    assert.match(await rig.ok({ action: "downloads" }, other), /^1 download \(oldest first\):\nt\d+: downloaded d\d+: downloads\/report\.csv/);
    assert.doesNotMatch(await rig.ok({ action: "tabs" }), /downloads that ended since/);
  });

  it("browser.downloads.maxTotalBytes and maxFiles cap one browser session's downloads", async () => {
    // other's report counts: one more report fits, a third does not (2.5 reports)
    assert.match(await rig.ok({ action: "download", url: `${site.main}/file/report.csv` }), /^downloaded d\d+: downloads\/report\.csv/);
    const over = await rig.call("browser", { action: "download", url: `${site.main}/file/report.csv` });
    assert.equal(over.errorCode, "LIMIT_EXCEEDED", textOf(over));
    assert.match(textOf(over), /failed: this browser session's downloads together would pass .* \(browser\.downloads\.maxTotalBytes, until the browser stops\): it was cancelled and nothing was saved$/);
    // small files still fit in bytes, until the count is reached (4 files)
    for (let i = 0; i < 2; i++) assert.match(await rig.ok({ action: "download", url: `${site.main}/file/evil` }), /^downloaded d\d+: /);
    const many = await rig.call("browser", { action: "download", url: `${site.main}/file/evil` });
    assert.equal(many.errorCode, "LIMIT_EXCEEDED", textOf(many));
    assert.match(textOf(many), /failed: this browser session already saved 4 downloads, the most allowed \(browser\.downloads\.maxFiles, until the browser stops\)/);
    assert.equal(downloadsIn("workspace").length, 3);
    assert.deepEqual(stagedFiles(home), []);
    // a new browser session starts counting again
    await rig.ok({ action: "stop" });
    assert.match(await rig.ok({ action: "download", url: `${site.main}/file/evil` }), /\ndownloaded d\d+: /);
  });

  it("staging folders a killed actor left behind are removed when the actor starts; a live one's are kept", async () => {
    const root = stagingOf(home);
    mkdirSync(join(root, "4194303-0123456789ab"), { recursive: true });
    writeFileSync(join(root, "4194303-0123456789ab", "partial"), "half a download");
    mkdirSync(join(root, "junk"));
    const live = `${process.pid}-abcdefabcdef`;
    mkdirSync(join(root, live));
    await rig.restartBrowser();
    assert.deepEqual(readdirSync(root).sort(), [live]);
  });
});
