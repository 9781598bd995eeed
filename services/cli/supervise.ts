/**
 * Supervised child processes of the launcher: an actor (`fork` with an IPC channel, stdout and
 * stderr appended to its log file) restarted with backoff when it dies, and the local
 * nats-server, restarted the same way. Both live in their own process group so a terminal's
 * Ctrl-C reaches only the launcher, which stops them in order.
 */
import { fork, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { ACTOR_ENV, ACTOR_NODE_FLAGS } from "../../shared/runtime/memory.js";
import { spawnNatsServer, type NatsServerSpec } from "../../shared/runtime/nats-server.js";
import { actorMainPath } from "../../shared/scripts/paths.js";
import { Backoff, formatDuration } from "./backoff.js";
import { CliError, EXIT } from "./errors.js";

export interface Reporter {
  say(line: string): void;
  warn(line: string): void;
}

export const STOP_GRACE_MS = 10_000;
/** time an actor gets to send "ready" at start-up */
export const READY_TIMEOUT_MS = 60_000;

export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `signal ${signal}` : `code ${code}`;
}

export function isAlive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** The last lines of a log file (for error messages). */
export function logTail(file: string, lines = 8): string {
  if (!existsSync(file)) return "";
  let fd: number | undefined;
  try {
    fd = openSync(file, "r");
    const size = fstatSync(fd).size;
    const length = Math.min(size, 16 * 1024);
    const buf = Buffer.alloc(length);
    readSync(fd, buf, 0, length, size - length);
    return buf.toString("utf8").split("\n").filter((l) => l.trim() && !l.startsWith("--- ")).slice(-lines).map((l) => `  | ${l.length > 300 ? `${l.slice(0, 300)}…` : l}`).join("\n");
  } catch {
    return "";
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
export async function terminate(child: ChildProcess, graceMs: number, signal: NodeJS.Signals = "SIGTERM"): Promise<"exited" | "killed"> {
  if (!isAlive(child)) return "exited";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    exited.then(() => "exited" as const),
    new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), graceMs))),
  ]);
  clearTimeout(timer);
  if (outcome === "exited") return "exited";
  child.kill("SIGKILL");
  await exited;
  return "killed";
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: Error): void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** One actor process under supervision. */
export class SupervisedActor {
  child: ChildProcess | undefined;
  private readonly backoff = new Backoff();
  private readonly firstReady = deferred<void>();
  private readyAt = 0;
  private spawns = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private stopping = false;

  constructor(
    readonly name: string,
    private readonly env: Record<string, string>,
    readonly logFile: string,
    private readonly report: Reporter,
    /** a failure restarting cannot fix (exit 78: configuration or credentials) */
    private readonly onFatal: (err: CliError) => void,
  ) {
    this.firstReady.promise.catch(() => undefined);
  }

  /** Forks the actor; resolves when it first reports ready (restarts included). */
  async start(timeoutMs = READY_TIMEOUT_MS): Promise<void> {
    this.spawn();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new CliError(`${this.name} did not become ready within ${formatDuration(timeoutMs)}. Its log (${this.logFile}) ends with:\n${logTail(this.logFile)}`)), timeoutMs);
    });
    try {
      await Promise.race([this.firstReady.promise, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  private spawn(): void {
    this.spawns++;
    const restart = this.spawns > 1;
    const fd = openSync(this.logFile, "a", 0o600);
    let child: ChildProcess;
    try {
      writeSync(fd, `--- ${new Date().toISOString()} lurkbot launcher: ${restart ? `restart #${this.spawns - 1} of` : "starting"} ${this.name} ---\n`);
      child = fork(actorMainPath(this.name), [], { env: { ...ACTOR_ENV, ...this.env }, stdio: ["ignore", fd, fd, "ipc"], detached: true, execArgv: ACTOR_NODE_FLAGS });
    } finally {
      closeSync(fd);
    }
    this.child = child;
    let ready = false;
    child.on("message", (m: { type?: string } | null) => {
      if (m?.type !== "ready" || ready) return;
      ready = true;
      this.readyAt = Date.now();
      this.report.say(`${this.name} ${restart ? "restarted" : "ready"} (pid ${child.pid})`);
      this.firstReady.resolve();
    });
    // a failed fork emits "error" and possibly no "exit"
    child.once("error", (err) => {
      if (child.pid === undefined) this.onExit(child, null, null, false, err.message);
    });
    child.once("exit", (code, signal) => this.onExit(child, code, signal, ready));
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null, ready: boolean, error?: string): void {
    if (child !== this.child) return;
    this.child = undefined;
    if (this.stopping) return;
    if (code === 78) {
      this.onFatal(new CliError(`${this.name} refuses to start: its configuration or credentials are invalid (exit 78). Its log (${this.logFile}) ends with:\n${logTail(this.logFile)}\nFix that, then run \`npx lurkbot start\` again.`, EXIT.config));
      return;
    }
    const uptime = ready ? Date.now() - this.readyAt : 0;
    const delay = this.backoff.next(uptime);
    const what = error ? `could not be started (${error})` : `(pid ${child.pid}) exited (${describeExit(code, signal)})${ready ? ` after ${formatDuration(uptime)}` : " before it was ready"}`;
    this.report.warn(`${this.name} ${what}; restarting in ${formatDuration(delay)} — log: ${this.logFile}`);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (!this.stopping) this.spawn();
    }, delay);
  }

  /** No more restarts; SIGTERM, SIGKILL after the grace period. */
  async stop(graceMs = STOP_GRACE_MS): Promise<"exited" | "killed" | "not running"> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.firstReady.reject(new CliError(`${this.name}: the launcher is stopping`));
    const child = this.child;
    if (!child || !isAlive(child)) return "not running";
    return terminate(child, graceMs);
  }

  /** SIGKILL now (a second Ctrl-C). */
  kill(): void {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    if (this.child && isAlive(this.child)) this.child.kill("SIGKILL");
  }
}

