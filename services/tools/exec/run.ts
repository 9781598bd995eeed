/**
 * Runs one command (in the sandbox of sandbox.ts, or as a plain child in mode "none") and
 * collects its output. The child is spawned detached (its own process group) and, when
 * available, inside a fresh pids cgroup (a `/bin/sh` stub enters it before exec'ing bwrap, so
 * nothing can fork outside it). When the command ends, at the deadline, or on cancellation,
 * everything it left is killed: the process group (SIGKILL to -pgid; in bwrap mode that is
 * bwrap itself, whose death tears down the pid namespace via --die-with-parent), then every
 * member of the cgroup. A background `sleep 300 &` does not outlive the call.
 *
 * Output: the command's stdout and stderr are one stream (the prelude does `exec 2>&1`), kept
 * in memory up to `capBytes`. Beyond that the head and a rolling tail are kept, and the whole
 * stream is spooled to a private temp file (up to maxOutputFileMb) for the caller to save.
 * bwrap's own stderr (sandbox setup errors) is collected separately.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, readdirSync, readFileSync, type WriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LurkError } from "../../../shared/contract/index.js";
import { PidsCgroup } from "./cgroup.js";
import { BASH, bwrapArgs, countUserTasks, sandboxEnv, shellArgs, type ExecHost } from "./sandbox.js";

export interface RunCommandOptions {
  command: string;
  /** real absolute path of the workspace */
  workspace: string;
  timeoutMs: number;
  /** cancellation (the tool's signal); its reason is reported */
  signal: AbortSignal;
  /** bytes of output kept in memory (head + tail); more is spooled */
  capBytes: number;
}

export interface CommandOutcome {
  exitCode: number | null;
  /** the signal that ended the command's top process, if any */
  exitSignal: string | null;
  /** set when we stopped it (TIMEOUT at the deadline, ABORTED on cancellation) */
  stopped?: LurkError;
  /** the whole output, when it fit in capBytes */
  output?: Buffer;
  /** when it did not: the first and last bytes, and the spool file (closed) */
  head?: Buffer;
  tail?: Buffer;
  spool?: { path: string; bytes: number; complete: boolean; cleanup(): Promise<void> };
  totalBytes: number;
  /** bwrap's own messages (setup failures), trimmed */
  sandboxStderr: string;
  durationMs: number;
}

let sequence = 0;

class OutputCollector {
  private chunks: Buffer[] = [];
  private size = 0;
  total = 0;
  head?: Buffer;
  private tailChunks: Buffer[] = [];
  private tailSize = 0;
  spool?: WriteStream;
  spoolDir?: string;
  spoolBytes = 0;
  spoolComplete = true;
  private pendingSpool?: Promise<void>;

  constructor(private readonly capBytes: number, private readonly headBytes: number, private readonly tailBytes: number, private readonly spoolMax: number) {}

  add(chunk: Buffer): void {
    this.total += chunk.length;
    if (!this.head) {
      this.chunks.push(chunk);
      this.size += chunk.length;
      if (this.size <= this.capBytes) return;
      // over the cap: keep the head, start the tail and the spool with everything so far
      const all = Buffer.concat(this.chunks);
      this.chunks = [];
      this.head = all.subarray(0, this.headBytes);
      this.pushTail(all);
      this.startSpool(all);
      return;
    }
    this.pushTail(chunk);
    this.writeSpool(chunk);
  }

  get fitted(): Buffer | undefined {
    return this.head ? undefined : Buffer.concat(this.chunks);
  }

  get tail(): Buffer {
    const all = Buffer.concat(this.tailChunks);
    return all.subarray(Math.max(0, all.length - this.tailBytes));
  }

  private pushTail(chunk: Buffer): void {
    this.tailChunks.push(chunk);
    this.tailSize += chunk.length;
    if (this.tailSize > this.tailBytes * 2) {
      const all = Buffer.concat(this.tailChunks).subarray(-this.tailBytes);
      this.tailChunks = [Buffer.from(all)];
      this.tailSize = all.length;
    }
  }

