/**
 * `lurkbot security audit` as a real process on real files: a clean setup has no critical
 * finding (exit 0); each check's positive case (a channel listening beyond loopback with a
 * weak token, world-readable credentials, open DMs into the main session, exec without
 * approval for strangers, exec unsandboxed) with its id and level; the --json shape; --fix
 * changing modes and nothing else; --deep against real nats-servers (the actors and their
 * versions, anonymous access refused, and a deliberately wrong nats.conf flagged); no secret in
 * any output.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Svcm } from "@nats-io/services";
import { renderNatsConf } from "../shared/contract/index.js";
import { ensureCredentials } from "../shared/runtime/credentials.js";
import { natsServerBinary, natsServerEnv, portAnswers } from "../shared/runtime/nats-server.js";
import { assertNoSecret, audit, auditTempDir, byId, freshHome, level, mode, removeAuditDirs, writeConfig } from "./harness/audit.js";
import { runCli } from "./harness/cli.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { freePort, TestNats } from "./harness/nats.js";

const WEAK_WEB_TOKEN = "password12345678";
const STRONG_WEB_TOKEN = "Zq7f-Kd93_xPw2LmA8vRt5Ny1Hc6Ue4B";
const TELEGRAM_TOKEN = "123456789:AAFakeTelegramTokenForTheAuditTest";
const OPENAI_KEY = "sk-audit-test-key-0123456789abcdef";
const STORED_WEAK = "aaaaaaaaaaaaaaaaaaaaaaaaaaaa";

after(removeAuditDirs);

describe("lurkbot security audit: config and files", () => {
  it("a clean default setup: no critical finding, exit 0, the report grouped with its summary line", async () => {
    const { env } = await freshHome();
    const { run, report } = await audit(env);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.equal(report.summary.critical, 0, JSON.stringify(report.findings, null, 2));
    assert.equal(report.summary.warning, 0, JSON.stringify(report.findings, null, 2));
    assert.equal(report.deep, false);
    // the owner's own exec without approval is the default, worth knowing, not an alarm
    assert.equal(level(report, "approvals.exec-without-approval"), "info");

    const human = await runCli(["security", "audit"], env);
    assert.equal(human.code, 0);
    assert.match(human.stdout, /^LurkBot security audit of .*\n0 critical, 0 warnings, \d+ info\n/);
    assert.match(human.stdout, /\nINFO\n {2}\[approvals\.exec-without-approval\] /);
    assert.ok(!human.stdout.includes("\x1b["), "no colors when not a terminal");
  });

  it("a channel listening beyond loopback: a warning with a strong token, critical with a weak one; tokens never printed", async () => {
    const { home, env } = await freshHome({ channels: { web: { enabled: true, host: "0.0.0.0", port: 18790 } } }, { LURKBOT_WEB_TOKEN: STRONG_WEB_TOKEN });
    const strong = await audit(env);
    assert.equal(level(strong.report, "channel.web.exposed"), "warning");
    assert.equal(byId(strong.report, "channel.web.weak-token"), undefined);
    assert.equal(strong.run.code, 0, "an exposed channel with a strong token is not critical");
    assert.match(byId(strong.report, "channel.web.exposed")!.fix, /channels\.web\.host to "127\.0\.0\.1"/);
    assertNoSecret(strong.run, STRONG_WEB_TOKEN);

    writeConfig(home, { channels: { web: { enabled: true, host: "0.0.0.0", port: 18790, token: WEAK_WEB_TOKEN } } });
    const weak = await audit({ ...env, LURKBOT_WEB_TOKEN: "" });
    assert.equal(level(weak.report, "channel.web.weak-token"), "critical");
    assert.equal(weak.run.code, 1);
    assert.equal(level(weak.report, "secrets.config-plaintext"), "warning");
    assert.match(byId(weak.report, "secrets.config-plaintext")!.fix, /channels\.web\.token → LURKBOT_WEB_TOKEN/);
    const human = await runCli(["security", "audit"], { ...env, LURKBOT_WEB_TOKEN: "" });
    assert.equal(human.code, 1);
    assert.match(human.stdout, /\nCRITICAL\n {2}\[channel\.web\.weak-token\][\s\S]*\nWARNING\n[\s\S]*\[channel\.web\.exposed\]/);
    assertNoSecret(weak.run, WEAK_WEB_TOKEN);
    assertNoSecret(human, WEAK_WEB_TOKEN);

    // a weak secret stored in credentials/channels.json, on loopback: a warning
    writeConfig(home, { channels: { "openai-http": { enabled: true } } });
    writeFileSync(join(home, "credentials", "channels.json"), JSON.stringify({ "openai-http": { token: STORED_WEAK } }), { mode: 0o600 });
    const stored = await audit(env);
    assert.equal(level(stored.report, "channel.openai-http.weak-token"), "warning");
    assert.equal(byId(stored.report, "channel.openai-http.exposed"), undefined);
    assertNoSecret(stored.run, STORED_WEAK);
  });

  it("world-readable credentials and an open home: critical and warning, the same condition the actors refuse to start on", async () => {
    const { home, env } = await freshHome();
    chmodSync(join(home, "credentials", "nats.json"), 0o644);
    chmodSync(home, 0o755);
    const { run, report } = await audit(env);
    assert.equal(run.code, 1);
    const creds = byId(report, "fs.credentials.nats-json")!;
    assert.equal(creds.level, "critical");
    assert.equal(creds.fixable, true);
    assert.match(creds.fix, /^chmod 600 .*credentials\/nats\.json$/);
    assert.equal(level(report, "fs.home.permissions"), "warning");
    // the actors' own check says the same
    const status = await runCli(["status"], env);
    assert.equal(status.code, 78);
    assert.match(status.stderr, /readable by other users \(mode 644\)/);
    const passwords = Object.values((JSON.parse(readFileSync(join(home, "credentials", "nats.json"), "utf8")) as { users: Record<string, string> }).users);
    assertNoSecret(run, ...passwords);
  });

  it("open Telegram DMs: anyone reaches the main session and exec without approval; pairing and per-peer sessions end it", async () => {
    const { home, env } = await freshHome({ channels: { telegram: { enabled: true } } }, { TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN });
    const open = await audit(env);
    assert.equal(open.run.code, 1);
    assert.equal(level(open.report, "routing.dm.telegram.open"), "warning");
    assert.equal(level(open.report, "routing.dm.shared-main-session"), "critical");
    assert.equal(level(open.report, "tools.exec.open-dm-without-approval"), "critical");
    assert.match(byId(open.report, "tools.exec.open-dm-without-approval")!.detail, /telegram DMs → agent main, main session: exec, process/);
    assert.equal(level(open.report, "routing.groups.telegram.open"), "warning");
    assert.equal(level(open.report, "routing.groups.telegram.no-mention"), "warning");
    assert.equal(level(open.report, "tools.untrusted-private-data"), "warning");
    assertNoSecret(open.run, TELEGRAM_TOKEN);

    // every exec asks a human: strangers still reach the session, but no command runs unasked
    writeConfig(home, { channels: { telegram: { enabled: true } }, tools: { exec: { ask: "always" } } });
    const asked = await audit(env);
    assert.equal(byId(asked.report, "tools.exec.open-dm-without-approval"), undefined);
    assert.equal(level(asked.report, "routing.dm.shared-main-session"), "critical");

    // groups only, DMs off: group sessions never get exec (the policy's built-in group deny list), only the private-data warning
    writeConfig(home, { channels: { telegram: { enabled: true } }, routing: { dm: { policy: "disabled" } } });
    const groups = await audit(env);
    assert.equal(byId(groups.report, "tools.exec.open-dm-without-approval"), undefined);
    assert.equal(byId(groups.report, "routing.dm.shared-main-session"), undefined);
    assert.match(byId(groups.report, "tools.untrusted-private-data")!.detail, /telegram groups → agent main \(group, topic, thread sessions\): read/);

    writeConfig(home, {
      channels: { telegram: { enabled: true } },
      routing: { dmScope: "per-channel-peer", dm: { policy: "pairing" }, groups: { policy: "allowlist", allowFrom: ["telegram:-100123"], requireMention: true } },
    });
    const closed = await audit(env);
    assert.equal(closed.run.code, 0, JSON.stringify(closed.report.findings, null, 2));
    for (const id of ["routing.dm.telegram.open", "routing.dm.shared-main-session", "tools.exec.open-dm-without-approval", "routing.groups.telegram.open", "routing.groups.telegram.no-mention", "tools.untrusted-private-data"]) {
      assert.equal(byId(closed.report, id), undefined, id);
    }

    // pairing, but everyone in the main session: the seed's warning
    writeConfig(home, { channels: { telegram: { enabled: true } }, routing: { dm: { policy: "pairing" }, groups: { policy: "disabled" } } });
    assert.equal(level((await audit(env)).report, "routing.dm.shared-main-session"), "warning");

    // "*" among the owners: everyone approves tool calls
    writeConfig(home, { routing: { commands: { owners: ["*"] } } });
    assert.equal(level((await audit(env)).report, "routing.owners.wildcard"), "critical");
  });

  it("bubblewrap unusable: unsandboxed exec is critical, a refused exec only info", async () => {
    const { env } = await freshHome({ tools: { exec: { bwrapPath: "/nonexistent/bwrap", allowUnsandboxed: true } } });
    const bare = await audit(env);
    assert.equal(level(bare.report, "tools.exec.unsandboxed"), "critical");
    assert.equal(bare.run.code, 1);
    const { env: env2 } = await freshHome({ tools: { exec: { bwrapPath: "/nonexistent/bwrap" } } });
    const refused = await audit(env2);
    assert.equal(level(refused.report, "tools.exec.sandbox-unavailable"), "info");
    assert.equal(byId(refused.report, "tools.exec.unsandboxed"), undefined);
    assert.equal(refused.run.code, 0);
  });

  it("the --json shape: findings sorted critical first, summary counts, fixable flags", async () => {
    const { home, env } = await freshHome({ providers: { openai: { apiKey: OPENAI_KEY } }, channels: { web: { enabled: true, host: "0.0.0.0", token: WEAK_WEB_TOKEN } } }, {});
    chmodSync(join(home, "config.json"), 0o644);
    const { run, report } = await audit(env);
    const order = ["critical", "warning", "info"];
    const levels = report.findings.map((f) => order.indexOf(f.level));
    assert.deepEqual(levels, [...levels].sort((a, b) => a - b));
    assert.deepEqual(report.summary, {
      critical: report.findings.filter((f) => f.level === "critical").length,
      warning: report.findings.filter((f) => f.level === "warning").length,
      info: report.findings.filter((f) => f.level === "info").length,
    });
    assert.equal(byId(report, "fs.config.permissions")?.level, "critical", "readable with secrets in it");
    assert.equal(byId(report, "fs.config.permissions")?.fixable, true);
    assert.equal(byId(report, "channel.web.weak-token")?.fixable, false);
    assert.equal(new Set(report.findings.map((f) => f.id)).size, report.findings.length, "ids are unique");
    assertNoSecret(run, OPENAI_KEY, WEAK_WEB_TOKEN);
  });

  it("--fix: chmods the home, the secrets and config.json, lists them, audits again; leaves config content, the workspace and symlinks alone", async () => {
    const { home, env } = await freshHome({ channels: { web: { enabled: true, host: "0.0.0.0" } }, providers: { openai: { apiKey: OPENAI_KEY } } });
    const config = join(home, "config.json");
    const before = readFileSync(config);
    chmodSync(config, 0o664);
    chmodSync(home, 0o755);
    chmodSync(join(home, "data"), 0o775);
    chmodSync(join(home, "credentials", "nats.json"), 0o644);
    writeFileSync(join(home, "credentials", "channels.json"), JSON.stringify({ web: { token: STRONG_WEB_TOKEN } }), { mode: 0o644 });
    chmodSync(join(home, "credentials", "channels.json"), 0o644);
    const note = join(home, "workspace", "notes.txt");
    writeFileSync(note, "mine\n", { mode: 0o644 });
    chmodSync(note, 0o644);
    // logs/ as a symlink to a shared directory: reported, never followed
    const shared = join(home, "..", "shared-logs");
    mkdirSync(shared, { mode: 0o755 });
    chmodSync(shared, 0o755);
    rmSync(join(home, "logs"), { recursive: true });
    symlinkSync(shared, join(home, "logs"));

    const first = await audit(env, "--fix");
    assert.ok(first.report.fixes, "the changes are listed");
    const changed = Object.fromEntries(first.report.fixes!.map((f) => [f.path, `${f.from}->${f.to}`]));
    assert.deepEqual(changed, {
      [home]: "755->700",
      [join(home, "data")]: "775->700",
      [join(home, "credentials", "nats.json")]: "644->600",
      [join(home, "credentials", "channels.json")]: "644->600",
      [config]: "664->600",
    });
    assert.equal(first.report.before!.critical >= 3, true);
    assert.equal(mode(home), "700");
    assert.equal(mode(join(home, "credentials", "nats.json")), "600");
    assert.equal(mode(config), "600");
    assert.deepEqual(readFileSync(config), before, "config.json's content is untouched");
    assert.equal(mode(note), "644", "workspace files are not touched");
    assert.equal(mode(shared), "755", "a symlinked directory's target is not touched");
    // what --fix may not do stays reported, with its exact change
    for (const r of [first.report, (await audit(env)).report]) {
      for (const id of ["fs.home.permissions", "fs.data-dir.permissions", "fs.credentials.nats-json", "fs.credentials.channels-json", "fs.config.permissions"]) assert.equal(byId(r, id), undefined, id);
      assert.equal(level(r, "channel.web.exposed"), "warning");
      assert.equal(level(r, "fs.logs-dir.permissions"), "warning");
      assert.equal(byId(r, "fs.logs-dir.permissions")!.fixable, false);
    }
    const human = await runCli(["security", "audit", "--fix"], env);
    assert.match(human.stdout, /^--fix: nothing to change/);
    assertNoSecret(first.run, OPENAI_KEY, STRONG_WEB_TOKEN);
  });

  it("NATS: the actors' URL check, a plaintext remote URL allowed by config, server.conf listeners without TLS and no_auth_user", async () => {
    const { home, env } = await freshHome();
    const insecure = await audit({ ...env, LURKBOT_NATS_URL: "nats://10.0.0.5:4222" });
    assert.equal(level(insecure.report, "nats.url.insecure"), "critical");
    assert.match(byId(insecure.report, "nats.url.insecure")!.detail, /not loopback and not TLS/);
    writeConfig(home, { security: { allowPlaintextRemoteNats: true } });
    const allowed = await audit({ ...env, LURKBOT_NATS_URL: "nats://10.0.0.5:4222" });
    assert.equal(byId(allowed.report, "nats.url.insecure"), undefined);
    assert.equal(level(allowed.report, "nats.url.plaintext-remote"), "warning");
    writeFileSync(join(home, "nats", "server.conf"), [
      "include ./nats.conf",
      "server_name: lurk-a # this host",
      "no_auth_user: cli",
      "cluster {",
      "  name: lurkbot",
      "  listen: 0.0.0.0:6222",
      "  routes: [ nats-route://lurk-b:6222 ]",
      "}",
      "leafnodes {",
      "  listen: 0.0.0.0:7422",
      "  authorization { user: leaf, password: $LEAF_PASS }",
      "}",
      "gateway {",
      "  name: east",
      "  tls { cert_file: /etc/a.crt, key_file: /etc/a.key }",
      "}",
    ].join("\n"));
    const { report } = await audit(env);
    assert.equal(level(report, "nats.server-conf.no-auth-user"), "critical");
    assert.equal(level(report, "nats.server-conf.cluster-without-tls"), "critical", "no TLS and no authorization");
    assert.equal(level(report, "nats.server-conf.leafnodes-without-tls"), "warning");
    assert.equal(byId(report, "nats.server-conf.gateway-without-tls"), undefined);
    assert.equal(byId(report, "nats.conf.drift"), undefined, "setup's nats.conf is the contract's");
  });

  it("usage and configuration errors: 64 and 78, each saying what to do", async () => {
    const { home, env } = await freshHome();
    const none = await runCli(["security"], env);
    assert.equal(none.code, 64);
    assert.match(none.stderr, /needs audit/);
    const other = await runCli(["security", "scan"], env);
    assert.equal(other.code, 64);
    assert.match(other.stderr, /unknown subcommand "scan": lurkbot security audit/);
    assert.equal((await runCli(["security", "audit", "--deeep"], env)).code, 64);
    writeFileSync(join(home, "config.json"), "{ not json", { mode: 0o600 });
    const bad = await runCli(["security", "audit"], env);
    assert.equal(bad.code, 78);
    assert.match(bad.stderr, /config\.json.*Fix the file or move it away/);
    const help = await runCli(["help"], env);
    assert.match(help.stdout, /\n  security audit +what in this setup is exposed or unsafe/);
  });
});

/** A nats-server started from `conf` (the test's own, possibly wrong, nats.conf) with this home's passwords. */
async function startServer(dir: string, conf: string, credentials: ReturnType<typeof ensureCredentials>): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const confPath = join(dir, "nats.conf");
  writeFileSync(confPath, conf, { mode: 0o600 });
  const child = spawn(natsServerBinary(), ["-c", confPath], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...natsServerEnv({ host: "127.0.0.1", port, storeDir: join(dir, "store"), confPath, credentials }) },
    stdio: "ignore",
  });
  await waitFor(() => portAnswers("127.0.0.1", port), 10_000, "the test's nats-server");
  return { child, url: `nats://127.0.0.1:${port}` };
}

