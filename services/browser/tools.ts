/**
 * The two tools this actor serves through serveTools (shared/runtime/tool-serve.ts):
 *  - `browser` (actions in actions.ts), no approval of its own;
 *  - `browser_evaluate` (evaluate.ts), `needsApproval: true` in its definition: every call waits
 *    for a human (the approval mechanism is per tool, so evaluate is a tool of its own).
 * Each call: arguments validated here, in the actor's main thread (a bad one is a
 * TOOL_INVALID_ARGS result, the actor serves on), then run in the browser worker thread
 * (host.ts, worker.ts) with a deadline (the request's timeoutMs, else tools.timeoutMs), progress
 * notes, cancellation and the session's restart note; every failure is an error result the
 * model reads (its LurkError code kept across the thread boundary). The reply stays under
 * bus.maxPayloadBytes (text cut, images capped). Logs name the action and tab, never typed
 * text, option values or scripts.
 */
import { LurkError, type ToolCallReply, type ToolCallRequest } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { ServedTool, ServedToolContext } from "../../shared/runtime/tool-serve.js";
import type { BrowserHost } from "./host.js";
import type { CallWork } from "./protocol.js";
import { BROWSER_DESCRIPTION, browserArgsSchema, EVALUATE_DESCRIPTION, evaluateArgsSchema, issueLines, jsonSchemaOf, parseBrowserArgs } from "./schema.js";

/** bytes of a reply kept for the envelope and JSON escaping */
const REPLY_OVERHEAD = 16 * 1024;
const GROUPS = ["group:ui", "group:browser"];

function cutBytes(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const note = "\n[cut: the reply was over the bus payload cap]";
  return Buffer.from(text).subarray(0, Math.max(0, maxBytes - note.length)).toString("utf8").replace(/\uFFFD$/, "") + note;
}

export function browserTools(rt: ActorRuntime, host: BrowserHost): ServedTool[] {
  const payloadRoom = rt.config.bus.maxPayloadBytes - REPLY_OVERHEAD;

  const run = async (req: ToolCallRequest, { signal, progress }: ServedToolContext, log: Record<string, unknown>, work: CallWork): Promise<ToolCallReply> => {
    const started = Date.now();
    const timeoutMs = req.timeoutMs ?? rt.config.tools.timeoutMs;
    let notice: string | undefined;
    let err: LurkError;
    try {
      const result = await host.call(work, { timeoutMs, signal, progress, imageCapBytes: Math.floor((payloadRoom * 3) / 4) });
      notice = result.notice;
      if (result.ok) {
        const image = result.image ? [{ type: "image" as const, mime: result.image.mime, dataBase64: Buffer.from(result.image.bytes.buffer, result.image.bytes.byteOffset, result.image.bytes.byteLength).toString("base64") }] : [];
        const text = cutBytes(notice ? `${notice}\n${result.text}` : result.text, payloadRoom - (image[0]?.dataBase64.length ?? 0));
        rt.log.info({ ...log, runId: req.runId, durationMs: Date.now() - started }, "browser call done");
        return { toolCallId: req.toolCallId, content: [{ type: "text", text }, ...image], isError: false, durationMs: Date.now() - started };
      }
      err = result.error;
    } catch (thrown) {
      err = LurkError.from(thrown);
    } finally {
      // the end of the browser work is activity too: the idle collection comes after it (memory.ts)
      rt.activity.count++;
    }
    rt.log[err.code === "INTERNAL" ? "warn" : "info"]({ ...log, runId: req.runId, code: err.code, err: err.code === "INTERNAL" ? err : undefined }, "browser call failed");
    return { toolCallId: req.toolCallId, content: [{ type: "text", text: cutBytes(`${notice ? `${notice}\n` : ""}${err.message}`, payloadRoom) }], isError: true, errorCode: err.code, durationMs: Date.now() - started };
  };

  const invalid = (req: ToolCallRequest, tool: string, problems: string[]): ToolCallReply => ({
    toolCallId: req.toolCallId, isError: true, errorCode: "TOOL_INVALID_ARGS", durationMs: 0,
    content: [{ type: "text", text: `invalid arguments for ${tool}: ${problems.join("; ")}` }],
  });

  return [
    {
      definition: { name: "browser", description: BROWSER_DESCRIPTION, parameters: jsonSchemaOf(browserArgsSchema), sideEffects: true, parallelSafe: false, groups: GROUPS, needsApproval: false },
      handler: (req, ctx) => {
        const { parsed, problems } = parseBrowserArgs(req.args);
        if (!parsed) return invalid(req, "browser", problems);
        return run(req, ctx, { tool: "browser", action: parsed.action, kind: parsed.kind, tabId: parsed.tabId, ref: parsed.ref }, { tool: "browser", args: parsed });
      },
    },
    {
      definition: { name: "browser_evaluate", description: EVALUATE_DESCRIPTION, parameters: jsonSchemaOf(evaluateArgsSchema), sideEffects: true, parallelSafe: false, groups: GROUPS, needsApproval: true },
      // the approval notice shows the script and the page it would run in (asked of the worker)
      approvalSummary: async (req) => (typeof req.args.expression === "string" ? `${await host.where(typeof req.args.tabId === "string" ? req.args.tabId : undefined)}${req.args.expression}` : undefined),
      handler: (req, ctx) => {
        const parsed = evaluateArgsSchema.safeParse(req.args);
        if (!parsed.success) return invalid(req, "browser_evaluate", issueLines(parsed.error));
        return run(req, ctx, { tool: "browser_evaluate", tabId: parsed.data.tabId }, { tool: "browser_evaluate", args: parsed.data });
      },
    },
  ];
}
