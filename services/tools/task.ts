/**
 * What the pool sends a worker and what flows back: plain, structured-clonable data.
 *
 * A task names a built-in tool. `modulePath` (an absolute path of a module whose default
 * export is a Tool) is for in-process callers such as tests; the actor never sets it, so
 * nothing on the bus can make a worker load a module.
 *
 * `port` is the task's private channel: the worker says "started" (the deadline starts then,
 * not while the task waits in the queue) and sends progress; the pool sends "abort" (the tool's
 * AbortSignal fires; a tool that does not stop is terminated with its worker). With
 * `embeddings`, the worker may also ask for vectors ("vectors": cache lookups and embeddings,
 * which need the actor's thread: the LMDB cache and the bus) and gets the answer of the same id.
 */
import type { MessagePort } from "node:worker_threads";
import type { ErrorCode } from "../../shared/contract/index.js";
import type { VectorSettings } from "./embeddings/types.js";
import type { ToolCallInfo, ToolLimits } from "./tool.js";

export interface ToolTask {
  tool: string;
  modulePath?: string;
  args: Record<string, unknown>;
  workspace: string;
  limits: ToolLimits;
  call?: ToolCallInfo;
  /** absolute directories `read` may open read-only besides the workspace (skill folders) */
  readOnlyRoots?: string[];
  /** memory.embeddings is set: the tool gets `ctx.embeddings`, served over `port` (embeddings/) */
  embeddings?: VectorSettings;
  port: MessagePort;
}

/** A worker asks the actor's thread for vectors (memory_search; embeddings/worker-access.ts). */
export type VectorsRequest =
  | { type: "vectors"; id: number; op: "lookup"; hashes: string[] }
  | { type: "vectors"; id: number; op: "embed"; texts: string[]; hashes: Array<string | null> };

/** The answer to a VectorsRequest of the same id. */
export type VectorsReply =
  | { type: "vectors"; id: number; vectors: Array<Float32Array | null> }
  | { type: "vectors"; id: number; error: { code: ErrorCode; message: string } };

export type WorkerToPool =
  | { type: "started" }
  | { type: "progress"; message: string; fraction?: number }
  | VectorsRequest
  /** the last message of a task: everything it posted before has arrived */
  | { type: "done" };

export type PoolToWorker = { type: "abort"; code: ErrorCode; message: string } | VectorsReply;
