/**
 * The piscina worker entry: runs one tool call. It finds the tool (a built-in by name, or a
 * module given by absolute path from an in-process caller), validates the arguments again,
 * opens the agent's workspace as a ConfinedFs (sync fs calls on its read path) and calls
 * `execute`. Whatever the tool throws becomes an error result; the reply is checked against
 * the contract and text is byte-capped. The deadline and termination live on the pool side
 * (pool.ts); this side only says "started", forwards progress and turns the pool's "abort"
 * into the tool's AbortSignal.
 */
import { isAbsolute } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { errorCodeSchema, imageBlockSchema, LurkError, textBlockSchema } from "../../shared/contract/index.js";
import { capTextContent, errorResult, resultFromError } from "./content.js";
import { portVectors } from "./embeddings/worker-access.js";
import { ConfinedFs } from "./fs-confined.js";
import { builtinTool } from "./registry.js";
import type { PoolToWorker, ToolTask, WorkerToPool } from "./task.js";
import { describeIssues, isTool, type Tool, type ToolResult } from "./tool.js";

const resultSchema = z.object({
  content: z.array(z.discriminatedUnion("type", [textBlockSchema, imageBlockSchema])),
  isError: z.boolean().optional(),
  errorCode: errorCodeSchema.optional(),
  truncated: z.object({ fullOutputPath: z.string(), totalBytes: z.number().int().nonnegative() }).optional(),
});

export default async function runToolTask(task: ToolTask): Promise<ToolResult> {
  const { port } = task;
  const post = (message: WorkerToPool) => port.postMessage(message);
  const controller = new AbortController();
  // memory.embeddings: vectors come from the actor's thread over the port (embeddings/)
  const vectors = task.embeddings ? portVectors(port, task.embeddings, controller.signal) : undefined;
  port.on("message", (message: PoolToWorker) => {
    if (vectors?.receive(message)) return;
    if (message?.type === "abort" && !controller.signal.aborted) controller.abort(new LurkError(message.code, message.message));
  });
  try {
    post({ type: "started" });
    const tool = await loadTool(task);
    const parsed = tool.parameters.safeParse(task.args);
    if (!parsed.success) return errorResult("TOOL_INVALID_ARGS", `invalid arguments for ${tool.name}: ${describeIssues(parsed.error)}`);
    // sync fs on the read path: this thread runs one task at a time (concurrentTasksPerWorker 1)
    const fs = await ConfinedFs.create(task.workspace, { syncIo: true, ...(task.readOnlyRoots ? { readOnlyRoots: task.readOnlyRoots } : {}) });
    const result = await tool.execute(parsed.data, {
      signal: controller.signal,
      fs,
      limits: task.limits,
      ...(task.call ? { call: task.call } : {}),
      ...(vectors ? { embeddings: vectors.access } : {}),
      progress: (message, fraction) => post({ type: "progress", message: String(message).slice(0, 2000), ...(fraction === undefined ? {} : { fraction }) }),
    });
    const checked = resultSchema.safeParse(result);
    if (!checked.success) return errorResult("TOOL_FAILED", `the ${tool.name} tool returned an invalid result: ${describeIssues(checked.error)}`);
    // a paging tool stays under the cap itself; this is the net for the others
    return capTextContent(checked.data as ToolResult, task.limits.outputCapBytes + 1024);
  } catch (err) {
    return resultFromError(controller.signal.aborted && !LurkError.is(err) ? controller.signal.reason : err);
  } finally {
    post({ type: "done" });
    port.close();
  }
}

async function loadTool(task: ToolTask): Promise<Tool> {
  if (task.modulePath === undefined) {
    const tool = builtinTool(task.tool);
    if (!tool) throw new LurkError("TOOL_UNKNOWN", `no tool named "${task.tool}" here`);
    return tool;
  }
  if (!isAbsolute(task.modulePath)) throw new LurkError("TOOL_UNKNOWN", "a tool module path must be absolute");
  const mod = (await import(pathToFileURL(task.modulePath).href)) as { default?: unknown };
  if (!isTool(mod.default)) throw new LurkError("TOOL_UNKNOWN", `${task.modulePath} does not export a tool as its default export`);
  return mod.default;
}
