/**
 * One run of one task on a piscina instance, with the deadline rules of the pool:
 *  - the task gets its own MessageChannel; the worker posts "started" when it begins, and only
 *    then is the deadline armed (queue time does not count);
 *  - at the deadline or on cancellation the worker is told "abort" (the tool's AbortSignal);
 *    if it is still running `graceMs` later, piscina's abort terminates its worker;
 *  - a task that is still queued when stopped is dropped from the queue;
 *  - a task that waits longer than `queueWaitMs` for a worker is given up (UNAVAILABLE);
 *  - a worker's "vectors" requests (memory.embeddings) are answered by `vectors` on the same port.
 * The outcome says whether the task ever started, so the pool can resubmit a task whose queue
 * was lost when it replaced a broken piscina instance.
 */
import { MessageChannel } from "node:worker_threads";
import type { Piscina } from "piscina";
import { LurkError } from "../../shared/contract/index.js";
import type { VectorHost } from "./embeddings/types.js";
import type { PoolToWorker, ToolTask, VectorsReply, VectorsRequest, WorkerToPool } from "./task.js";
import type { ToolResult } from "./tool.js";

/** the most hashes or texts one vectors request is served for (a search asks for at most maxChunks + 1) */
const MAX_VECTOR_REQUEST = 100_001;

export interface AttemptOptions {
  task: Omit<ToolTask, "port">;
  timeoutMs: number;
  graceMs: number;
  /** give up on a task that has not started by this time (ms since epoch) */
  queueDeadline: number;
  signal?: AbortSignal;
  onProgress?: (message: string, fraction?: number) => void;
  /** answers the worker's "vectors" requests (memory.embeddings; embeddings/host.ts) */
  vectors?: VectorHost;
}

export type AttemptOutcome =
  | { ok: true; result: ToolResult }
  /** `stopped`: we stopped it (deadline, cancel, queue wait); otherwise piscina failed it */
  | { ok: false; error: unknown; started: boolean; stopped: boolean };

export async function runAttempt(piscina: Piscina<ToolTask, ToolResult>, opts: AttemptOptions): Promise<AttemptOutcome> {
  const { port1, port2 } = new MessageChannel();
  const hardStop = new AbortController();
  // stopped with the task: a vectors request in progress sends no more batches (only for a call with vectors)
  const vectorsStop = opts.vectors ? new AbortController() : undefined;
  const tool = opts.task.tool;
  let started = false;
  let failure: LurkError | undefined;
  let deadline: NodeJS.Timeout | undefined;
  let grace: NodeJS.Timeout | undefined;
  let markDone: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (markDone = resolve));

  const stop = (err: LurkError) => {
    if (failure) return;
    failure = err;
    vectorsStop?.abort(err);
    if (!started) return hardStop.abort(err); // still queued: drop it
    port1.postMessage({ type: "abort", code: err.code, message: err.message } satisfies PoolToWorker);
    grace = setTimeout(() => hardStop.abort(err), opts.graceMs);
  };
  const queueWait = setTimeout(() => stop(new LurkError("UNAVAILABLE", `no tool worker became free for the ${tool} tool in time; try again`, { retryable: true })),
    Math.max(0, opts.queueDeadline - Date.now()));
  port1.on("message", (message: WorkerToPool) => {
    if (message?.type === "started" && !started) {
      started = true;
      clearTimeout(queueWait);
      if (failure) return hardStop.abort(failure);
      deadline = setTimeout(() => stop(new LurkError("TIMEOUT", `the ${tool} tool ran longer than ${opts.timeoutMs} ms and was stopped`)), opts.timeoutMs);
    } else if (message?.type === "done") {
      markDone();
    } else if (message?.type === "vectors") {
      void answerVectors(message);
    } else if (message?.type === "progress" && !failure) {
      try {
        opts.onProgress?.(message.message, message.fraction);
      } catch {
        // a progress listener must not break the call
      }
    }
  });
  const answerVectors = async (request: VectorsRequest): Promise<void> => {
    let reply: VectorsReply;
    try {
      if (!opts.vectors || !vectorsStop) throw new LurkError("INTERNAL", "this call has no vectors (memory.embeddings is not set)");
      const vectors = request.op === "lookup"
        ? opts.vectors.lookup(request.hashes.slice(0, MAX_VECTOR_REQUEST))
        : await opts.vectors.embed(request.texts.slice(0, MAX_VECTOR_REQUEST), request.hashes.slice(0, MAX_VECTOR_REQUEST), vectorsStop.signal);
      reply = { type: "vectors", id: request.id, vectors };
    } catch (err) {
      const e = LurkError.from(err);
      reply = { type: "vectors", id: request.id, error: { code: e.code, message: e.message } };
    }
    // each vector has its own buffer: moved to the worker, not copied
    const buffers = "vectors" in reply ? [...new Set(reply.vectors.flatMap((v) => (v ? [v.buffer as ArrayBuffer] : [])))] : [];
    try {
      port1.postMessage(reply, buffers);
    } catch {
      // the task ended meanwhile
    }
  };
  const onCancel = () => stop(cancelReason(opts.signal));
  if (opts.signal?.aborted) onCancel();
  opts.signal?.addEventListener("abort", onCancel, { once: true });

  try {
    const result = await piscina.run({ ...opts.task, port: port2 }, { transferList: [port2], signal: hardStop.signal });
    // it finished within the grace period after a stop: the stop is the answer
    if (failure) return { ok: false, error: failure, started, stopped: true };
    // progress travels on the task's port, the result on piscina's: let the notes land first
    let wait: NodeJS.Timeout | undefined;
    await Promise.race([done, new Promise((resolve) => (wait = setTimeout(resolve, 1_000)))]);
    clearTimeout(wait);
    return { ok: true, result };
  } catch (err) {
    return failure ? { ok: false, error: failure, started, stopped: true } : { ok: false, error: err, started, stopped: false };
  } finally {
    clearTimeout(queueWait);
    clearTimeout(deadline);
    clearTimeout(grace);
    opts.signal?.removeEventListener("abort", onCancel);
    vectorsStop?.abort(new LurkError("ABORTED", "the tool call ended"));
    port1.close();
  }
}

/** The caller's reason when it is an ABORTED LurkError (it says why), else a plain one. */
export function cancelReason(signal: AbortSignal | undefined): LurkError {
  const reason: unknown = signal?.reason;
  return reason instanceof LurkError && reason.code === "ABORTED" ? reason : new LurkError("ABORTED", "the tool call was cancelled");
}
