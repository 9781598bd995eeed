/**
 * The two tools this actor serves through serveTools (shared/runtime/tool-serve.ts):
 *  - `browser` (actions in actions.ts), no approval of its own;
 *  - `browser_evaluate` (evaluate.ts), `needsApproval: true` in its definition: every call waits
 *    for a human (the approval mechanism is per tool, so evaluate is a tool of its own).
 * Each call: arguments validated (a bad one is a TOOL_INVALID_ARGS result, the actor serves on),
 * a deadline (the request's timeoutMs, else tools.timeoutMs), progress notes, the session's
 * restart note, and every failure as an error result the model reads. The reply stays under
 * bus.maxPayloadBytes (text cut, images capped). Logs name the action and tab, never typed
 * text, option values or scripts.
 */
import { LurkError, type ToolCallReply, type ToolCallRequest } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { ServedTool } from "../../shared/runtime/tool-serve.js";
import { runBrowserAction, type ActionContext, type ActionResult } from "./actions.js";
import { runEvaluate } from "./evaluate.js";
import { progressPublisher } from "./progress.js";
import { BROWSER_DESCRIPTION, browserArgsSchema, EVALUATE_DESCRIPTION, evaluateArgsSchema, jsonSchemaOf, parseBrowserArgs } from "./schema.js";
import type { BrowserSession } from "./session.js";

/** bytes of a reply kept for the envelope and JSON escaping */
const REPLY_OVERHEAD = 16 * 1024;
const GROUPS = ["group:ui", "group:browser"];

function cutBytes(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const note = "\n[cut: the reply was over the bus payload cap]";
  return Buffer.from(text).subarray(0, Math.max(0, maxBytes - note.length)).toString("utf8").replace(/\uFFFD$/, "") + note;
}

type Work = (ctx: ActionContext) => Promise<ActionResult>;

export function browserTools(rt: ActorRuntime, session: BrowserSession, profileDir: string): ServedTool[] {
  const payloadRoom = rt.config.bus.maxPayloadBytes - REPLY_OVERHEAD;

  const run = async (req: ToolCallRequest, signal: AbortSignal, log: Record<string, unknown>, work: Work): Promise<ToolCallReply> => {
    const started = Date.now();
    const end = session.begin();
    const timeoutMs = req.timeoutMs ?? rt.config.tools.timeoutMs;
    let timer: NodeJS.Timeout | undefined;
    try {
      const ctx: ActionContext = {
        session, config: rt.config.browser, profileDir, allow: rt.config.tools.web.allowPrivateHosts, signal,
        progress: progressPublisher(rt, req), imageCapBytes: Math.floor((payloadRoom * 3) / 4),
      };
      const deadline = new Promise<never>((_r, reject) => (timer = setTimeout(() => reject(new LurkError("TIMEOUT", `the browser call did not finish within ${timeoutMs} ms`)), timeoutMs)));
      const result = await Promise.race([work(ctx), deadline]);
      const notice = session.takeNotice();
      const image = result.image ? [{ type: "image" as const, mime: result.image.mime, dataBase64: result.image.dataBase64 }] : [];
      const text = cutBytes(notice ? `${notice}\n${result.text}` : result.text, payloadRoom - (result.image?.dataBase64.length ?? 0));
      rt.log.info({ ...log, runId: req.runId, durationMs: Date.now() - started }, "browser call done");
      return { toolCallId: req.toolCallId, content: [{ type: "text", text }, ...image], isError: false, durationMs: Date.now() - started };
    } catch (err) {
      const e = LurkError.from(err);
      rt.log[e.code === "INTERNAL" ? "warn" : "info"]({ ...log, runId: req.runId, code: e.code, err: e.code === "INTERNAL" ? err : undefined }, "browser call failed");
      const notice = session.takeNotice();
      return { toolCallId: req.toolCallId, content: [{ type: "text", text: cutBytes(`${notice ? `${notice}\n` : ""}${e.message}`, payloadRoom) }], isError: true, errorCode: e.code, durationMs: Date.now() - started };
    } finally {
      clearTimeout(timer);
      end();
    }
  };

  const whereTo = (tabId: unknown): string => {
    try {
      const tab = session.isRunning ? session.tab(typeof tabId === "string" ? tabId : undefined) : undefined;
      return tab ? `in tab ${tab.id} (${tab.page.url().slice(0, 300)}): ` : "";
    } catch {
      return "";
    }
  };

  const invalid = (req: ToolCallRequest, tool: string, problems: string[]): ToolCallReply => ({
    toolCallId: req.toolCallId, isError: true, errorCode: "TOOL_INVALID_ARGS", durationMs: 0,
    content: [{ type: "text", text: `invalid arguments for ${tool}: ${problems.join("; ")}` }],
  });

  return [
    {
      definition: { name: "browser", description: BROWSER_DESCRIPTION, parameters: jsonSchemaOf(browserArgsSchema), sideEffects: true, parallelSafe: false, groups: GROUPS, needsApproval: false },
      handler: (req, { signal }) => {
        const { parsed, problems } = parseBrowserArgs(req.args);
        if (!parsed) return invalid(req, "browser", problems);
        return run(req, signal, { tool: "browser", action: parsed.action, kind: parsed.kind, tabId: parsed.tabId, ref: parsed.ref }, (ctx) => runBrowserAction(parsed, ctx));
      },
    },
    {
      definition: { name: "browser_evaluate", description: EVALUATE_DESCRIPTION, parameters: jsonSchemaOf(evaluateArgsSchema), sideEffects: true, parallelSafe: false, groups: GROUPS, needsApproval: true },
      // the approval notice shows the script and the page it would run in
      approvalSummary: (req) => (typeof req.args.expression === "string" ? `${whereTo(req.args.tabId)}${req.args.expression}` : undefined),
      handler: (req, { signal }) => {
        const parsed = evaluateArgsSchema.safeParse(req.args);
        if (!parsed.success) return invalid(req, "browser_evaluate", parsed.error.issues.slice(0, 8).map((i) => `${i.path.join(".") || "(arguments)"}: ${i.message}`));
        return run(req, signal, { tool: "browser_evaluate", tabId: parsed.data.tabId }, async (ctx) => ({ text: await runEvaluate(parsed.data, ctx) }));
      },
    },
  ];
}
