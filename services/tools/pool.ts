/**
 * The worker pool tools run in (piscina): min/max threads and a heap cap per worker from
 * config.tools, one task per worker at a time. The deadline rules of a single task are in
 * attempt.ts: the clock starts when the task starts in a worker, a tool gets its AbortSignal at
 * the deadline or on cancellation, and one that does not stop is terminated with its worker
 * (piscina then starts a fresh one, so the pool keeps serving).
 *
 * Failures of the pool itself reject with a LurkError: TIMEOUT (deadline), ABORTED (caller),
 * TOOL_FAILED (out of memory, worker crash), UNAVAILABLE (queue full or too slow, shutting
 * down). Failures of the tool are results with `isError` (the worker builds them).
 *
 * Idle workers: a worker above minThreads (default 0) that has been idle for workerIdleMs is
 * stopped, so an idle tools actor holds no worker isolate (~15 MB each); the next call starts one.
 *
 * Self-repair: piscina stops replacing workers once one fails while starting (e.g. the code on
 * disk was being replaced), which would leave queued calls waiting forever. When the pool has
 * fewer workers than it needs after such a failure (minThreads, and at least one while calls are
 * queued), it starts a new piscina instance (with backoff) and resubmits the calls that had not
 * started yet.
 */
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import { Piscina } from "piscina";
import { LurkError } from "../../shared/contract/index.js";
import { MIN_WORKER_MEMORY_MB, type LurkConfig, type WebConfig } from "../../shared/runtime/config.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { runAttempt } from "./attempt.js";
import type { VectorHost } from "./embeddings/types.js";
import type { ToolTask } from "./task.js";
import type { ToolCallInfo, ToolLimits, ToolResult } from "./tool.js";

/** the compiled worker entry next to this file (dist/services/tools/worker.js) */
export const WORKER_FILE = fileURLToPath(new URL("./worker.js", import.meta.url));

export interface ToolPoolOptions {
  /** workers kept when idle (0: none) */
  minThreads: number;
  maxThreads: number;
  /** a worker above minThreads idle this long is stopped; default 15 s */
  idleTimeoutMs?: number;
  /** old-generation heap cap of each worker, MB (at least MIN_WORKER_MEMORY_MB is given) */
  workerMemoryMb: number;
  /** the worker entry; default WORKER_FILE (tests pass one that cannot start) */
  workerFile?: string;
  /** how long a tool may take to honour its AbortSignal before its worker is terminated */
  graceMs?: number;
  /** queued tasks beyond the running ones; more are refused with UNAVAILABLE */
  maxQueue?: number;
  /** a task that waits this long for a worker is given up with UNAVAILABLE */
  maxQueueWaitMs?: number;
  log?: Pick<Logger, "warn">;
}

export interface RunToolOptions {
  args: Record<string, unknown>;
  /** absolute path of the agent's workspace */
  workspace: string;
  /** ms the tool may run once it has started */
  timeoutMs: number;
  limits: ToolLimits;
  call?: ToolCallInfo;
  signal?: AbortSignal;
  onProgress?: (message: string, fraction?: number) => void;
  /** config.tools.web, handed to process tools (web_fetch, web_search) */
  web?: WebConfig;
  /** absolute directories `read` may open read-only besides the workspace (skill folders) */
  readOnlyRoots?: string[];
  /** memory.embeddings is set: the call's vectors (the worker tool's ctx.embeddings; embeddings/host.ts) */
  vectors?: VectorHost;
}

type Pool = Piscina<ToolTask, ToolResult>;

export class ToolPool {
  private piscina: Pool;
  private closed = false;
  private repairTimer: NodeJS.Timeout | undefined;
  private repairDelayMs = 100;
  /** calls in progress (started or waiting for a worker) */
  private inFlight = 0;
  /** each worker's old-generation cap, MB, at least MIN_WORKER_MEMORY_MB (a tiny one aborts the process on Node 22 and 24) */
  private readonly workerMemoryMb: number;

  constructor(private readonly opts: ToolPoolOptions) {
    this.workerMemoryMb = Math.max(MIN_WORKER_MEMORY_MB, opts.workerMemoryMb);
    this.piscina = this.createPiscina();
  }

  static fromConfig(config: LurkConfig, log?: Pick<Logger, "warn">): ToolPool {
    const t = config.tools;
    return new ToolPool({ minThreads: t.minThreads, maxThreads: t.maxThreads, idleTimeoutMs: t.workerIdleMs, workerMemoryMb: t.workerMemoryMb, ...(log ? { log } : {}) });
  }

  /** Runs a built-in tool by name. */
  run(tool: string, opts: RunToolOptions): Promise<ToolResult> {
    return this.execute({ tool }, opts);
  }

  /**
   * Runs the tool exported (default) by the module at `modulePath`. In-process callers only
   * (tests, fixtures); the actor never calls it, so nothing on the bus can load a module.
   */
  runModule(modulePath: string, opts: RunToolOptions): Promise<ToolResult> {
    return this.execute({ tool: basename(modulePath).replace(/\.[cm]?js$/, ""), modulePath }, opts);
  }

