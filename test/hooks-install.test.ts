/**
 * `lurkbot hooks install|uninstall|update` as a process on real folders and archives, no bus: a
 * hook folder, a hook pack as a .tgz made by `npm pack` (two hooks, OpenClaw's `openclaw.hooks`
 * key), a .zip, the npm path through `npm pack file:…` (no registry, no network), --link,
 * --force, all-or-nothing (an invalid HOOK.md in a pack installs nothing), archives refused for
 * path traversal, absolute paths and links out of the tree (tars built here byte by byte), a
 * bundled hook's name refused, uninstall, update from a folder and from an npm spec; the source
 * shown by `hooks list` and `hooks info`.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { after, before, describe, it } from "node:test";
import JSZip from "jszip";
import { runCli } from "./harness/cli.js";

function hookMd(name: string, events: string[], key = "lurkbot"): string {
  return `---\nname: ${name}\ndescription: test hook ${name}\nmetadata: {"${key}": {"events": ${JSON.stringify(events)}}}\n---\n\n# ${name}\n`;
}

function writeHook(dir: string, name: string, message = `${name} ran`, key = "lurkbot"): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "HOOK.md"), hookMd(name, ["command:status"], key));
  writeFileSync(join(dir, "handler.js"), `export default async function (event) { event.messages.push(${JSON.stringify(message)}); }\n`);
}

/** a pack folder: package.json listing hooks/<name> for each name */
function writePack(dir: string, names: string[], version = "1.0.0", key = "openclaw"): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "@test/hook-pack", version, type: "module", [key]: { hooks: names.map((n) => `./hooks/${n}`) } }));
  for (const n of names) writeHook(join(dir, "hooks", n), n, `${n} ${version}`, key);
}

