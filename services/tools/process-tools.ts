/**
 * Tools with `runsIn: "process"` (exec): they spawn child processes, which belongs to the
 * actor, not to a pool worker. Same contract as the pool: the arguments are already
 * validated, the tool gets an AbortSignal that fires at the deadline (reason: TIMEOUT) or on
 * cancellation (ABORTED), a ConfinedFs of the workspace, and `ctx.host`. Whatever it throws is
 * an error result; text is byte-capped like the worker does.
 */
import { LurkError } from "../../shared/contract/index.js";
import { cancelReason } from "./attempt.js";
import { capTextContent, resultFromError } from "./content.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { DocumentPool } from "../../shared/runtime/documents/pool.js";
import type { ExecHost } from "./exec/sandbox.js";
import type { JobHost } from "./jobs/route.js";
import { ConfinedFs } from "./fs-confined.js";
import type { RunToolOptions } from "./pool.js";
import type { Tool, ToolResult } from "./tool.js";

/** What the actor gives process tools besides the exec sandbox. */
export interface ProcessHostExtras {
  rt?: ActorRuntime;
  jobs?: JobHost;
  documents?: Pick<DocumentPool, "extract">;
}

export async function runProcessTool(tool: Tool, opts: RunToolOptions, exec: ExecHost | undefined, extras: ProcessHostExtras = {}): Promise<ToolResult> {
  if (!exec) return resultFromError(new LurkError("TOOL_FAILED", `the ${tool.name} tool is not set up in this actor`));
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new LurkError("TIMEOUT", `the ${tool.name} tool ran longer than ${opts.timeoutMs} ms and was stopped`)), opts.timeoutMs);
  const onCancel = () => controller.abort(cancelReason(opts.signal));
  if (opts.signal?.aborted) onCancel();
  opts.signal?.addEventListener("abort", onCancel, { once: true });
  try {
    const fs = await ConfinedFs.create(opts.workspace, opts.readOnlyRoots ? { readOnlyRoots: opts.readOnlyRoots } : {});
    const result = await tool.execute(opts.args, {
      signal: controller.signal,
      fs,
      limits: opts.limits,
      ...(opts.call ? { call: opts.call } : {}),
      progress: (message, fraction) => opts.onProgress?.(String(message).slice(0, 2000), fraction),
      host: { workspace: fs.realRoot, timeoutMs: opts.timeoutMs, exec, ...(opts.web ? { web: opts.web } : {}), ...extras },
    });
    return capTextContent(result, opts.limits.outputCapBytes + 1024);
  } catch (err) {
    return resultFromError(err);
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", onCancel);
  }
}
