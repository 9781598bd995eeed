/**
 * `lurkbot start` as a real process: it starts its own nats-server on a free port and every
 * actor (`status --json` lists them), gives each child only its own NATS password, restarts a
 * killed actor, answers `send` with the "configure a model" reply when no model is set, and on
 * SIGTERM exits 0 leaving no child behind. `--single-process` hosts every actor in the launcher
 * (one pid, still one NATS user each) and stops as cleanly.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connect } from "@nats-io/transport-node";
import { passwordEnvName } from "../shared/contract/index.js";
import { actorMainPath } from "../shared/scripts/paths.js";
import { actorModulePath, LAUNCHER_ACTORS, launcherActors } from "../services/cli/actors.js";
import { CLI_MAIN, runCli } from "./harness/cli.js";
import { waitFor } from "./harness/actors.js";
import { freePort } from "./harness/nats.js";
import { REPO_ROOT } from "../shared/scripts/paths.js";



const unbuilt = LAUNCHER_ACTORS.filter((a) => !existsSync(actorMainPath(a)) || !existsSync(actorModulePath(a)));
const built = LAUNCHER_ACTORS.filter((a) => !unbuilt.includes(a));
/** while an actor is still being written, run the launcher with the ones that exist */
const onlyArgs = unbuilt.length ? ["--only", built.join(",")] : [];
const canChat = ["router", "agent-runner", "sessions"].every((a) => built.includes(a as (typeof built)[number]));
/** what the launcher runs here: without --only, not the mcp actor (no MCP server is configured) */
const started = onlyArgs.length ? built : built.filter((a) => launcherActors().includes(a));

interface Instance {
  name: string;
  pid: number | null;
  host: string | null;
  version: string;
  sandbox: string | null;
}

/** Alive and not a zombie. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true;
  }
}

class LauncherUnderTest {
  readonly child: ChildProcess;
  private out = "";
  private err = "";
  readonly exited: Promise<number | null>;

  constructor(readonly home: string, readonly env: Record<string, string>, args: string[]) {
    this.child = spawn(process.execPath, [CLI_MAIN, "start", ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    this.child.stdout!.on("data", (d: Buffer) => (this.out += d.toString()));
    this.child.stderr!.on("data", (d: Buffer) => (this.err += d.toString()));
    this.exited = new Promise((resolve) => this.child.once("exit", (code) => resolve(code)));
  }

  /** Starts a launcher on a fresh home and port (with `config` as its config.json), or on those of `previous`. */
  static async start(args: string[] = [], previous?: LauncherUnderTest, config?: object): Promise<LauncherUnderTest> {
    const home = previous?.home ?? mkdtempSync(join(tmpdir(), "lurk-launch-"));
    if (config && !previous) writeFileSync(join(home, "config.json"), JSON.stringify(config));
    const env: Record<string, string> = previous?.env ?? {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      LURKBOT_HOME: home,
      LURKBOT_NATS_URL: `nats://127.0.0.1:${await freePort()}`,
      LURKBOT_LOG_LEVEL: "info",
      // a secret of the operator's shell that no actor needs
      GITHUB_TOKEN: "ghp-not-for-actors",
    };
    const launcher = new LauncherUnderTest(home, env, [...args, ...onlyArgs]);
    await waitFor(() => {
      if (launcher.child.exitCode !== null) throw new Error(`the launcher exited with ${launcher.child.exitCode}:\n${launcher.output}`);
      return launcher.stdout.includes("LurkBot is running");
    }, 90_000, "the launcher to start everything").catch((err) => {
      launcher.child.kill("SIGKILL");
      throw new Error(`${(err as Error).message}\n${launcher.output}`);
    });
    return launcher;
  }

  get stdout(): string {
    return this.out;
  }

  get output(): string {
    return `--- stdout\n${this.out}--- stderr\n${this.err}`;
  }

  /** pids printed as "<name> ready|restarted (pid N)" and "nats-server ready on ... (pid N)" */
  printedPids(): number[] {
    return [...this.out.matchAll(/\(pid (\d+)\)/g)].map((m) => Number(m[1]));
  }

  natsPid(): number {
    const m = /nats-server ready on \S+ \(pid (\d+)\)/.exec(this.out);
    assert.ok(m, this.output);
    return Number(m[1]);
  }

  async status(): Promise<Instance[]> {
    const r = await runCli(["status", "--json"], this.env);
    assert.equal(r.code, 0, `${r.stderr}\n${this.output}`);
    return (JSON.parse(r.stdout) as { instances: Instance[] }).instances;
  }

  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGTERM");
    return this.exited;
  }

  async cleanup(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill("SIGTERM");
      const timer = setTimeout(() => this.child.kill("SIGKILL"), 15_000);
      await this.exited;
      clearTimeout(timer);
    }
    rmSync(this.home, { recursive: true, force: true });
  }
}

