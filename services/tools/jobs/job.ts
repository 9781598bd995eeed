/**
 * One background job of the `process` tool: a command in the exec sandbox (same bubblewrap
 * arguments, limits, clean environment and pids cgroup as exec), with stdin open, its output
 * (stdout and stderr interleaved) appended to a log file in the workspace
 * (`.lurkbot/jobs/<jobId>.log`, opened safely by log-file.ts), and a deadline. When the command
 * ends, is killed, or reaches its deadline, everything it started is killed too (process group,
 * then the cgroup), like exec. Output beyond `maxOutputBytes` is dropped and counted.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { LurkError, type ToolJobSummary } from "../../../shared/contract/index.js";
import { killTree, prepareCommand, reapLeftovers } from "../exec/run.js";
import type { ExecHost } from "../exec/sandbox.js";
import { openJobLog, type JobLog } from "./log-file.js";

export type JobStatus = ToolJobSummary["status"];

export interface JobOwner {
  agentId: string;
  sessionKey: string;
}

export interface StartJobOptions {
  jobId: string;
  command: string;
  /** real absolute path of the workspace */
  workspace: string;
  owner: JobOwner;
  timeoutMs: number;
  maxOutputBytes: number;
}

export class Job {
  status: JobStatus = "running";
  exitCode: number | null = null;
  exitSignal: string | null = null;
  endedAt: number | undefined;
  readonly startedAt = Date.now();
  /** bytes of output received (kept or not) */
  totalBytes = 0;
  /** the offset `poll` has shown up to */
  polledTo = 0;
  private sandboxStderr = "";
  private readonly ended: Promise<void>;
  private markEnded: () => void = () => undefined;
  private deadline: NodeJS.Timeout | undefined;

  private constructor(
    readonly jobId: string,
    readonly command: string,
    readonly owner: JobOwner,
    readonly log: JobLog,
    private readonly child: ChildProcess,
    private readonly maxOutputBytes: number,
  ) {
    this.ended = new Promise((resolve) => (this.markEnded = resolve));
  }

  static async start(exec: ExecHost, opts: StartJobOptions): Promise<Job> {
    const log = await openJobLog(opts.workspace, opts.jobId);
    const prepared = await prepareCommand(exec, opts.command, opts.workspace, { keepStdin: true }).catch(async (err) => {
      await log.close();
      throw err;
    });
    let child: ChildProcess;
    try {
      child = spawn(prepared.file, prepared.args, { cwd: opts.workspace, env: prepared.env, detached: true, stdio: ["pipe", "pipe", "pipe"] });
    } catch (err) {
      await prepared.cgroup?.remove();
      await log.close();
      throw new LurkError("TOOL_FAILED", `cannot start the command: ${(err as Error).message}`);
    }
    const job = new Job(opts.jobId, opts.command, opts.owner, log, child, opts.maxOutputBytes);
    child.stdin?.on("error", () => undefined);
    child.stdout?.on("data", (chunk: Buffer) => job.onOutput(chunk));
    child.stderr?.on("data", (chunk: Buffer) => {
      if (job.sandboxStderr.length < 4096) job.sandboxStderr += chunk.toString("utf8");
    });
    const closed = Promise.all([
      new Promise<void>((resolve) => child.stdout?.once("close", () => resolve()) ?? resolve()),
      new Promise<void>((resolve) => child.stderr?.once("close", () => resolve()) ?? resolve()),
    ]);
    const finish = async (code: number | null, signal: string | null, failure?: string) => {
      clearTimeout(job.deadline);
      job.exitCode = code;
      job.exitSignal = signal;
      if (job.status === "running") job.status = failure ? "failed" : "exited";
      if (failure) job.sandboxStderr += failure;
      await reapLeftovers(child, prepared.cgroup, closed);
      await prepared.cgroup?.remove();
      await log.flush();
      job.endedAt = Date.now();
      job.markEnded();
    };
    child.once("error", (err) => void finish(null, null, `cannot start the command: ${err.message}`));
    child.once("exit", (code, signal) => void finish(code, signal));
    job.deadline = setTimeout(() => job.stop("timed_out"), opts.timeoutMs);
    return job;
  }

  get running(): boolean {
    return this.endedAt === undefined;
  }

  /** bytes dropped because the log was full */
  get droppedBytes(): number {
    return this.totalBytes - this.log.size;
  }

  /** bubblewrap's own messages (sandbox setup failures) */
  get sandboxMessages(): string {
    return this.sandboxStderr.trim();
  }

  private onOutput(chunk: Buffer): void {
    this.totalBytes += chunk.length;
    const room = this.maxOutputBytes - this.log.size - this.log.pending;
    if (room <= 0) return;
    this.log.append(room < chunk.length ? chunk.subarray(0, room) : chunk);
  }

  /** Writes to the command's stdin; `eof` closes it afterwards. */
  async write(data: string, eof: boolean): Promise<number> {
    const stdin = this.child.stdin;
    if (!this.running) throw new LurkError("CONFLICT", `job ${this.jobId} has ended; it takes no more input`);
    if (!stdin || stdin.destroyed || stdin.writableEnded) throw new LurkError("CONFLICT", `the input of job ${this.jobId} is closed`);
    const bytes = Buffer.from(data, "utf8");
    if (bytes.length > 0) {
      await new Promise<void>((resolve, reject) => stdin.write(bytes, (err) => (err ? reject(new LurkError("TOOL_FAILED", `cannot write to job ${this.jobId}: ${err.message}`)) : resolve())));
    }
    if (eof) stdin.end();
    return bytes.length;
  }

  /** Kills the command and everything it started (the status says why). */
  stop(why: "killed" | "timed_out"): void {
    if (!this.running) return;
    if (this.status === "running") this.status = why;
    killTree(this.child.pid);
  }

  /** Resolves when the job has ended and its log is flushed (or after `ms`). */
  async waitEnded(ms: number): Promise<boolean> {
    if (!this.running) return true;
    let timer: NodeJS.Timeout | undefined;
    const done = await Promise.race([this.ended.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)))]);
    clearTimeout(timer);
    return done;
  }

  summary(): ToolJobSummary {
    return {
      jobId: this.jobId,
      command: this.command.slice(0, 2000),
      status: this.status,
      exitCode: this.exitCode,
      startedAt: this.startedAt,
      ...(this.endedAt !== undefined ? { endedAt: this.endedAt } : {}),
      outputBytes: this.totalBytes,
    };
  }
}