/** `npm pack` of a folder (no network): the tarball's path */
function npmPack(dir: string, dest: string, cache: string): string {
  mkdirSync(dest, { recursive: true });
  const r = spawnSync("npm", ["pack", "--pack-destination", dest, "--ignore-scripts", "--json"], { cwd: dir, encoding: "utf8", env: { ...process.env, npm_config_cache: cache } });
  assert.equal(r.status, 0, r.stderr);
  return join(dest, (JSON.parse(r.stdout) as Array<{ filename: string }>)[0]!.filename.replace(/^@/, "").replace(/\//g, "-"));
}

/** one tar entry, written byte by byte (ustar): type "0" file, "5" folder, "2" symbolic link */
function tarEntry(name: string, opts: { data?: string; type?: "0" | "2" | "5"; link?: string } = {}): Buffer {
  const data = Buffer.from(opts.data ?? "");
  const h = Buffer.alloc(512);
  h.write(name, 0, 100, "utf8");
  h.write(opts.type === "5" ? "0000755\0" : "0000644\0", 100);
  h.write("0000000\0", 108);
  h.write("0000000\0", 116);
  h.write(`${data.length.toString(8).padStart(11, "0")}\0`, 124);
  h.write("00000000000\0", 136);
  h.write("        ", 148);
  h.write(opts.type ?? "0", 156);
  if (opts.link) h.write(opts.link, 157, 100, "utf8");
  h.write("ustar\0", 257);
  h.write("00", 263);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
  return Buffer.concat([h, data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
}

const tgz = (...entries: Buffer[]) => gzipSync(Buffer.concat([...entries, Buffer.alloc(1024)]));
const HOOK_FILES = (root: string, name: string) => [
  tarEntry(`${root}/HOOK.md`, { data: hookMd(name, ["command:new"]) }),
  tarEntry(`${root}/handler.js`, { data: "export default async function () {}\n" }),
];

describe("lurkbot hooks install, uninstall, update", () => {
  let dir: string;
  let home: string;
  let hooksDir: string;
  let env: Record<string, string>;
  const cli = (...args: string[]) => runCli(["hooks", ...args], env, { timeoutMs: 120_000 });
  const config = () => (existsSync(join(home, "config.json")) ? (JSON.parse(readFileSync(join(home, "config.json"), "utf8")) as { hooks?: { installs?: Record<string, Record<string, unknown>>; entries?: Record<string, unknown> } }) : {});
  const installs = () => config().hooks?.installs ?? {};
  /** what is in $LURKBOT_HOME/hooks, staging folders included */
  const listing = () => (existsSync(hooksDir) ? readdirSync(hooksDir).sort() : []);

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "lurk-hooks-install-"));
    home = join(dir, "home");
    hooksDir = join(home, "hooks");
    mkdirSync(home);
    // no bus here: a port nothing listens on
    env = { PATH: process.env.PATH ?? "", HOME: home, LURKBOT_HOME: home, LURKBOT_WORKSPACE: join(home, "workspace"), LURKBOT_NATS_URL: "nats://127.0.0.1:1", npm_config_cache: join(dir, "npm-cache"), npm_config_update_notifier: "false", npm_config_offline: "true" };
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("installs a hook folder: copied into $LURKBOT_HOME/hooks/NAME, recorded in hooks.installs, on as user hooks are; list and info show where it came from", async () => {
    writeHook(join(dir, "src", "greeter"), "greeter");
    const r = await cli("install", join(dir, "src", "greeter"));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`installed greeter from ${join(dir, "src", "greeter")} → ${join(hooksDir, "greeter")}`));
    assert.match(r.stdout, /on \(hooks in \$LURKBOT_HOME\/hooks are on by default\)\. Turn it off: npx lurkbot hooks disable greeter/);
    assert.match(r.stdout, /LurkBot is not running here .*the change applies when the hooks actor starts/);
    assert.equal(lstatSync(join(hooksDir, "greeter")).isDirectory(), true);
    assert.match(readFileSync(join(hooksDir, "greeter", "handler.js"), "utf8"), /greeter ran/);
    const rec = installs().greeter!;
    assert.deepEqual([rec.source, rec.path], ["path", join(dir, "src", "greeter")]);
    assert.ok(!Number.isNaN(Date.parse(String(rec.installedAt))));
    const list = await cli("list");
    assert.match(list.stdout, /greeter\s+user \(path\)\s+command:status\s+yes \(default\)\s+yes/);
    const info = await cli("info", "greeter");
    assert.match(info.stdout, new RegExp(`installed: +from ${join(dir, "src", "greeter")}, \\d{4}-`));
    const json = JSON.parse((await cli("info", "greeter", "--json")).stdout) as { install: { source: string } };
    assert.equal(json.install.source, "path");
    assert.deepEqual(listing(), ["greeter"], "no staging folder is left");
  });

  it("refuses a name that is installed unless --force, which replaces it", async () => {
    writeHook(join(dir, "src2", "greeter"), "greeter", "greeter v2");
    const again = await cli("install", join(dir, "src2", "greeter"));
    assert.equal(again.code, 1);
    assert.match(again.stderr, /a hook named "greeter" is already in .*: replace it with --force, or remove it first \(npx lurkbot hooks uninstall greeter\)\. Nothing was installed\./);
    assert.match(readFileSync(join(hooksDir, "greeter", "handler.js"), "utf8"), /greeter ran/);
    const forced = await cli("install", join(dir, "src2", "greeter"), "--force");
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stdout, /replacing the one there/);
    assert.match(readFileSync(join(hooksDir, "greeter", "handler.js"), "utf8"), /greeter v2/);
    assert.equal(installs().greeter!.path, join(dir, "src2", "greeter"));
    assert.deepEqual(listing(), ["greeter"]);
  });

  it("installs a hook pack from a .tgz made by npm pack: both hooks, openclaw.hooks, the pack's type kept", async () => {
    writePack(join(dir, "pack-v1"), ["p-one", "p-two"]);
    const tarball = npmPack(join(dir, "pack-v1"), dir, env.npm_config_cache!);
    const r = await cli("install", tarball, "--json");
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { installed: Array<{ name: string; runs: boolean; install: { source: string; pack: string; version: string } }>; actor: { state: string } };
    assert.deepEqual(out.installed.map((i) => [i.name, i.runs, i.install.source, i.install.pack, i.install.version]), [["p-one", true, "archive", "@test/hook-pack", "1.0.0"], ["p-two", true, "archive", "@test/hook-pack", "1.0.0"]]);
    assert.equal(out.actor.state, "bus-down");
    assert.equal((JSON.parse(readFileSync(join(hooksDir, "p-one", "package.json"), "utf8")) as { type: string }).type, "module");
    assert.match(readFileSync(join(hooksDir, "p-two", "handler.js"), "utf8"), /p-two 1\.0\.0/);
  });

  it("installs a pack from a .zip (lurkbot.hooks)", async () => {
    const zip = new JSZip();
    zip.file("zpack/package.json", JSON.stringify({ name: "zpack", version: "0.3.0", lurkbot: { hooks: ["hooks/z-hook"] } }));
    zip.file("zpack/hooks/z-hook/HOOK.md", hookMd("z-hook", ["session:reset"]));
    zip.file("zpack/hooks/z-hook/handler.mjs", "export default async function () {}\n");
    writeFileSync(join(dir, "zpack.zip"), await zip.generateAsync({ type: "nodebuffer", platform: "UNIX" }));
    const r = await cli("install", join(dir, "zpack.zip"));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /installed z-hook 0\.3\.0 from archive .*zpack\.zip/);
    assert.ok(existsSync(join(hooksDir, "z-hook", "handler.mjs")));
    assert.equal(existsSync(join(hooksDir, "z-hook", "package.json")), false, "a pack without type or dependencies adds no package.json");
  });

  it("--link links the folder: changes there are the hook's; uninstall removes the link and keeps the folder", async () => {
    const src = join(dir, "linked", "l-hook");
    writeHook(src, "l-hook");
    const r = await cli("install", src, "--link");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\(a link\)/);
    assert.equal(lstatSync(join(hooksDir, "l-hook")).isSymbolicLink(), true);
    assert.equal(readlinkSync(join(hooksDir, "l-hook")), src);
    assert.equal(installs()["l-hook"]!.link, true);
    const list = JSON.parse((await cli("list", "--json")).stdout) as { hooks: Array<{ name: string; source: string; runs: boolean }> };
    const linked = list.hooks.find((h) => h.name === "l-hook");
    assert.deepEqual([linked?.source, linked?.runs], ["user", true], "discovery follows the link");
    const npmLink = await cli("install", "some-package", "--link");
    assert.equal(npmLink.code, 64);
    assert.match(npmLink.stderr, /--link links a local folder/);
    const up = await cli("update", "l-hook");
    assert.match(up.stdout, /up to date: l-hook \(linked to .*it follows that folder/);
    const un = await cli("uninstall", "l-hook");
    assert.equal(un.code, 0, un.stderr);
    assert.match(un.stdout, /uninstalled l-hook: removed .*\(a link: the folder it pointed to is kept\); removed hooks\.installs\.l-hook/);
    assert.equal(existsSync(join(hooksDir, "l-hook")), false);
    assert.ok(existsSync(join(src, "handler.js")));
    assert.equal(installs()["l-hook"], undefined);
  });

  it("refuses archives with path traversal, absolute paths or links out of the tree, and writes nothing", async () => {
    const before = listing();
    const cfg = readFileSync(join(home, "config.json"), "utf8");
    const cases: Array<[string, Buffer, RegExp]> = [
      ["traversal.tgz", tgz(...HOOK_FILES("package", "evil"), tarEntry("package/../../../escaped.js", { data: "pwned" })), /"package\/\.\.\/\.\.\/\.\.\/escaped\.js" climbs out of the archive \(path traversal\)/],
      ["absolute.tgz", tgz(...HOOK_FILES("package", "evil"), tarEntry("/tmp/lurk-absolute-evil.js", { data: "pwned" })), /"\/tmp\/lurk-absolute-evil\.js" is an absolute path/],
      ["link-out.tgz", tgz(...HOOK_FILES("package", "evil"), tarEntry("package/secrets", { type: "2", link: "../../../../etc" })), /"package\/secrets" is a symbolic link to "\.\.\/\.\.\/\.\.\/\.\.\/etc", outside the archive/],
      ["through-link.tgz", tgz(...HOOK_FILES("package", "evil"), tarEntry("package/lib", { type: "2", link: "." }), tarEntry("package/lib/x.js", { data: "x" })), /"package\/lib\/x\.js" lies under the symbolic link "package\/lib"/],
    ];
    for (const [file, bytes, reason] of cases) {
      writeFileSync(join(dir, file), bytes);
      const r = await cli("install", join(dir, file));
      assert.equal(r.code, 1, `${file}: ${r.stdout}`);
      assert.match(r.stderr, reason, file);
      assert.match(r.stderr, /nothing was installed/);
    }
    assert.equal(existsSync(join(dir, "escaped.js")), false);
    assert.equal(existsSync("/tmp/lurk-absolute-evil.js"), false);
    assert.deepEqual(listing(), before, "no hook and no staging folder");
    assert.equal(readFileSync(join(home, "config.json"), "utf8"), cfg);
  });

  it("refuses a bundled hook's name and says what to do", async () => {
    writeHook(join(dir, "clash", "session-memory"), "session-memory");
    const r = await cli("install", join(dir, "clash", "session-memory"));
    assert.equal(r.code, 1);
    assert.match(r.stderr, /"session-memory" is the name of a bundled hook, which an installed hook may not take\. Rename the hook .*npx lurkbot hooks disable session-memory/);
    assert.equal(existsSync(join(hooksDir, "session-memory")), false);
  });

  it("an invalid HOOK.md anywhere in a pack installs nothing; not a hook at all says so", async () => {
    const before = listing();
    const cfg = readFileSync(join(home, "config.json"), "utf8");
    writePack(join(dir, "bad-pack"), ["good-one", "bad-two"]);
    writeFileSync(join(dir, "bad-pack", "hooks", "bad-two", "HOOK.md"), "---\nname: bad-two\nmetadata: {\"lurkbot\": {\"events\": [\"Not An Event\"]}}\n---\n");
    const r = await cli("install", join(dir, "bad-pack"));
    assert.equal(r.code, 1);
    assert.match(r.stderr, /bad-pack \(hooks\/bad-two\) is not a valid hook: "Not An Event" is not an event name.*Nothing was installed/);
    mkdirSync(join(dir, "empty-folder"));
    const none = await cli("install", join(dir, "empty-folder"));
    assert.equal(none.code, 1);
    assert.match(none.stderr, /is not a hook or a hook pack: it has no HOOK\.md, and no package\.json listing hook folders/);
    assert.deepEqual(listing(), before);
    assert.equal(readFileSync(join(home, "config.json"), "utf8"), cfg);
  });

  it("an npm spec goes through npm pack (file: here, no registry); update reinstalls when the package changed", async () => {
    writePack(join(dir, "npm-v1"), ["n-hook"], "1.0.0", "lurkbot");
    const spec = join(dir, "n-pack.tgz");
    copyFileSync(npmPack(join(dir, "npm-v1"), join(dir, "npm-out1"), env.npm_config_cache!), spec);
    const r = await cli("install", `file:${spec}`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`installed n-hook 1\\.0\\.0 from npm file:${spec}`));
    const rec = installs()["n-hook"]!;
    assert.deepEqual([rec.source, rec.spec, rec.pack, rec.version], ["npm", `file:${spec}`, "@test/hook-pack", "1.0.0"]);
    assert.match(String(rec.integrity), /^sha512-/);
    const same = await cli("update", "n-hook");
    assert.equal(same.code, 0, same.stderr);
    assert.match(same.stdout, /up to date: n-hook \(npm file:.* is still @test\/hook-pack@1\.0\.0\)/);
    writePack(join(dir, "npm-v2"), ["n-hook"], "1.1.0", "lurkbot");
    copyFileSync(npmPack(join(dir, "npm-v2"), join(dir, "npm-out2"), env.npm_config_cache!), spec);
    const up = await cli("update", "--all");
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stdout, /updated n-hook from npm file:.*n-pack\.tgz \(1\.0\.0 → 1\.1\.0\)/);
    assert.match(readFileSync(join(hooksDir, "n-hook", "handler.js"), "utf8"), /n-hook 1\.1\.0/);
    assert.equal(installs()["n-hook"]!.version, "1.1.0");
    const missing = await cli("install", `file:${join(dir, "no-such.tgz")}`);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /npm pack file:.*no-such\.tgz failed: no such package or file .*Nothing was installed/);
    const noNpm = await runCli(["hooks", "install", "left-pad"], { ...env, PATH: join(dir, "empty-path") });
    assert.equal(noNpm.code, 1);
    assert.match(noNpm.stderr, /npm is not on PATH, so an npm package cannot be fetched/);
  });

  it("a pack with dependencies gets them installed into the hook's folder (npm install --omit=dev --ignore-scripts), scripts never run", async () => {
    const dep = join(dir, "dep");
    mkdirSync(dep);
    // a preinstall script that would leave a mark: --ignore-scripts keeps it from running
    writeFileSync(join(dep, "package.json"), JSON.stringify({ name: "lurk-test-dep", version: "1.0.0", main: "index.js", scripts: { preinstall: `node -e "require('fs').writeFileSync('${join(dir, "script-ran")}', '')"` } }));
    writeFileSync(join(dep, "index.js"), "module.exports = 'dep-value';\n");
    const depTgz = npmPack(dep, join(dir, "dep-out"), env.npm_config_cache!);
    const pack = join(dir, "dep-pack");
    mkdirSync(join(pack, "hooks", "d-hook"), { recursive: true });
    writeFileSync(join(pack, "package.json"), JSON.stringify({ name: "dep-pack", version: "1.0.0", dependencies: { "lurk-test-dep": `file:${depTgz}` }, lurkbot: { hooks: ["hooks/d-hook"] } }));
    writeFileSync(join(pack, "hooks", "d-hook", "HOOK.md"), hookMd("d-hook", ["command:new"]));
    writeFileSync(join(pack, "hooks", "d-hook", "handler.mjs"), "import value from 'lurk-test-dep';\nexport default async function (event) { event.messages.push(value); }\n");
    const r = await cli("install", pack);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(existsSync(join(hooksDir, "d-hook", "node_modules", "lurk-test-dep", "index.js")));
    assert.equal(existsSync(join(dir, "script-ran")), false);
    const { default: handler } = (await import(join(hooksDir, "d-hook", "handler.mjs"))) as { default: (e: { messages: string[] }) => Promise<void> };
    const event = { messages: [] as string[] };
    await handler(event);
    assert.deepEqual(event.messages, ["dep-value"]);
  });

  it("update of a folder install copies it again; uninstall removes the folder and its config entries; errors name what to do", async () => {
    writeFileSync(join(dir, "src2", "greeter", "handler.js"), "export default async function (event) { event.messages.push('greeter v3'); }\n");
    const up = await cli("update", "greeter");
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stdout, /updated greeter from .*src2\/greeter/);
    assert.match(readFileSync(join(hooksDir, "greeter", "handler.js"), "utf8"), /greeter v3/);
    assert.equal((await cli("disable", "greeter")).code, 0);
    assert.equal((config().hooks?.entries as Record<string, unknown>).greeter !== undefined, true);
    const un = await cli("uninstall", "greeter");
    assert.equal(un.code, 0, un.stderr);
    assert.match(un.stdout, /removed hooks\.installs\.greeter and hooks\.entries\.greeter/);
    assert.equal(existsSync(join(hooksDir, "greeter")), false);
    assert.equal(installs().greeter, undefined);
    const bundled = await cli("uninstall", "boot-md");
    assert.equal(bundled.code, 1);
    assert.match(bundled.stderr, /"boot-md" is a bundled hook: it ships with LurkBot and cannot be uninstalled\. Turn it off: npx lurkbot hooks disable boot-md/);
    const none = await cli("uninstall", "greeter");
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no installed hook named "greeter"/);
    const notInstalled = await cli("update", "boot-md");
    assert.equal(notInstalled.code, 1);
    assert.match(notInstalled.stderr, /was not installed with `lurkbot hooks install`/);
    assert.equal((await cli("update")).code, 64);
    assert.equal((await cli("install")).code, 64);
    assert.equal((await cli("list", "--force")).code, 64);
    // --agent still picks the workspace whose hook enable/disable turns on or off (as before install came)
    const enableWs = await cli("enable", "no-such-hook", "--agent", "main");
    assert.equal(enableWs.code, 1, enableWs.stderr);
    assert.match(enableWs.stderr, /no hook named "no-such-hook"/);
  });

  it("npm is configured by neither the pack (.npmrc) nor the CLI's environment (npm_config_git): a program named as git never runs during install", async () => {
    const mark = join(dir, "git-program-ran");
    const program = join(dir, "fake-git.sh");
    writeFileSync(program, `#!/bin/sh\ntouch '${mark}'\nexit 1\n`, { mode: 0o755 });
    const pack = join(dir, "npmrc-pack");
    mkdirSync(join(pack, "hooks", "rc-hook"), { recursive: true });
    writeFileSync(join(pack, "package.json"), JSON.stringify({ name: "npmrc-pack", version: "1.0.0", dependencies: { "some-dep": "github:someone/some-repo" }, lurkbot: { hooks: ["hooks/rc-hook"] } }));
    writeFileSync(join(pack, "hooks", "rc-hook", "HOOK.md"), hookMd("rc-hook", ["command:new"]));
    writeFileSync(join(pack, "hooks", "rc-hook", "handler.js"), "export default async function () {}\n");
    writeFileSync(join(pack, "hooks", "rc-hook", ".npmrc"), `git=${program}\n`);
    const r = await cli("install", pack);
    assert.equal(r.code, 1, r.stdout);
    assert.equal(existsSync(mark), false, "the pack's .npmrc named the program npm runs as git");
    rmSync(join(pack, "hooks", "rc-hook", ".npmrc"));
    const fromEnv = await runCli(["hooks", "install", pack], { ...env, npm_config_git: program }, { timeoutMs: 120_000 });
    assert.equal(fromEnv.code, 1, fromEnv.stdout);
    assert.equal(existsSync(mark), false, "npm_config_git reached npm");
    assert.equal(existsSync(join(hooksDir, "rc-hook")), false);
    // not registry specs: name@file:…, name@gist:…
    for (const spec of ["some-name@file:..", "some-name@gist:0123abcd"]) assert.equal((await cli("install", spec)).code, 64, spec);
  });

  it("refuses symbolic links that each look inside but, followed through another link, lead out (archive and folder)", async () => {
    const before = listing();
    // package/a/b/up -> ../.. is package; package/a/b/x -> up/../.. reads as package/a, but is package/.. /.. on disk
    writeFileSync(join(dir, "chain.tgz"), tgz(...HOOK_FILES("package", "chain"), tarEntry("package/a/b/", { type: "5" }), tarEntry("package/a/b/up", { type: "2", link: "../.." }), tarEntry("package/a/b/x", { type: "2", link: "up/../.." })));
    const r = await cli("install", join(dir, "chain.tgz"));
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /"package\/a\/b\/x" is a symbolic link to "up\/\.\.\/\.\.", outside the archive's folder; nothing was installed/);
    const folder = join(dir, "chain-folder", "chain");
    writeHook(folder, "chain");
    mkdirSync(join(folder, "sub"));
    symlinkSync("..", join(folder, "sub", "up"));
    symlinkSync("up/..", join(folder, "sub", "x"));
    const f = await cli("install", folder);
    assert.equal(f.code, 1, f.stdout);
    assert.match(f.stderr, /sub\/x in the hook chain is a symbolic link to up\/\.\., outside the hook's folder; .*Nothing was installed/);
    assert.deepEqual(listing(), before);
  });

  it("--link refuses a folder in $LURKBOT_HOME/hooks (it would replace itself) or in an agent's workspace", async () => {
    const inWorkspace = join(home, "workspace", "my-hooks", "ws-linked");
    writeHook(inWorkspace, "ws-linked");
    const ws = await cli("install", inWorkspace, "--link");
    assert.equal(ws.code, 64);
    assert.match(ws.stderr, /is in the workspace of agent .*which the agent can write/);
    const copied = await cli("install", inWorkspace);
    assert.equal(copied.code, 0, copied.stderr);
    const self = await cli("install", join(hooksDir, "ws-linked"), "--link", "--force");
    assert.equal(self.code, 64);
    assert.match(self.stderr, /is in .*hooks already/);
    assert.ok(existsSync(join(hooksDir, "ws-linked", "handler.js")), "the installed hook is still there");
    assert.equal((await cli("uninstall", "ws-linked")).code, 0);
  });

  it("a staging folder left by a killed install is removed by the next one, putting back a hook it had moved aside", async () => {
    const stale = join(hooksDir, ".install-999999999-dead01");
    writeHook(join(stale, "replaced-was-here"), "was-here");
    mkdirSync(join(stale, "src"));
    const old = new Date(Date.now() - 2 * 86_400_000);
    utimesSync(stale, old, old);
    writeHook(join(dir, "src-after-crash", "after-crash"), "after-crash");
    const r = await cli("install", join(dir, "src-after-crash", "after-crash"));
    assert.equal(r.code, 0, r.stderr);
    assert.equal(existsSync(stale), false);
    assert.ok(existsSync(join(hooksDir, "was-here", "HOOK.md")), "the hook moved aside is back");
    assert.deepEqual(listing().filter((n) => n.startsWith(".")), []);
  });
});
