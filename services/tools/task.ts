/**
 * What the pool sends a worker and what flows back: plain, structured-clonable data.
 *
 * A task names a built-in tool. `modulePath` (an absolute path of a module whose default
 * export is a Tool) is for in-process callers such as tests; the actor never sets it, so
 * nothing on the bus can make a worker load a module.
 *
 * `port` is the task's private channel: the worker says "started" (the deadline starts then,
 * not while the task waits in the queue) and sends progress; the pool sends "abort" (the tool's
 * AbortSignal fires; a tool that does not stop is terminated with its worker).
 */
import type { MessagePort } from "node:worker_threads";
import type { ErrorCode } from "../../shared/contract/index.js";
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
  port: MessagePort;
}

export type WorkerToPool =
  | { type: "started" }
  | { type: "progress"; message: string; fraction?: number }
  /** the last message of a task: everything it posted before has arrived */
  | { type: "done" };

export type PoolToWorker = { type: "abort"; code: ErrorCode; message: string };