  get stats(): { threads: number; queued: number; completed: number } {
    return { threads: this.piscina.threads.length, queued: this.piscina.queueSize, completed: this.piscina.completed };
  }

  /** Terminates the workers; running and queued calls end with UNAVAILABLE. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.repairTimer);
    await this.piscina.destroy().catch(() => undefined);
  }

  private async execute(which: { tool: string; modulePath?: string }, opts: RunToolOptions): Promise<ToolResult> {
    const task: Omit<ToolTask, "port"> = {
      tool: which.tool,
      ...(which.modulePath ? { modulePath: which.modulePath } : {}),
      args: opts.args,
      workspace: opts.workspace,
      limits: opts.limits,
      ...(opts.call ? { call: opts.call } : {}),
      ...(opts.readOnlyRoots ? { readOnlyRoots: opts.readOnlyRoots } : {}),
      ...(opts.vectors ? { embeddings: opts.vectors.settings } : {}),
    };
    const queueDeadline = Date.now() + (this.opts.maxQueueWaitMs ?? 5 * 60_000);
    this.inFlight++;
    try {
      return await this.attempts(which.tool, task, opts, queueDeadline);
    } finally {
      this.inFlight--;
    }
  }

  private async attempts(tool: string, task: Omit<ToolTask, "port">, opts: RunToolOptions, queueDeadline: number): Promise<ToolResult> {
    for (;;) {
      if (this.closed) throw shuttingDown();
      const piscina = this.piscina;
      const outcome = await runAttempt(piscina, {
        task,
        timeoutMs: opts.timeoutMs,
        graceMs: this.opts.graceMs ?? 1_000,
        queueDeadline,
        ...(opts.signal ? { signal: opts.signal } : {}),
        ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
        ...(opts.vectors ? { vectors: opts.vectors } : {}),
      });
      if (outcome.ok) return outcome.result;
      // its queue was dropped when the piscina instance was replaced: submit it again
      if (!outcome.started && !outcome.stopped && piscina !== this.piscina && !this.closed) continue;
      throw this.mapError(outcome.error, tool);
    }
  }

  private createPiscina(): Pool {
    const piscina: Pool = new Piscina<ToolTask, ToolResult>({
      filename: this.opts.workerFile ?? WORKER_FILE,
      minThreads: this.opts.minThreads,
      maxThreads: Math.max(this.opts.minThreads, this.opts.maxThreads, 1),
      maxQueue: this.opts.maxQueue ?? 256,
      concurrentTasksPerWorker: 1,
      idleTimeout: this.opts.idleTimeoutMs ?? 15_000,
      // a small young generation keeps an idle worker small; the old generation is the memory cap
      resourceLimits: { maxOldGenerationSizeMb: this.workerMemoryMb, maxYoungGenerationSizeMb: 4 },
    });
    // a worker that dies with no task emits 'error'; unhandled, it would take the actor down
    piscina.on("error", (err: unknown) => {
      this.opts.log?.warn({ err }, "a tool worker failed");
      this.checkHealth(piscina);
    });
    piscina.on("workerDestroy", () => setImmediate(() => this.checkHealth(piscina)));
    piscina.on("workerCreate", () => (this.repairDelayMs = 100));
    return piscina;
  }

  /** Replaces a piscina instance that is left with too few workers (and will not add more). */
  private checkHealth(piscina: Pool): void {
    if (this.closed || piscina !== this.piscina || this.repairTimer) return;
    if (piscina.threads.length >= this.neededThreads()) return;
    this.repairTimer = setTimeout(() => {
      this.repairTimer = undefined;
      if (this.closed || piscina !== this.piscina || piscina.threads.length >= this.neededThreads()) return;
      this.opts.log?.warn({ threads: piscina.threads.length, queued: piscina.queueSize }, "tool workers stopped starting; starting a new pool");
      this.piscina = this.createPiscina();
      // rejects the queued calls (they are resubmitted); running ones finish where they are
      void piscina.close({ force: true }).catch(() => undefined);
    }, this.repairDelayMs);
    this.repairDelayMs = Math.min(this.repairDelayMs * 2, 30_000);
  }

  /** minThreads, and at least one worker while calls are in progress */
  private neededThreads(): number {
    return Math.max(this.opts.minThreads, this.inFlight > 0 ? 1 : 0);
  }

  private mapError(err: unknown, tool: string): LurkError {
    if (LurkError.is(err)) return LurkError.from(err);
    const e = err as { code?: string; message?: string } | undefined;
    const message = e?.message ?? String(err);
    if (e?.code === "ERR_WORKER_OUT_OF_MEMORY") {
      return new LurkError("TOOL_FAILED", `the ${tool} tool ran out of memory (the cap is ${this.workerMemoryMb} MB per worker) and was stopped`);
    }
    if (message.includes("Task queue is at limit")) {
      return new LurkError("UNAVAILABLE", "the tools actor is busy (its queue is full); try again shortly", { retryable: true });
    }
    if (this.closed) return shuttingDown();
    return new LurkError("TOOL_FAILED", `the ${tool} tool's worker failed: ${message}`);
  }
}

function shuttingDown(): LurkError {
  return new LurkError("UNAVAILABLE", "the tools actor is shutting down", { retryable: true });
}