describe("lurkbot security audit --deep", () => {
  let nats: TestNats;
  let tools: ActorProcess | undefined;
  before(async () => {
    nats = await TestNats.start({ streams: false });
  });
  after(async () => {
    await tools?.stop();
    await nats?.stop();
  });

  it("against a running system: the actors and their versions, an old unsandboxed instance, anonymous access refused, permissions as the contract says", async () => {
    tools = await startActorProcess("tools", nats);
    // a second "host" still running an old tools actor without a sandbox
    const old = await nats.connect("tools");
    const service = await new Svcm(old).add({ name: "tools", version: "0.0.1", description: "old tools", metadata: { host: "old-host", pid: "4242", sandbox: "none" } });
    try {
      const { run, report } = await audit(nats.env(), "--deep");
      assert.equal(report.deep, true);
      const actors = byId(report, "deep.actors")!;
      assert.equal(actors.level, "info");
      assert.match(actors.detail, /tools@[^ ]+:\d+ \d+\.\d+\.\d+/);
      assert.match(actors.detail, /tools@old-host:4242 0\.0\.1/);
      assert.equal(level(report, "deep.actors.version-mismatch"), "warning");
      assert.match(byId(report, "deep.actors.version-mismatch")!.detail, /tools@old-host:4242 is 0\.0\.1/);
      assert.equal(level(report, "deep.tools.unsandboxed"), "critical");
      assert.match(byId(report, "deep.tools.unsandboxed")!.detail, /old-host/);
      assert.equal(byId(report, "deep.nats.anonymous-access"), undefined, "the generated nats.conf refuses anonymous clients");
      assert.equal(byId(report, "deep.nats.anonymous-unknown"), undefined);
      assert.equal(byId(report, "deep.nats.cli-permissions-too-wide"), undefined);
      assert.equal(byId(report, "deep.bus-unreachable"), undefined);
      assert.equal(run.code, 1);
      assertNoSecret(run, ...Object.values(nats.credentials.users));
    } finally {
      await service.stop();
      await old.close();
    }
    const { run } = await audit(nats.env(), "--deep");
    assert.equal(run.code, 0, "without the old instance nothing is critical");
  });

  it("a wrong nats.conf: anonymous clients let in and the cli user allowed everything are critical", async () => {
    const dir = auditTempDir("lurk-audit-nats-");
    const home = join(dir, "home");
    const credentials = ensureCredentials(join(home, "credentials", "nats.json"));
    const good = renderNatsConf();
    const cliStart = good.indexOf("{ user: \"cli\"");
    const publishAt = good.indexOf("publish: { allow: [", cliStart);
    const subscribeAt = good.indexOf("subscribe: { allow: [", cliStart);
    // the cli user may publish and subscribe to everything, and clients without credentials become cli
    const wrong = "no_auth_user: cli\n" + good.slice(0, publishAt) + "publish: { allow: [\">\"] }\n        subscribe: { allow: [\">\"] }" + good.slice(good.indexOf("\n", subscribeAt));
    assert.notEqual(wrong, good);
    // the same file where setup keeps it: the static check sees the drift too
    mkdirSync(join(home, "nats"), { recursive: true, mode: 0o700 });
    writeFileSync(join(home, "nats", "nats.conf"), wrong, { mode: 0o600 });
    const server = await startServer(dir, wrong, credentials);
    try {
      const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", LURKBOT_HOME: home, LURKBOT_NATS_URL: server.url };
      const { run, report } = await audit(env, "--deep");
      assert.equal(level(report, "deep.nats.anonymous-access"), "critical");
      const perms = byId(report, "deep.nats.cli-permissions-too-wide")!;
      assert.equal(perms.level, "critical");
      assert.match(perms.detail, /subscribe _INBOX_router\.audit/);
      assert.match(perms.detail, /subscribe \$KV\.lurk_auth\.audit/);
      assert.match(perms.detail, /publish lurk\.evt\.router\.audit-probe/);
      assert.equal(level(report, "nats.conf.drift"), "warning");
      assert.equal(run.code, 1);
      assertNoSecret(run, ...Object.values(credentials.users));
    } finally {
      server.child.kill("SIGKILL");
    }
  });

  it("with the bus down: the config's findings, a warning that the running system was not checked, exit 2", async () => {
    const { home, env } = await freshHome();
    const { run, report } = await audit(env, "--deep");
    assert.equal(level(report, "deep.bus-unreachable"), "warning");
    assert.match(byId(report, "deep.bus-unreachable")!.detail, /cannot reach NATS/);
    assert.equal(run.code, 2);
    // a small model answering Telegram groups with tools: an info, from the config alone
    writeConfig(home, { model: "ollama/llama3.1:8b", channels: { telegram: { enabled: true } }, routing: { dm: { policy: "disabled" }, groups: { policy: "allowlist", allowFrom: ["telegram:-1001"], requireMention: true } } });
    const small = await audit({ ...env, TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN }, "--deep");
    assert.equal(level(small.report, "deep.model.small-for-untrusted"), "info");
    assert.match(byId(small.report, "deep.model.small-for-untrusted")!.detail, /agent main: ollama\/llama3\.1:8b \(8B parameters\) on telegram groups/);
    assert.equal(small.run.code, 2);
  });
});