/** The nats-server the launcher started, restarted with backoff if it dies. */
export class SupervisedNats {
  child: ChildProcess | undefined;
  private readonly backoff = new Backoff();
  private readyAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopping = false;

  constructor(private readonly spec: NatsServerSpec, private readonly report: Reporter, private readonly pidFile?: string) {}

  async start(): Promise<ChildProcess> {
    const child = await spawnNatsServer({ ...this.spec, detached: true }, 15_000);
    if (this.stopping) {
      await terminate(child, 5_000);
      throw new CliError("stopped while nats-server was starting");
    }
    this.child = child;
    if (this.pidFile && child.pid) writeFileSync(this.pidFile, `${child.pid}\n`, { mode: 0o600 });
    this.readyAt = Date.now();
    child.once("exit", (code, signal) => {
      if (child !== this.child) return;
      this.child = undefined;
      if (this.stopping) return;
      const delay = this.backoff.next(Date.now() - this.readyAt);
      this.report.warn(`nats-server (pid ${child.pid}) exited (${describeExit(code, signal)}); restarting in ${formatDuration(delay)} — log: ${this.spec.logFile ?? "-"}`);
      this.schedule(delay);
    });
    return child;
  }

  private schedule(delay: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopping) return;
      this.start().then(
        (child) => this.report.say(`nats-server restarted (pid ${child.pid})`),
        (err) => {
          if (this.stopping) return;
          const next = this.backoff.next(0);
          this.report.warn(`nats-server did not start again: ${(err as Error).message.split("\n")[0]}; retrying in ${formatDuration(next)}`);
          this.schedule(next);
        },
      );
    }, delay);
  }

  async stop(graceMs = 5_000): Promise<"exited" | "killed" | "not running"> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    const child = this.child;
    const outcome = !child || !isAlive(child) ? "not running" : await terminate(child, graceMs);
    if (this.pidFile) rmSync(this.pidFile, { force: true });
    return outcome;
  }

  kill(): void {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.child && isAlive(this.child)) this.child.kill("SIGKILL");
  }
}

/**
 * The nats-server an earlier launcher of this home started and left behind (the launcher was
 * killed): its pid from the pid file, if that process still runs nats-server with this
 * home's nats.conf. Linux only (reads /proc); elsewhere nothing is recognised.
 */
export function leftoverNatsServer(pidFile: string, confPath: string): number | null {
  try {
    const pid = Number(readFileSync(pidFile, "utf8").trim());
    if (!Number.isInteger(pid) || pid <= 1) return null;
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return cmdline.some((a) => a.endsWith("nats-server")) && cmdline.includes(confPath) ? pid : null;
  } catch {
    return null;
  }
}

/** SIGTERM a process that is not our child, SIGKILL after graceMs; resolves when it is gone. */
export async function terminatePid(pid: number, graceMs: number): Promise<void> {
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (alive()) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      return;
    }
    while (alive() && Date.now() < deadline + 5_000) await new Promise((r) => setTimeout(r, 50));
  }
}

/** The pid of a launcher that runs from this home now (its pid file names a live launcher). */
export function runningLauncher(pidFile: string): number | null {
  try {
    const pid = Number(readFileSync(pidFile, "utf8").trim());
    if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) return null;
    process.kill(pid, 0);
    if (!existsSync(`/proc/${pid}/cmdline`)) return pid;
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    return cmdline.some((a) => /cli[\\/](main\.js|bin\.mjs)$/.test(a) || a.endsWith("lurkbot")) && cmdline.includes("start") ? pid : null;
  } catch {
    return null;
  }
}