  /** chunks that arrive while the spool file is being created */
  private pendingChunks: Buffer[] | undefined;

  private startSpool(first: Buffer): void {
    this.pendingChunks = [first];
    this.pendingSpool = mkdtemp(join(tmpdir(), "lurkbot-exec-out-")).then((dir) => {
      this.spoolDir = dir;
      this.spool = createWriteStream(join(dir, "output.txt"), { mode: 0o600 });
      this.spool.on("error", () => (this.spoolComplete = false));
    }).catch(() => {
      this.spoolComplete = false;
    }).finally(() => {
      const pending = this.pendingChunks ?? [];
      this.pendingChunks = undefined;
      for (const chunk of pending) this.writeSpool(chunk);
    });
  }

  private writeSpool(chunk: Buffer): void {
    if (this.pendingChunks) {
      this.pendingChunks.push(chunk);
      return;
    }
    if (!this.spool) return;
    const room = this.spoolMax - this.spoolBytes;
    if (room <= 0) {
      this.spoolComplete = false;
      return;
    }
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    if (part.length < chunk.length) this.spoolComplete = false;
    this.spoolBytes += part.length;
    this.spool.write(part);
  }

  async finish(): Promise<CommandOutcome["spool"]> {
    await this.pendingSpool;
    const spool = this.spool;
    const dir = this.spoolDir;
    if (!spool || !dir) return undefined;
    await new Promise<void>((resolve) => spool.end(() => resolve()));
    return { path: join(dir, "output.txt"), bytes: this.spoolBytes, complete: this.spoolComplete, cleanup: () => rm(dir, { recursive: true, force: true }) };
  }
}

