/**
 * `lurkbot daemon` as a real process against fake `systemctl`, `loginctl`, `journalctl` and
 * `launchctl` executables (shell scripts on PATH that record their argv and answer as the real
 * ones do): the unit and plist written, the commands and their order, uninstall, status parsing,
 * the missing systemd user instance, --dry-run. The status test has a real bus to answer.
 */
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { parseSystemdShow } from "../services/cli/daemon-systemd.js";
import { parseLaunchctlPrint } from "../services/cli/daemon-launchd.js";
import { CLI_MAIN, runCli } from "./harness/cli.js";
import { startActorProcess, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";

const USER = userInfo().username;
const UID = process.getuid!();

/** a fake tool: appends "<name> <args>" to $FAKE_LOG (and a line if it was given a secret), then runs `body` (sh) */
function fake(dir: string, name: string, body: string): void {
  const path = join(dir, name);
  const secret = `if [ -n "$OPENAI_API_KEY$LURKBOT_NATS_PASS_CLI" ]; then echo "${name} was given a secret" >> "$FAKE_LOG"; fi`;
  writeFileSync(path, `#!/bin/sh\necho "${name} $*" >> "$FAKE_LOG"\n${secret}\n${body}\nexit 0\n`);
  chmodSync(path, 0o755);
}

const SYSTEMCTL = `
if [ -n "$FAKE_SYSTEMD_DOWN" ]; then echo "Failed to connect to bus: No medium found" >&2; exit 1; fi
case "$2" in
  show-environment) echo "HOME=$HOME" ;;
  show) if [ -f "$FAKE_SHOW" ]; then cat "$FAKE_SHOW"; else printf 'LoadState=not-found\\nActiveState=inactive\\nSubState=dead\\nMainPID=0\\n'; fi ;;
esac`;
const LOGINCTL = `if [ -n "$FAKE_LINGER_FAIL" ]; then echo "Could not enable linger: Access denied" >&2; exit 1; fi`;
const JOURNALCTL = `echo "2026-11-27T10:00:00+0000 host node[4242]: LurkBot is running: try \\\`npx lurkbot chat\\\`"; echo "2026-11-27T10:00:01+0000 host node[4242]: router ready"`;
const LAUNCHCTL = `
case "$1" in
  print) if [ -n "$FAKE_LAUNCHD_LOADED" ]; then printf 'gui/501/bot.lurk.gateway = {\\n\\tstate = running\\n\\truns = 3\\n\\tpid = 777\\n\\tlast exit code = 0\\n}\\n'; else echo "Could not find service" >&2; exit 113; fi ;;
  bootout) if [ -z "$FAKE_LAUNCHD_LOADED" ]; then echo "Boot-out failed: 3: No such process" >&2; exit 3; fi ;;
esac`;

describe("lurkbot daemon (systemd user unit, fake systemctl/loginctl/journalctl)", () => {
  let dir: string;
  let bin: string;
  let log: string;
  let base: Record<string, string>;
  const unitPath = () => join(dir, "home", ".config", "systemd", "user", "lurkbot.service");
  const calls = () => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter(Boolean) : []);

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "lurk-daemon-"));
    bin = join(dir, "bin");
    mkdirSync(bin);
    fake(bin, "systemctl", SYSTEMCTL);
    fake(bin, "loginctl", LOGINCTL);
    fake(bin, "journalctl", JOURNALCTL);
    fake(bin, "launchctl", LAUNCHCTL);
    log = join(dir, "calls.log");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(() => {
    rmSync(log, { force: true });
    rmSync(join(dir, "home"), { recursive: true, force: true });
    mkdirSync(join(dir, "home"));
    base = {
      PATH: `${bin}:${process.env.PATH}`,
      HOME: join(dir, "home"),
      LURKBOT_HOME: join(dir, "home", ".lurkbot"),
      LURKBOT_DAEMON_PLATFORM: "linux",
      FAKE_LOG: log,
      // a secret in the installing shell must not reach the unit
      OPENAI_API_KEY: "sk-daemon-secret-0123456789",
    };
  });

  it("install: writes ~/.config/systemd/user/lurkbot.service, reloads, enables --now, enables lingering, in that order", async () => {
    const r = await runCli(["daemon", "install"], base);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(calls(), [
      "systemctl --user show-environment",
      "systemctl --user daemon-reload",
      "systemctl --user enable --now lurkbot.service",
      `loginctl enable-linger ${USER}`,
    ]);
    const unit = readFileSync(unitPath(), "utf8");
    assert.ok(unit.includes(`ExecStart="${process.execPath}" "${CLI_MAIN}" start\n`), unit);
    assert.ok(unit.includes(`Environment="LURKBOT_HOME=${join(dir, "home", ".lurkbot")}"\n`));
    assert.ok(unit.includes(`Environment="PATH=${bin}:`), "the installing shell's PATH (nats-server is found as in the terminal)");
    assert.match(unit, /^WorkingDirectory="\/.+"$/m);
    assert.match(unit, /^Restart=on-failure$/m);
    assert.match(unit, /^RestartPreventExitStatus=78$/m);
    assert.match(unit, /^KillMode=mixed$/m);
    assert.match(unit, /^\[Install\]\nWantedBy=default\.target$/m);
    assert.ok(!unit.includes("sk-daemon-secret"), "no secret in the unit");
    assert.equal(statSync(unitPath()).mode & 0o777, 0o644);
    assert.match(r.stdout, /lingering on for /);
    assert.match(r.stdout, /installed lurkbot\.service \(systemd\)/);

    // the same unit again: no restart; a changed one (another LURKBOT_HOME) restarts the service
    rmSync(log);
    assert.equal((await runCli(["daemon", "install"], base)).code, 0);
    assert.ok(!calls().some((c) => c.includes("restart")), calls().join("\n"));
    rmSync(log);
    const moved = await runCli(["daemon", "install"], { ...base, LURKBOT_HOME: join(dir, "home", "other") });
    assert.equal(moved.code, 0, moved.stderr);
    assert.deepEqual(calls().slice(1, 4), ["systemctl --user daemon-reload", "systemctl --user enable --now lurkbot.service", "systemctl --user restart lurkbot.service"]);
    assert.match(moved.stdout, /^updated .*lurkbot\.service$/m);
  });

  it("install: lingering refused is a warning that the service stops at logout (exit 0)", async () => {
    const r = await runCli(["daemon", "install"], { ...base, FAKE_LINGER_FAIL: "1" });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /could not enable lingering for .*Access denied.*the service stops when you log out/);
    assert.match(r.stderr, /sudo loginctl enable-linger /);
    assert.ok(existsSync(unitPath()));
  });

  it("no systemd user instance (a container): exit 1 saying what to do, nothing written", async () => {
    const down = await runCli(["daemon", "install"], { ...base, FAKE_SYSTEMD_DOWN: "1" });
    assert.equal(down.code, 1);
    assert.match(down.stderr, /systemctl --user is not available here: run `npx lurkbot start` under your own supervisor or use `lurkbot setup --systemd/);
    assert.match(down.stderr, /Failed to connect to bus: No medium found/);
    assert.deepEqual(calls(), ["systemctl --user show-environment"]);
    assert.ok(!existsSync(unitPath()));

    // no systemctl at all (LURKBOT_DAEMON_SYSTEMCTL, a test-only override, names a missing binary)
    const missing = await runCli(["daemon", "start"], { ...base, LURKBOT_DAEMON_UNIT_DIR: join(dir, "units"), LURKBOT_DAEMON_SYSTEMCTL: join(dir, "no-such-systemctl") });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /not installed \(no .*units\/lurkbot\.service\): run `lurkbot daemon install` first/);
    mkdirSync(join(dir, "units"), { recursive: true });
    writeFileSync(join(dir, "units", "lurkbot.service"), "[Unit]\n");
    const noBinary = await runCli(["daemon", "start"], { ...base, LURKBOT_DAEMON_UNIT_DIR: join(dir, "units"), LURKBOT_DAEMON_SYSTEMCTL: join(dir, "no-such-systemctl") });
    assert.equal(noBinary.code, 1);
    assert.match(noBinary.stderr, /systemctl --user is not available here.*show-environment: not installed/);
  });

  it("--dry-run prints the unit and the commands, and writes and runs nothing", async () => {
    const r = await runCli(["daemon", "install", "--dry-run"], base);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(calls(), [], "nothing ran");
    assert.ok(!existsSync(unitPath()), "nothing written");
    const lines = r.stdout.split("\n");
    assert.equal(lines[0], "would run: systemctl --user show-environment");
    assert.equal(lines[1], `would write ${unitPath()}:`);
    assert.ok(r.stdout.includes(`ExecStart="${process.execPath}" "${CLI_MAIN}" start`));
    assert.deepEqual(lines.filter((l) => l.startsWith("would run: ")).slice(1), [
      "would run: systemctl --user daemon-reload",
      "would run: systemctl --user enable --now lurkbot.service",
      `would run: loginctl enable-linger ${USER}`,
    ]);
    const un = await runCli(["daemon", "uninstall", "--dry-run"], base);
    assert.equal(un.code, 0, un.stderr);
    assert.match(un.stdout, /would run: systemctl --user disable --now lurkbot\.service\nwould remove .*lurkbot\.service\nwould run: systemctl --user daemon-reload/);
    assert.deepEqual(calls(), []);
  });

  it("uninstall: disables and stops it, removes the unit, reloads; again: nothing to do", async () => {
    assert.equal((await runCli(["daemon", "install"], base)).code, 0);
    rmSync(log);
    const r = await runCli(["daemon", "uninstall"], base);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(calls(), ["systemctl --user show-environment", "systemctl --user disable --now lurkbot.service", "systemctl --user daemon-reload"]);
    assert.ok(!existsSync(unitPath()));
    assert.match(r.stdout, /stopped, disabled and removed /);
    rmSync(log);
    const again = await runCli(["daemon", "uninstall"], base);
    assert.equal(again.code, 0);
    assert.match(again.stdout, /nothing to uninstall: no /);
    assert.deepEqual(calls(), []);
  });

  it("start, stop, restart go through systemctl --user", async () => {
    assert.equal((await runCli(["daemon", "install"], base)).code, 0);
    for (const sub of ["stop", "start", "restart"]) {
      rmSync(log);
      const r = await runCli(["daemon", sub], base);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(calls(), ["systemctl --user show-environment", `systemctl --user ${sub} lurkbot.service`]);
    }
    const bad = await runCli(["daemon", "frob"], base);
    assert.equal(bad.code, 64);
    assert.match(bad.stderr, /unknown subcommand "frob": lurkbot daemon install\|uninstall\|start\|stop\|restart\|status/);
  });

  describe("status, with a bus that answers", () => {
    let nats: TestNats;
    let sessions: ActorProcess;
    before(async () => {
      nats = await TestNats.start();
      sessions = await startActorProcess("sessions", nats);
    });
    after(async () => {
      await sessions?.stop();
      await nats?.stop();
    });

    it("shows the active state, main pid, since when, restarts, the journal's last lines and the bus", async () => {
      assert.equal((await runCli(["daemon", "install"], base)).code, 0);
      const show = join(dir, "show.txt");
      writeFileSync(show, "LoadState=loaded\nActiveState=active\nSubState=running\nMainPID=4242\nActiveEnterTimestamp=Thu 2026-11-26 10:00:00 UTC\nExecMainStatus=0\nNRestarts=2\nUnitFileState=enabled\n");
      const env = { ...nats.env(nats.passwordEnv("cli")), ...base, LURKBOT_HOME: nats.home, FAKE_SHOW: show };
      rmSync(log);
      const r = await runCli(["daemon", "status"], env);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^service {3}lurkbot\.service \(systemd user unit, \/.*\/lurkbot\.service\)$/m);
      assert.match(r.stdout, /^state {5}running — active \(running\), enabled$/m);
      assert.match(r.stdout, /^pid {7}4242$/m);
      assert.match(r.stdout, /^since {5}2026-11-26 10:00:00 UTC$/m);
      assert.match(r.stdout, /^restarts {2}2$/m);
      assert.match(r.stdout, /^bus {7}answers at nats:\/\/127\.0\.0\.1:\d+ \(1 actor instance\)$/m);
      assert.match(r.stdout, /^last log lines \(journalctl --user -u lurkbot -n 20\):\n {2}2026-11-27T10:00:00\+0000 host node\[4242\]: LurkBot is running/m);
      assert.deepEqual(calls(), [
        "systemctl --user show lurkbot.service --property=LoadState,ActiveState,SubState,MainPID,ActiveEnterTimestamp,ExecMainStatus,NRestarts,UnitFileState",
        "journalctl --user -u lurkbot -n 20 --no-pager -o short-iso",
      ]);

      const json = await runCli(["daemon", "status", "--json"], env);
      const parsed = JSON.parse(json.stdout) as { service: { installed: boolean }; runtime: { status: string; pid: number; since: number }; bus: { answers: boolean } };
      assert.deepEqual([parsed.service.installed, parsed.runtime.status, parsed.runtime.pid, parsed.runtime.since, parsed.bus.answers], [true, "running", 4242, Date.parse("2026-11-26T10:00:00Z"), true]);
    });

    it("a stopped service: exit 1, its last exit status; the bus down is said", async () => {
      const show = join(dir, "show-failed.txt");
      writeFileSync(show, "LoadState=loaded\nActiveState=failed\nSubState=failed\nMainPID=0\nActiveEnterTimestamp=\nExecMainStatus=78\nNRestarts=0\nUnitFileState=enabled\n");
      const r = await runCli(["daemon", "status"], { ...base, FAKE_SHOW: show, LURKBOT_NATS_URL: "nats://127.0.0.1:1", LURKBOT_NATS_PASS_CLI: "x" });
      assert.equal(r.code, 1);
      assert.match(r.stdout, /^state {5}not installed — failed \(failed\), enabled$/m, "no unit file here");
      assert.match(r.stdout, /^last exit 78$/m);
      assert.doesNotMatch(r.stdout, /^pid/m);
      assert.match(r.stdout, /^bus {7}no answer at nats:\/\/127\.0\.0\.1:1: cannot reach NATS/m);
    });
  });

  it("parses systemctl show output, including what an older systemd prints", () => {
    assert.deepEqual(parseSystemdShow("LoadState=loaded\nActiveState=activating\nSubState=auto-restart\nMainPID=0\nActiveEnterTimestamp=Thu 2026-11-26 11:00:00 CET\nNRestarts=5\n"), {
      status: "stopped", state: "activating (auto-restart)", sinceText: "Thu 2026-11-26 11:00:00 CET", restarts: 5,
    });
    assert.equal(parseSystemdShow("LoadState=not-found\nActiveState=inactive\n").status, "not installed");
  });
});

describe("lurkbot daemon on macOS (launchd; fake launchctl, LURKBOT_DAEMON_PLATFORM=darwin)", () => {
  let dir: string;
  let log: string;
  let env: Record<string, string>;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "lurk-launchd-"));
    const bin = join(dir, "bin");
    mkdirSync(bin);
    fake(bin, "launchctl", LAUNCHCTL);
    log = join(dir, "calls.log");
    mkdirSync(join(dir, "home"));
    env = { PATH: `${bin}:${process.env.PATH}`, HOME: join(dir, "home"), LURKBOT_HOME: join(dir, "home", ".lurkbot"), LURKBOT_DAEMON_PLATFORM: "darwin", FAKE_LOG: log };
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const calls = () => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter(Boolean) : []);

  it("install writes bot.lurk.gateway.plist and bootstraps it into gui/<uid>; uninstall boots it out and removes it", async () => {
    const r = await runCli(["daemon", "install"], env);
    assert.equal(r.code, 0, r.stderr);
    const plistPath = join(dir, "home", "Library", "LaunchAgents", "bot.lurk.gateway.plist");
    const plist = readFileSync(plistPath, "utf8");
    assert.match(plist, /<key>Label<\/key><string>bot\.lurk\.gateway<\/string>/);
    assert.ok(plist.includes(`<array>\n    <string>${process.execPath}</string>\n    <string>${CLI_MAIN}</string>\n    <string>start</string>\n  </array>`), plist);
    assert.ok(plist.includes(`<key>LURKBOT_HOME</key><string>${join(dir, "home", ".lurkbot")}</string>`));
    assert.match(plist, /<key>KeepAlive<\/key>\n {2}<dict>\n {4}<key>SuccessfulExit<\/key><false\/>/);
    assert.ok(plist.includes(`<key>StandardErrorPath</key><string>${join(dir, "home", ".lurkbot", "logs", "launchd.err.log")}</string>`));
    assert.deepEqual(calls(), [
      `launchctl bootout gui/${UID}/bot.lurk.gateway`,
      `launchctl bootstrap gui/${UID} ${plistPath}`,
      `launchctl enable gui/${UID}/bot.lurk.gateway`,
    ]);

    rmSync(log);
    const status = await runCli(["daemon", "status"], { ...env, FAKE_LAUNCHD_LOADED: "1", LURKBOT_NATS_URL: "nats://127.0.0.1:1", LURKBOT_NATS_PASS_CLI: "x" });
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^state {5}running — running$/m);
    assert.match(status.stdout, /^pid {7}777$/m);
    assert.deepEqual(calls(), [`launchctl print gui/${UID}/bot.lurk.gateway`]);

    rmSync(log);
    const restart = await runCli(["daemon", "restart"], env);
    assert.equal(restart.code, 0, restart.stderr);
    assert.deepEqual(calls(), [`launchctl kickstart -k gui/${UID}/bot.lurk.gateway`]);

    rmSync(log);
    const un = await runCli(["daemon", "uninstall"], { ...env, FAKE_LAUNCHD_LOADED: "1" });
    assert.equal(un.code, 0, un.stderr);
    assert.deepEqual(calls(), [`launchctl bootout gui/${UID}/bot.lurk.gateway`]);
    assert.ok(!existsSync(plistPath));
  });

  it("parses launchctl print", () => {
    assert.deepEqual(parseLaunchctlPrint("gui/501/bot.lurk.gateway = {\n\tstate = not running\n\truns = 1\n\tlast exit code = 1\n}\n"), { status: "stopped", state: "not running", lastExitStatus: 1, restarts: 0 });
  });
});
