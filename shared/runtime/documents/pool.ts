/**
 * A worker thread to read documents in (extract.ts), off an actor's event loop: one piscina
 * thread at most, started on the first document (piscina itself is imported then) and stopped
 * after IDLE_MS without work, so an idle actor holds no parser and no isolate. The worker's heap
 * is capped (WORKER_MEMORY_MB).
 *
 * Contract of `extract()`: resolves with the worker's result, or `{ ok: false, reason }` when the
 * document took longer than `timeoutMs` (its worker is terminated), ran out of memory, or the
 * pool is busy or failed (`detail` says how), and `{ ok: false, transient: true }` when it was
 * cancelled by `signal` or the pool is closed. It never throws. The bytes are copied into
 * a fresh ArrayBuffer that is transferred to the worker.
 */
import { fileURLToPath } from "node:url";
import type { Piscina } from "piscina";
import type { Logger } from "../logger.js";
import type { DocumentResult, DocumentTask } from "./extract.js";
import type { DocumentFormat } from "./formats.js";

/** the compiled worker entry next to this file */
const WORKER_FILE = fileURLToPath(new URL("./extract.js", import.meta.url));
const IDLE_MS = 5_000;
const WORKER_MEMORY_MB = 256;
/** documents waiting for the worker beyond the one it reads */
const MAX_QUEUE = 32;

export interface DocumentPoolOptions {
  /** the most one document may take */
  timeoutMs: number;
  log: Pick<Logger, "warn">;
  /** the setting named when a document takes too long ("media.documentTimeoutMs") */
  timeoutSetting: string;
  /** the reasons given for a closed pool and a cancelled document (transient results) */
  stoppingReason: string;
  cancelledReason: string;
}

type Pool = Piscina<DocumentTask, DocumentResult>;

export class DocumentPool {
  private pool: Promise<Pool> | undefined;
  private closed = false;

  constructor(private readonly opts: DocumentPoolOptions) {}

  async extract(format: DocumentFormat, bytes: Uint8Array, limits: { maxChars: number; maxPages: number; bwrapPath?: string }, signal?: AbortSignal): Promise<DocumentResult> {
    if (this.closed) return { ok: false, reason: this.opts.stoppingReason, transient: true };
    const copy = new Uint8Array(bytes).buffer; // its own buffer: a view into a shared one must not be transferred
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), this.opts.timeoutMs);
    const stop = signal ? AbortSignal.any([signal, timeout.signal]) : timeout.signal;
    try {
      const pool = await this.open();
      // catdoc (DOC, XLS) gets a little less than the worker's own deadline
      return await pool.run({ format, bytes: copy, timeoutMs: Math.max(1_000, this.opts.timeoutMs - 1_000), ...limits }, { transferList: [copy], signal: stop });
    } catch (err) {
      if (timeout.signal.aborted) return { ok: false, reason: `reading it took longer than ${Math.round(this.opts.timeoutMs / 1000)} s (${this.opts.timeoutSetting})` };
      if (signal?.aborted) return { ok: false, reason: this.opts.cancelledReason, transient: true };
      const e = err as { code?: string; message?: string };
      if (e?.code === "ERR_WORKER_OUT_OF_MEMORY") return { ok: false, reason: `reading it needed more than ${WORKER_MEMORY_MB} MB of memory` };
      this.opts.log.warn({ err }, "the document worker failed");
      return { ok: false, reason: "the document reader failed", detail: String(e?.message ?? err).slice(0, 300) };
    } finally {
      clearTimeout(timer);
    }
  }

  /** worker threads alive now (0 before the first document and after IDLE_MS without one) */
  async threads(): Promise<number> {
    return this.pool ? (await this.pool).threads.length : 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    const pool = await this.pool?.catch(() => undefined);
    await pool?.destroy().catch(() => undefined);
  }

  private open(): Promise<Pool> {
    this.pool ??= import("piscina").then(({ Piscina }) => {
      const pool: Pool = new Piscina<DocumentTask, DocumentResult>({
        filename: WORKER_FILE,
        minThreads: 0,
        maxThreads: 1,
        concurrentTasksPerWorker: 1,
        idleTimeout: IDLE_MS,
        maxQueue: MAX_QUEUE,
        resourceLimits: { maxOldGenerationSizeMb: WORKER_MEMORY_MB, maxYoungGenerationSizeMb: 16 },
      });
      // a worker that dies with no task emits 'error'; unhandled, it would take the actor down
      pool.on("error", (err: unknown) => this.opts.log.warn({ err }, "the document worker failed"));
      return pool;
    }).catch((err: unknown) => {
      this.pool = undefined;
      throw err;
    });
    return this.pool;
  }
}