/** `pid` and its descendants now (from /proc/<pid>/task/<tid>/children), deepest last. */
function processTree(pid: number): number[] {
  const out: number[] = [];
  const visit = (p: number, depth: number) => {
    if (depth > 64 || out.includes(p)) return;
    out.push(p);
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${p}/task`);
    } catch {
      return;
    }
    for (const tid of tasks) {
      let children = "";
      try {
        children = readFileSync(`/proc/${p}/task/${tid}/children`, "utf8");
      } catch {
        continue;
      }
      for (const child of children.trim().split(/\s+/).filter(Boolean)) visit(Number(child), depth + 1);
    }
  };
  visit(pid, 0);
  return out;
}

/**
 * SIGKILL to the process group and to every descendant found now: a sandbox that is still
 * starting (bubblewrap's inner process in a new session, before --die-with-parent is armed)
 * would otherwise survive its parent. exec (deadline, cancellation) and background jobs stop
 * a command with this.
 */
export function killTree(pid: number | undefined): void {
  if (pid === undefined) return;
  const tree = processTree(pid);
  killGroup(pid);
  for (const p of tree) {
    try {
      process.kill(p, "SIGKILL");
    } catch {
      // gone already
    }
  }
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // the group is gone already
  }
}

/**
 * After the command's top process ended: whatever it left behind (background jobs) goes with
 * it (the process group, then the cgroup); the pipes close when the last holder is gone, but
 * an escapee is not waited for longer than 1 s. exec and background jobs share this.
 */
export async function reapLeftovers(child: ChildProcess, cgroup: PidsCgroup | undefined, pipesClosed: Promise<unknown>): Promise<void> {
  killGroup(child.pid);
  await cgroup?.killAll();
  let grace: NodeJS.Timeout | undefined;
  await Promise.race([pipesClosed, new Promise((resolve) => (grace = setTimeout(resolve, 1_000)))]);
  clearTimeout(grace);
  child.stdout?.destroy();
  child.stderr?.destroy();
}

/** How to spawn one command in the sandbox (or plain, mode "none"), with its own pids cgroup when possible. */
export interface PreparedCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
  cgroup?: PidsCgroup;
}

/** The spawn arguments of a command (exec and background jobs share them); remove the cgroup when done. */
export async function prepareCommand(host: ExecHost, command: string, workspace: string, opts: { keepStdin?: boolean } = {}): Promise<PreparedCommand> {
  const cfg = host.config;
  const cgroup = host.pidsRoot
    ? await PidsCgroup.create(host.pidsRoot, `lurkbot-exec-${process.pid}-${++sequence}-${Date.now().toString(36)}`, cfg.maxProcesses).catch(() => undefined)
    : undefined;
  const uid = process.getuid?.() ?? -1;
  // RLIMIT_NPROC counts all of the user's tasks and never applies to root: only without a cgroup
  const nproc = cgroup || uid === 0 || uid === -1 ? undefined : countUserTasks(uid) + cfg.maxProcesses;
  const env = sandboxEnv(workspace);
  const shell = shellArgs(cfg, command, { ...(nproc === undefined ? {} : { nproc }), ...(opts.keepStdin ? { keepStdin: true } : {}) });
  let file = host.mode === "bwrap" ? cfg.bwrapPath : BASH;
  let args = host.mode === "bwrap" ? [...bwrapArgs(workspace, env), "--", BASH, ...shell] : shell;
  if (cgroup) {
    args = ["-c", 'echo $$ > "$0" || { echo "lurkbot: cannot enter the pids cgroup" >&2; exit 125; }; exec "$@"', cgroup.procsFile, file, ...args];
    file = "/bin/sh";
  }
  return { file, args, env, ...(cgroup ? { cgroup } : {}) };
}

export async function runCommand(host: ExecHost, opts: RunCommandOptions): Promise<CommandOutcome> {
  const cfg = host.config;
  const started = Date.now();
  const { file, args, env, cgroup } = await prepareCommand(host, opts.command, opts.workspace);

  const budget = Math.max(1024, opts.capBytes);
  const collector = new OutputCollector(budget, Math.floor(budget * 0.6), Math.floor(budget * 0.4), cfg.maxOutputFileMb * 1024 * 1024);
  let sandboxStderr = "";
  let stopped: LurkError | undefined;

  try {
    const child = spawn(file, args, { cwd: opts.workspace, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (chunk: Buffer) => collector.add(chunk));
    child.stderr.on("data", (chunk: Buffer) => {
      if (sandboxStderr.length < 8192) sandboxStderr += chunk.toString("utf8");
    });
    const stdoutEnd = new Promise<void>((resolve) => child.stdout.once("close", () => resolve()));
    const stderrEnd = new Promise<void>((resolve) => child.stderr.once("close", () => resolve()));

    const exit = await new Promise<{ code: number | null; signal: string | null }>((resolve, reject) => {
      const stop = (err: LurkError) => {
        if (stopped) return;
        stopped = err;
        killTree(child.pid);
        void cgroup?.killAll();
      };
      const timer = setTimeout(() => stop(new LurkError("TIMEOUT", `the command ran longer than ${opts.timeoutMs} ms and was killed`)), opts.timeoutMs);
      const onAbort = () => stop(LurkError.is(opts.signal.reason) ? LurkError.from(opts.signal.reason) : new LurkError("ABORTED", "the command was cancelled"));
      if (opts.signal.aborted) onAbort();
      opts.signal.addEventListener("abort", onAbort, { once: true });
      child.once("error", (err) => {
        clearTimeout(timer);
        opts.signal.removeEventListener("abort", onAbort);
        reject(new LurkError("TOOL_FAILED", `cannot start the command: ${err.message}`));
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        opts.signal.removeEventListener("abort", onAbort);
        resolve({ code, signal });
      });
    });

    await reapLeftovers(child, cgroup, Promise.all([stdoutEnd, stderrEnd]));

    const spool = await collector.finish();
    const fitted = collector.fitted;
    return {
      exitCode: exit.code,
      exitSignal: exit.signal,
      ...(stopped ? { stopped } : {}),
      ...(fitted ? { output: fitted } : { head: collector.head!, tail: collector.tail }),
      ...(spool ? { spool } : {}),
      totalBytes: collector.total,
      sandboxStderr: sandboxStderr.trim(),
      durationMs: Date.now() - started,
    };
  } finally {
    await cgroup?.remove();
  }
}
