/**
 * The worker hooks run in: a piscina pool of one thread, created on the first invocation (piscina
 * itself is imported then), with an old-generation heap cap (`hooks.workerMemoryMb`); the thread
 * ends after `hooks.workerIdleMs` without work, so an idle actor holds no worker. One invocation
 * at a time. An invocation that runs longer than `hooks.timeoutMs` is aborted: piscina terminates
 * its thread (a busy loop or a promise that never settles alike) and the next one starts afresh.
 * `run` never throws: a failure of the pool (time limit, out of memory, worker crash) is an
 * outcome with `error`.
 */
import { fileURLToPath } from "node:url";
import type { Piscina } from "piscina";
import type { HooksConfig } from "../../shared/runtime/config-hooks.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { HookOutcome, HookTask } from "./task.js";

/** the compiled worker entry next to this file */
export const WORKER_FILE = fileURLToPath(new URL("./worker.js", import.meta.url));

type Pool = Piscina<HookTask, HookOutcome>;

export class HookPool {
  private piscina: Pool | undefined;
  private closed = false;

  /** `env`: the worker's process.env (the actor's, without secrets) */
  constructor(private readonly limits: Pick<HooksConfig, "timeoutMs" | "workerMemoryMb" | "workerIdleMs">, private readonly env: Record<string, string>, private readonly log: Pick<Logger, "warn">) {}

  /** `limit`: this invocation's time limit and what the failure names (default hooks.timeoutMs) */
  async run(task: HookTask, limit: { ms: number; name: string } = { ms: this.limits.timeoutMs, name: "hooks.timeoutMs" }): Promise<HookOutcome> {
    if (this.closed) return failed("the hooks actor is stopping");
    const piscina = await this.pool();
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(new Error("time limit")), limit.ms);
    try {
      return await piscina.run(task, { signal: stop.signal });
    } catch (err) {
      if (stop.signal.aborted) return failed(`it ran longer than ${limit.ms} ms (${limit.name}) and was stopped`);
      const e = err as { code?: string; message?: string } | undefined;
      if (e?.code === "ERR_WORKER_OUT_OF_MEMORY") return failed(`it ran out of memory (hooks.workerMemoryMb is ${this.limits.workerMemoryMb} MB) and was stopped`);
      return failed(`its worker failed: ${e?.message ?? String(err)}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** live worker threads (0 when idle) */
  get threads(): number {
    return this.piscina?.threads.length ?? 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.piscina?.destroy().catch(() => undefined);
  }

  private async pool(): Promise<Pool> {
    if (this.piscina) return this.piscina;
    const { Piscina } = await import("piscina");
    const piscina: Pool = new Piscina<HookTask, HookOutcome>({
      filename: WORKER_FILE,
      minThreads: 0,
      maxThreads: 1,
      concurrentTasksPerWorker: 1,
      idleTimeout: this.limits.workerIdleMs,
      env: this.env,
      // a small young generation keeps the worker small; the old generation is the memory cap
      resourceLimits: { maxOldGenerationSizeMb: this.limits.workerMemoryMb, maxYoungGenerationSizeMb: 4 },
    });
    // a worker that dies outside a task (a handler's stray timer threw) emits 'error'; unhandled, it would end the actor
    piscina.on("error", (err: unknown) => this.log.warn({ err }, "a hook worker failed outside an invocation"));
    this.piscina ??= piscina;
    return this.piscina;
  }
}

function failed(message: string): HookOutcome {
  return { messages: [], runs: [], logs: [], dropped: 0, error: { kind: "stopped", message } };
}
