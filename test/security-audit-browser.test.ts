/**
 * `lurkbot security audit`'s browser rules, as a real process on real files: strangers who can
 * drive the browser (critical with a persistent profile, gone when the DMs close, the browser is
 * denied there, needs an approval or is disabled; never for groups), the egress rule relaxed by
 * tools.web.allowPrivateHosts (loopback and port-less entries named), Chromium without its
 * sandbox (browser.sandbox false, or root without the key), uploads without approval, the
 * profile directory's mode (warning, critical when writable, --fix chmods it 700, never through
 * a symlink), a persistent profile inside a workspace, a Chromium binary others could replace;
 * and --deep against a real browser actor reporting its sandbox off.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { startActorProcess } from "./harness/actors.js";
import { audit, auditTempDir, byId, freshHome, level, mode, removeAuditDirs, writeConfig } from "./harness/audit.js";
import { TestNats } from "./harness/nats.js";

const TELEGRAM_TOKEN = "123456789:AAFakeTelegramTokenForTheAuditTest";
const FULL = [{ id: "main", default: true, toolProfile: "full" }];
const ROOT = process.getuid?.() === 0;

after(removeAuditDirs);

describe("lurkbot security audit: the browser", () => {
  it("strangers who can drive the browser: critical with the persistent profile, warning without; closed DMs, a deny rule or browser.enabled false end it", async () => {
    const base = { agents: FULL, channels: { telegram: { enabled: true } }, browser: { sandbox: true } };
    const { home, env } = await freshHome(base, { TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN });
    const open = await audit(env);
    const f = byId(open.report, "browser.reachable-by-strangers")!;
    assert.equal(f.level, "critical");
    assert.match(f.detail, /telegram DMs → agent main, main session: .*keeps your logins and cookies/);
    assert.match(f.fix, /tools\.bySessionType\.main\.deny \["group:browser"\].*routing\.dmScope to "per-channel-peer"/);
    assert.equal(open.run.code, 1);

    writeConfig(home, { ...base, browser: { sandbox: true, persistentProfile: false } });
    assert.equal(level((await audit(env)).report, "browser.reachable-by-strangers"), "warning");

    for (const closed of [
      { ...base, routing: { dmScope: "per-channel-peer" }, tools: { bySessionType: { dm: { deny: ["group:browser"] } } } },
      { ...base, routing: { dm: { policy: "pairing" } } },
      { ...base, browser: { enabled: false } },
      // every browser call waits for a human: the owner decides, as for exec with tools.exec.ask
      { ...base, tools: { requireApproval: ["group:browser"] } },
      { ...base, agents: [{ id: "main", default: true, toolProfile: "coding" }] },
      // groups only: group, topic and thread sessions never get the browser (the built-in group deny list)
      { ...base, routing: { dm: { policy: "disabled" } } },
    ]) {
      writeConfig(home, closed);
      assert.equal(byId((await audit(env)).report, "browser.reachable-by-strangers"), undefined, JSON.stringify(closed));
    }
  });

  it("the egress rule relaxed: private hosts the browser (and its pages' scripts) may reach, loopback and port-less entries named", async () => {
    const { home, env } = await freshHome({ agents: FULL, browser: { sandbox: true }, tools: { web: { allowPrivateHosts: ["127.0.0.1", "10.0.0.5:8080"] } } });
    const used = await audit(env);
    const f = byId(used.report, "browser.egress.private-hosts")!;
    assert.equal(f.level, "warning");
    assert.match(f.detail, /loopback: .*\(127\.0\.0\.1\)/);
    assert.match(f.detail, /127\.0\.0\.1 without a port: every port/);
    assert.doesNotMatch(f.detail, /10\.0\.0\.5:8080 without a port/);
    assert.match(f.detail, /any script of any page the browser opens/);
    assert.match(f.fix, /tools\.web\.allowPrivateHosts/);
    // no agent may use the browser: only worth knowing
    writeConfig(home, { browser: { sandbox: true }, tools: { web: { allowPrivateHosts: ["10.0.0.5:8080"] } } });
    assert.equal(level((await audit(env)).report, "browser.egress.private-hosts"), "info");
    // the browser off: web_fetch's own finding stays, the browser's goes
    writeConfig(home, { agents: FULL, browser: { enabled: false }, tools: { web: { allowPrivateHosts: ["10.0.0.5:8080"] } } });
    const off = await audit(env);
    assert.equal(byId(off.report, "browser.egress.private-hosts"), undefined);
    assert.equal(level(off.report, "tools.web.private-hosts"), "warning");
  });

  it("Chromium without its sandbox: browser.sandbox false, or root without the key; uploads without approval", async () => {
    const { home, env } = await freshHome({ agents: FULL, browser: { sandbox: false } });
    const off = byId((await audit(env)).report, "browser.sandbox-off")!;
    assert.equal(off.level, "warning");
    assert.match(off.detail, /browser\.sandbox is false/);
    assert.match(off.fix, /remove browser\.sandbox/);
    writeConfig(home, { browser: { sandbox: false } });
    assert.equal(level((await audit(env)).report, "browser.sandbox-off"), "info", "no agent may use the browser");
    writeConfig(home, { agents: FULL, browser: { sandbox: true } });
    assert.equal(byId((await audit(env)).report, "browser.sandbox-off"), undefined);
    writeConfig(home, { agents: FULL });
    const unset = byId((await audit(env)).report, "browser.sandbox-off");
    if (ROOT) {
      assert.equal(unset?.level, "warning");
      assert.match(unset!.detail, /runs as root/);
      assert.match(unset!.fix, /unprivileged user/);
    } else {
      assert.equal(unset, undefined);
    }

    writeConfig(home, { agents: FULL, browser: { sandbox: true, uploads: { requireApproval: false } } });
    assert.equal(level((await audit(env)).report, "browser.uploads.without-approval"), "warning");
    writeConfig(home, { agents: FULL, browser: { sandbox: true } });
    assert.equal(byId((await audit(env)).report, "browser.uploads.without-approval"), undefined, "uploads ask by default");
  });

  it("the profile directory's mode: warning, critical when writable; --fix chmods it 700; a symlink is reported, not followed", async () => {
    const { home, env } = await freshHome({ browser: { sandbox: true } });
    const profile = join(home, "data", "browser", "profile");
    mkdirSync(profile, { recursive: true, mode: 0o700 });
    assert.equal(byId((await audit(env)).report, "fs.browser-profile.permissions"), undefined, "700 as the actor creates it");
    chmodSync(profile, 0o755);
    const readable = byId((await audit(env)).report, "fs.browser-profile.permissions")!;
    assert.equal(readable.level, "warning");
    assert.equal(readable.fixable, true);
    assert.equal(readable.fix, `chmod 700 ${profile}`);
    chmodSync(profile, 0o777);
    assert.equal(level((await audit(env)).report, "fs.browser-profile.permissions"), "critical");
    const fixed = await audit(env, "--fix");
    assert.ok(fixed.report.fixes!.some((f) => f.path === profile && f.from === "777" && f.to === "700"), JSON.stringify(fixed.report.fixes));
    assert.equal(mode(profile), "700");
    assert.equal(byId(fixed.report, "fs.browser-profile.permissions"), undefined);

    // a profileDir that is a symlink to an open directory: reported, never followed
    const shared = join(auditTempDir(), "shared-profile");
    mkdirSync(shared, { mode: 0o755 });
    chmodSync(shared, 0o755);
    symlinkSync(shared, join(home, "chrome-profile"));
    writeConfig(home, { browser: { sandbox: true, profileDir: "chrome-profile" } });
    const linked = await audit(env, "--fix");
    assert.equal(byId(linked.report, "fs.browser-profile.permissions")?.fixable, false);
    assert.equal(mode(shared), "755");
  });

  it("a persistent profile inside an agent's workspace; a Chromium binary other users can replace", async () => {
    const { home, env } = await freshHome({ browser: { sandbox: true, profileDir: "workspace/.chrome" } });
    const inside = byId((await audit(env)).report, "browser.profile-in-workspace")!;
    assert.equal(inside.level, "warning");
    assert.match(inside.detail, /workspace of main/);
    writeConfig(home, { browser: { sandbox: true, profileDir: "workspace/.chrome", persistentProfile: false } });
    assert.equal(byId((await audit(env)).report, "browser.profile-in-workspace"), undefined);

    const dir = auditTempDir("lurk-audit-chromium-");
    const binary = join(dir, "chromium");
    writeFileSync(binary, "#!/bin/sh\n", { mode: 0o755 });
    chmodSync(dir, 0o755);
    writeConfig(home, { browser: { sandbox: true, executablePath: binary } });
    assert.equal(byId((await audit(env)).report, "browser.executable.replaceable"), undefined);
    chmodSync(binary, 0o777);
    const writable = byId((await audit(env)).report, "browser.executable.replaceable")!;
    assert.equal(writable.level, "critical");
    assert.match(writable.detail, /writable by every user \(mode 777\)/);
    chmodSync(binary, 0o755);
    chmodSync(dir, 0o777);
    assert.match(byId((await audit(env)).report, "browser.executable.replaceable")!.detail, /its directory is writable by every user/);
    chmodSync(dir, 0o1777);
    assert.equal(byId((await audit(env)).report, "browser.executable.replaceable"), undefined, "a sticky directory: only the owner may swap the file");
    writeConfig(home, { browser: { enabled: false, executablePath: binary } });
    chmodSync(binary, 0o777);
    assert.equal(byId((await audit(env)).report, "browser.executable.replaceable"), undefined, "the browser is off");
  });
});

describe("lurkbot security audit --deep: running browser actors", () => {
  it("a browser actor running Chromium without its sandbox is reported with its host; with the sandbox, nothing", async () => {
    const nats = await TestNats.start({ streams: false });
    try {
      // no Chromium is needed: the actor reports how it would run it
      writeFileSync(join(nats.home, "config.json"), JSON.stringify({ agents: FULL, browser: { sandbox: false, executablePath: "/nonexistent/chromium" } }));
      let browser = await startActorProcess("browser", nats);
      const bare = byId((await audit(nats.env(), "--deep")).report, "deep.browser.unsandboxed")!;
      assert.equal(bare.level, "warning");
      assert.match(bare.detail, /browser@[^ ]+:\d+ reports chromiumSandbox "false"/);
      await browser.stop();
      writeFileSync(join(nats.home, "config.json"), JSON.stringify({ agents: FULL, browser: { sandbox: true, executablePath: "/nonexistent/chromium" } }));
      browser = await startActorProcess("browser", nats);
      assert.equal(byId((await audit(nats.env(), "--deep")).report, "deep.browser.unsandboxed"), undefined);
      await browser.stop();
    } finally {
      await nats.stop();
    }
  });
});