describe("lurkbot start", () => {
  it("every actor of the launcher is built", () => {
    assert.deepEqual(unbuilt, [], `not built yet: ${unbuilt.join(", ")} (the launcher tests below run with ${built.join(", ")})`);
  });

  describe("one process per actor", () => {
    let launcher: LauncherUnderTest;
    before(async () => {
      launcher = await LauncherUnderTest.start();
    });
    after(async () => {
      await launcher?.cleanup();
    });

    it("starts its own nats-server and every actor (the mcp actor only with an MCP server); status lists them", async () => {
      assert.match(launcher.stdout, /^nats-server ready on 127\.0\.0\.1:\d+ \(pid \d+\)$/m);
      assert.ok(alive(launcher.natsPid()));
      for (const name of started) assert.match(launcher.stdout, new RegExp(`^${name} ready \\(pid \\d+\\)$`, "m"));
      if (!onlyArgs.length) assert.doesNotMatch(launcher.stdout, /^mcp ready/m, "no MCP server is configured: no mcp actor");
      const instances = await waitFor(async () => {
        const list = await launcher.status();
        return started.every((name) => list.some((i) => i.name === name)) ? list : null;
      }, 30_000, "every actor in status");
      assert.ok(onlyArgs.length || !instances.some((i) => i.name === "mcp"));
      assert.doesNotMatch((await runCli(["status"], launcher.env)).stdout, /not running/, "status does not expect the mcp actor");
      const pids = new Set(instances.map((i) => i.pid));
      assert.equal(pids.size, instances.length, "one process per actor");
      assert.ok(!pids.has(launcher.child.pid!), "actors are not in the launcher's process");
      for (const i of instances) assert.ok(i.pid !== null && alive(i.pid), `${i.name} pid ${i.pid} is alive`);
      // the exec sandbox mode in force is part of status (bubblewrap is installed here and in CI)
      assert.equal(instances.find((i) => i.name === "tools")?.sandbox, "bwrap");
      const table = await runCli(["status"], launcher.env);
      assert.match(table.stdout, /exec sandbox of tools@.*: bubblewrap/);
    });

    it("gives each actor only its own NATS password and no unneeded secret", { skip: !existsSync("/proc/self/environ") && "needs /proc" }, async () => {
      for (const i of await launcher.status()) {
        const environ = readFileSync(`/proc/${i.pid}/environ`, "utf8").split("\0");
        const passwords = environ.filter((kv) => kv.startsWith("LURKBOT_NATS_PASS_")).map((kv) => kv.slice(0, kv.indexOf("=")));
        assert.deepEqual(passwords, [passwordEnvName(i.name)], i.name);
        assert.ok(!environ.some((kv) => kv.startsWith("GITHUB_TOKEN=")), `${i.name} has no GITHUB_TOKEN`);
      }
    });

    it("restarts an actor that is SIGKILLed: a new pid appears in status", async () => {
      const victim = built.includes("sessions") ? "sessions" : built[0]!;
      const before = (await launcher.status()).find((i) => i.name === victim);
      assert.ok(before?.pid, `${victim} is listed`);
      process.kill(before.pid, "SIGKILL");
      const after = await waitFor(async () => {
        const list = (await launcher.status()).filter((i) => i.name === victim);
        return list.length === 1 && list[0]!.pid !== before.pid ? list[0] : null;
      }, 30_000, `${victim} to come back with a new pid`);
      assert.ok(after.pid && alive(after.pid));
      assert.ok(!alive(before.pid));
      assert.match(launcher.stdout, new RegExp(`^${victim} restarted \\(pid ${after.pid}\\)$`, "m"));
    });

    it("a message sent while no model is configured gets the clear 'configure a model' reply", { skip: !canChat && "needs the router, sessions and agent-runner actors, which are not built yet" }, async () => {
      const r = await runCli(["send", "hello", "--json", "--timeout", "60"], launcher.env, { timeoutMs: 90_000 });
      assert.ok(r.stdout.trim(), `no reply: ${r.stderr}\n${launcher.output}`);
      const reply = JSON.parse(r.stdout) as { reply: string; kind: string; runId: string };
      assert.match(reply.reply, /model/i);
      assert.match(reply.reply, /LURKBOT_MODEL|configure/i, reply.reply);
      assert.equal(r.code, reply.kind === "error" ? 1 : 0);
      assert.match(reply.runId, /^run-/);
    });

    it("SIGTERM: exits 0 and leaves none of its children (actors, nats-server) alive", async () => {
      const pids = new Set([...launcher.printedPids(), ...(await launcher.status()).map((i) => i.pid!)]);
      assert.ok(pids.size >= started.length + 1);
      const code = await launcher.stop();
      assert.equal(code, 0, launcher.output);
      assert.match(launcher.stdout, /nats-server stopped/);
      for (const pid of pids) assert.ok(!alive(pid), `pid ${pid} is gone`);
      const down = await runCli(["status"], launcher.env);
      assert.equal(down.code, 2);
    });
  });

  describe("--single-process", () => {
    let launcher: LauncherUnderTest;
    before(async () => {
      launcher = await LauncherUnderTest.start(["--single-process"]);
    });
    after(async () => {
      await launcher?.cleanup();
    });

    it("hosts every actor in the launcher's process, each as its own service", async () => {
      const instances = await waitFor(async () => {
        const list = await launcher.status();
        return started.every((name) => list.some((i) => i.name === name)) ? list : null;
      }, 30_000, "every actor in status");
      assert.deepEqual([...new Set(instances.map((i) => i.pid))], [launcher.child.pid]);
      assert.deepEqual(instances.map((i) => i.name).sort(), [...started].sort());
    });

    it("after a SIGKILLed launcher, the next start stops the nats-server it left; a second launcher of the same home is refused", async () => {
      const first = launcher;
      const oldNats = first.natsPid();
      first.child.kill("SIGKILL");
      await first.exited;
      assert.ok(alive(oldNats), "a killed launcher cannot stop its nats-server");
      launcher = await LauncherUnderTest.start(["--single-process"], first);
      assert.ok(launcher.stdout.includes(`stopping the nats-server (pid ${oldNats}) an earlier launcher`), launcher.output);
      assert.ok(!alive(oldNats));
      assert.notEqual(launcher.natsPid(), oldNats);
      const second = await runCli(["start", "--single-process", ...onlyArgs], launcher.env, { timeoutMs: 30_000 });
      assert.equal(second.code, 1);
      assert.match(second.stderr, new RegExp(`LurkBot is already running from .* \\(launcher pid ${launcher.child.pid}\\)`));
      assert.ok(alive(launcher.natsPid()), "the refused launcher touched nothing");
    });

    it("SIGTERM: stops the actors and its nats-server, exit 0", async () => {
      const nats = launcher.natsPid();
      const code = await launcher.stop();
      assert.equal(code, 0, launcher.output);
      assert.ok(!alive(nats), "nats-server is gone");
      for (const name of started) assert.match(launcher.stdout, new RegExp(`^${name} stopped$`, "m"));
    });
  });

  describe("log rotation", () => {
    let launcher: LauncherUnderTest;
    before(async () => {
      launcher = await LauncherUnderTest.start(["--only", "sessions"], undefined, { log: { maxFileMb: 0.01, keepFiles: 2, checkEverySec: 1 } });
    });
    after(async () => {
      await launcher?.cleanup();
    });

    it("rotates a log over log.maxFileMb while its writer runs; the writer goes on in the emptied file", async () => {
      const logs = join(launcher.home, "logs");
      const padding = "PADDING ".repeat(2_000) + "\n"; // 16 KB, over the 0.01 MB limit
      for (const name of ["sessions.log", "nats-server.log"]) appendFileSync(join(logs, name), padding);
      await waitFor(() => ["sessions.log", "nats-server.log"].every((n) => existsSync(join(logs, `${n}.1`))), 15_000, "both logs rotated");
      for (const name of ["sessions.log", "nats-server.log"]) {
        assert.ok(readFileSync(join(logs, `${name}.1`), "utf8").includes(padding), `${name}.1 holds what the log held`);
        assert.ok(statSync(join(logs, name)).size < padding.length, `${name} was emptied`);
      }
      // the launcher prints the line after the copy and the truncate: the files can be seen first
      await waitFor(() => /rotated .*sessions\.log \(over 0\.01 MB; 2 older copies kept\)/.test(launcher.stdout), 5_000, "the launcher's line for sessions.log");
      // nats-server still writes through the file it opened at start: a refused login is logged
      // at the start of the emptied file (an append-mode writer), not past its old end
      const port = new URL(launcher.env.LURKBOT_NATS_URL!).port;
      await assert.rejects(connect({ servers: `127.0.0.1:${port}`, user: "sessions", pass: "not-the-password", reconnect: false }));
      const text = await waitFor(() => {
        const t = readFileSync(join(logs, "nats-server.log"), "utf8");
        return /authoriz|authenticat/i.test(t) ? t : null;
      }, 10_000, "nats-server to log the refused login");
      assert.ok(!text.includes("\0") && !text.includes("PADDING"), "the line is at the start of the emptied file");
      assert.equal(await launcher.stop(), 0, launcher.output);
    });
  });
});
