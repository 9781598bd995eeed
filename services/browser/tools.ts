/**
 * The two tools this actor serves through serveTools (shared/runtime/tool-serve.ts):
 *  - `browser` (actions in actions.ts), no approval of its own except for `upload`, which by
 *    default waits for a human (upload-approval.ts: the handler asks the approval gate itself);
 *  - `browser_evaluate` (evaluate.ts), `needsApproval: true` in its definition: every call waits
 *    for a human (the approval mechanism is per tool, so evaluate is a tool of its own).
 * Each call: arguments validated here, in the actor's main thread (a bad one is a
 * TOOL_INVALID_ARGS result, the actor serves on), then run in the browser worker thread
 * (host.ts, worker.ts) with a deadline (the request's timeoutMs, else tools.timeoutMs), progress
 * notes, cancellation, the session's restart note and the calling agent's workspace (where
 * downloads are saved and uploads are read); every failure is an error result the
 * model reads (its LurkError code kept across the thread boundary). The reply stays under
 * bus.maxPayloadBytes (text cut, images capped). Logs name the action and tab, never typed
 * text, option values or scripts.
 */
import { LurkError, type ToolCallReply, type ToolCallRequest } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { ServedTool, ServedToolContext } from "../../shared/runtime/tool-serve.js";
import type { BrowserHost } from "./host.js";
import type { CallScope, CallWork } from "./protocol.js";
import { browserArgsSchema, browserDescription, EVALUATE_DESCRIPTION, evaluateArgsSchema, issueLines, jsonSchemaOf, parseBrowserArgs, type BrowserArgs } from "./schema.js";
import { callAgent, callWorkspace, UploadApproval } from "./upload-approval.js";

/** bytes of a reply kept for the envelope and JSON escaping */
const REPLY_OVERHEAD = 16 * 1024;
const GROUPS = ["group:ui", "group:browser"];

/** What an approval notice shows of a browser call other than an upload (never typed text). */
function callSummary(a: BrowserArgs): string {
  return [a.action, a.kind, a.url?.slice(0, 500), a.ref, a.tabId && `in tab ${a.tabId}`].filter(Boolean).join(" ");
}

function cutBytes(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const note = "\n[cut: the reply was over the bus payload cap]";
  return Buffer.from(text).subarray(0, Math.max(0, maxBytes - note.length)).toString("utf8").replace(/\uFFFD$/, "") + note;
}

export function browserTools(rt: ActorRuntime, host: BrowserHost): ServedTool[] {
  const payloadRoom = rt.config.bus.maxPayloadBytes - REPLY_OVERHEAD;

  const uploads = new UploadApproval(rt, host);
  const { downloads, uploads: uploadConfig } = rt.config.browser;

  const run = async (req: ToolCallRequest, { signal, progress }: ServedToolContext, log: Record<string, unknown>, work: CallWork, scope: CallScope = {}): Promise<ToolCallReply> => {
    const started = Date.now();
    const timeoutMs = req.timeoutMs ?? rt.config.tools.timeoutMs;
    let notice: string | undefined;
    let err: LurkError;
    try {
      const result = await host.call(work, { timeoutMs, signal, progress, imageCapBytes: Math.floor((payloadRoom * 3) / 4), workspace: callWorkspace(rt, req.agentId), agentId: callAgent(rt, req.agentId), ...scope });
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

  const description = browserDescription({ downloads: downloads.enabled, uploads: uploadConfig.enabled, uploadApproval: uploadConfig.requireApproval });
  const browserDefinition = { name: "browser", description, parameters: jsonSchemaOf(browserArgsSchema), sideEffects: true, parallelSafe: false, groups: GROUPS, needsApproval: false };
  return [
    {
      definition: browserDefinition,
      // asked only when configuration makes every browser call need approval (tools.requireApproval)
      approvalSummary: (req) => {
        const { parsed } = parseBrowserArgs(req.args);
        if (!parsed) return undefined;
        return parsed.action === "upload" ? uploads.summary(req, parsed) : callSummary(parsed);
      },
      handler: async (req, ctx) => {
        const { parsed, problems } = parseBrowserArgs(req.args);
        if (!parsed) return invalid(req, "browser", problems);
        const log = { tool: "browser", action: parsed.action, kind: parsed.kind, tabId: parsed.tabId, ref: parsed.ref };
        let scope: CallScope = {};
        if (parsed.action === "upload") {
          const started = Date.now();
          const admitted = await uploads.admit(req, parsed, browserDefinition, ctx.signal);
          if (!admitted.ok) {
            rt.log.info({ ...log, runId: req.runId, code: admitted.code }, "browser upload refused");
            return { toolCallId: req.toolCallId, content: [{ type: "text", text: admitted.text }], isError: true, errorCode: admitted.code, durationMs: Date.now() - started };
          }
          scope = admitted.approvalRequired ? { approvalRequired: true, approvedOrigin: admitted.approvedOrigin } : {};
        }
        return run(req, ctx, log, { tool: "browser", args: parsed }, scope);
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
