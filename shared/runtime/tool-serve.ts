/**
 * Serving tools from an actor of your own (the pattern test/fixtures/ext-tools shows): the
 * catalog on `lurk.tools.list` and its announcement (tool-catalog.ts), and one
 * `lurk.tools.call.<name>` endpoint per tool, in the actor's own queue group. The approval rules
 * apply to these tools as to the built-in ones: a tool whose definition says `needsApproval`,
 * or that `tools.requireApproval` / `agents[].requireApproval` names (config-tools-approval.ts),
 * runs only after a human approved that exact call (approval-gate.ts: request, wait, signed
 * token, redeemed once); the catalog shows `needsApproval: true` for it. A denial, an expiry or
 * a bad token is a TOOL_DENIED reply the model reads; the handler is not called.
 * Cancellation: the handler gets `ctx.signal` (tool-inflight.ts), fired by `lurk.tools.cancel`
 * naming the call (or its run), by a newer request for the same call, by the actor stopping,
 * and, when the actor's NATS user may subscribe to them, by its run's abort (`lurk.run.ctl`)
 * and end (terminal run events). The caller gets an ABORTED reply at once; the handler should
 * stop its work (its late result is dropped). A wait for an approval is cancelled the same way.
 * Policy: with `opts.policy` the actor applies a tool policy of its own (e.g. the built-in
 * layered one: tool-serve-policy.ts layeredToolPolicy): a tool it refuses for a request is left
 * out of that request's catalog, and a call of it is a TOOL_DENIED reply (checked before any
 * approval).
 * Explain: when the actor's NATS user may subscribe to `lurk.tools.explain`, it answers it for
 * these tools in its queue group (tool-serve-explain.ts: the policy's decision per tool, with
 * the layer and rule of a layered policy, and the approval rules), so `lurkbot tools --explain`
 * lists them next to the built-in tools.
 * Tools that change at run time: serveToolSet (its `set(tools)`, then `announce()`); the mcp actor uses it.
 * Grants: the actor's NATS user needs approvals request/wait/redeem, $SRV.INFO.approvals and
 * lurk.tools.cancel, and for the run abort/end the run control and terminal run event subjects
 * (the `tools-ext` user has them all, and lurk.tools.explain).
 */
import { actorGrants, LurkError, toolCallReply, toolCallRequest, toolProgressSchema, type SessionType, type ToolCallReply, type ToolCallRequest, type ToolDefinition } from "../contract/index.js";
import type { ActorRuntime } from "./actor.js";
import { approvalGateFor } from "./approval-gate.js";
import { configRequiresApproval } from "./config-tools-approval.js";
import type { EndpointHandlerContext } from "./service.js";
import { serveToolCatalog, type ServedToolCatalog } from "./tool-catalog.js";
import { InflightCalls } from "./tool-inflight.js";
import { TOOL_GROUPS, type PolicyLayer, type ToolDecision } from "./tool-policy.js";
import { explainServedTools } from "./tool-serve-explain.js";

export interface ServedToolContext extends EndpointHandlerContext {
  /** fires when the call is cancelled (see above); its reason is a LurkError ABORTED */
  signal: AbortSignal;
  /** a `lurk.tools.progress.<runId>` note for the caller (at most one per 250 ms; never throws) */
  progress(message: string): void;
}

export interface ServedTool {
  /** the catalog entry; `actor` is this actor's name */
  definition: Omit<ToolDefinition, "actor">;
  /** what an approval notice shows next to the tool's name (e.g. the script to run); default: a `command` argument; may be async */
  approvalSummary?(req: ToolCallRequest): string | undefined | Promise<string | undefined>;
  /** runs an allowed (and, when needed, approved) call; should stop when `ctx.signal` fires */
  handler(req: ToolCallRequest, ctx: ServedToolContext): Promise<ToolCallReply> | ToolCallReply;
}

/** What a policy sees of a request: the catalog's and a call's common fields. */
export interface ServedToolPolicyRequest {
  agentId?: string | undefined;
  sessionKey?: string | undefined;
  /** a call's (the key's type wins when it parses) */
  sessionType?: SessionType | undefined;
  model?: string | undefined;
}

/** A served tool's decision: a layer of the built-in policy, or "actor" (a rule of the serving actor's own). */
export type ServedToolDecision = Omit<ToolDecision, "layer"> & { layer: PolicyLayer | "actor" };

/** null: the request may see and call the tool; otherwise the model-readable reason it may not. */
export interface ServedToolPolicy {
  (definition: ServedTool["definition"], req: ServedToolPolicyRequest): string | null;
  /** the decision the verdict comes from (`lurk.tools.explain`); absent: the policy says only yes or no */
  explain?(definition: ServedTool["definition"], req: ServedToolPolicyRequest): ServedToolDecision;
}

export interface ServeToolsOptions {
  /** the queue group of the catalog and the calls (not "tools": the built-in actor's) */
  queue: string;
  policy?: ServedToolPolicy;
}

const PROGRESS_MIN_INTERVAL_MS = 250;

/** Publishes `lurk.tools.progress.<runId>` notes of one call, at most one per 250 ms (the tools actor's own calls too). */
export function progressPublisher(rt: ActorRuntime, req: ToolCallRequest): (message: string, fraction?: number) => void {
  let last = 0;
  return (message, fraction) => {
    const now = Date.now();
    if (now - last < PROGRESS_MIN_INTERVAL_MS) return;
    last = now;
    const parsed = toolProgressSchema.safeParse({
      type: "lurk.tools.progress.v1", id: `${req.toolCallId}-${now}`, ts: now, runId: req.runId, sessionKey: req.sessionKey,
      causationId: req.id, toolCallId: req.toolCallId, message: message.slice(0, 2000), ...(fraction === undefined ? {} : { fraction }),
    });
    if (!parsed.success) return;
    try {
      rt.nc.publish(rt.subjects.toolProgress(req.runId), JSON.stringify(parsed.data));
    } catch (err) {
      rt.log.warn({ err }, "could not publish tool progress");
    }
  };
}

/** Whether a call of this tool by `agentId` needs a human approval (definition or config; groups as the built-in gate reads them). */
function servedToolNeedsApproval(rt: ActorRuntime, definition: ServedTool["definition"], agentId?: string): boolean {
  return definition.needsApproval || configRequiresApproval(rt.config, agentId, definition, TOOL_GROUPS);
}

/** Whether the contract lets `rt`'s NATS user subscribe to every one of `subjects`. */
function maySubscribe(rt: ActorRuntime, subjects: readonly string[]): boolean {
  const grant = actorGrants(rt.subjects.prefix).find((g) => g.user === rt.name);
  return !!grant && subjects.every((subject) => grant.subscribe.includes(subject));
}

/** The handler's reply, or ABORTED as soon as `signal` fires (the handler is told by the signal). */
async function untilCancelled(work: () => Promise<ToolCallReply> | ToolCallReply, req: ToolCallRequest, signal: AbortSignal, started: number): Promise<ToolCallReply> {
  const aborted = (): ToolCallReply => ({
    toolCallId: req.toolCallId,
    content: [{ type: "text", text: signal.reason instanceof Error ? signal.reason.message : "the tool call was cancelled" }],
    isError: true, errorCode: "ABORTED", durationMs: Date.now() - started,
  });
  if (signal.aborted) return aborted();
  let onAbort!: () => void;
  const cancelled = new Promise<ToolCallReply>((resolve) => (onAbort = () => resolve(aborted())));
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    const running = Promise.resolve().then(work);
    // a handler failing because it was cancelled is a cancellation, not an error
    running.catch(() => undefined);
    return await Promise.race([running.catch((err: unknown) => (signal.aborted ? aborted() : Promise.reject(err))), cancelled]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

/** A served tool set whose tools may change while the actor runs (serveToolSet). */
export interface ServedToolSet extends ServedToolCatalog {
  /**
   * Replaces the tools served: the catalog and explain answer with the new list at once; a new
   * name gets its call endpoint now; a name no longer in the list keeps its subscription (the
   * services framework cannot drop one) and answers TOOL_UNKNOWN. Call `announce()` afterwards
   * so agent-runners gather the catalog again.
   */
  set(tools: readonly ServedTool[]): void;
}

/** Serves the catalog and the calls of `tools` in queue group `queue`. */
export function serveTools(rt: ActorRuntime, tools: readonly ServedTool[], opts: ServeToolsOptions): ServedToolCatalog {
  return serveToolSet(rt, tools, opts);
}

/** serveTools for a tool list that changes at run time (e.g. the mcp actor's servers' tools). */
export function serveToolSet(rt: ActorRuntime, initial: readonly ServedTool[], opts: ServeToolsOptions): ServedToolSet {
  let tools: readonly ServedTool[] = [];
  const byName = new Map<string, ServedTool>();
  const gate = approvalGateFor(rt);
  // cancelled by lurk.tools.cancel, a retry of the same call, the actor stopping (and the run's abort or end when granted)
  const inflight = new InflightCalls(rt, { followRuns: maySubscribe(rt, [rt.subjects.runControlAll, ...rt.subjects.runTerminalAll]) });
  inflight.listen();
  const catalog = serveToolCatalog(rt, (req) => ({
    actor: rt.name,
    tools: tools.filter(({ definition }) => !opts.policy || opts.policy(definition, req) === null)
      .map(({ definition }) => ({ ...definition, actor: rt.name, needsApproval: servedToolNeedsApproval(rt, definition, req.agentId) })),
  }), { queue: opts.queue });
  if (maySubscribe(rt, [rt.subjects.op("tools", "explain")])) {
    rt.serve("tools", "explain", (req) => explainServedTools(rt.config, rt.name, tools, opts.policy, req), { queue: opts.queue });
  } else {
    rt.log.info("this actor's NATS user may not subscribe to lurk.tools.explain: `lurkbot tools --explain` will not list its tools");
  }
  const subscribed = new Set<string>();
  const serveCalls = (name: string): void => {
    subscribed.add(name);
    rt.serveSubject(`call-${name}`, rt.subjects.toolCall(name), toolCallRequest, toolCallReply, async (req, ctx): Promise<ToolCallReply> => {
      const started = Date.now();
      const tool = byName.get(name);
      if (!tool) {
        return { toolCallId: req.toolCallId, content: [{ type: "text", text: `The tool "${name}" is no longer served by ${rt.name}. Do not call it again; use another tool or tell the user.` }], isError: true, errorCode: "TOOL_UNKNOWN", durationMs: 0 };
      }
      const tracked = inflight.track(req.runId, req.toolCallId, rt.signal);
      const { signal } = tracked;
      try {
        return await untilCancelled(async () => {
          const refused = opts.policy?.(tool.definition, req) ?? null;
          if (refused !== null) {
            rt.log.info({ tool: name, runId: req.runId, sessionKey: req.sessionKey }, "tool call refused by the policy");
            return { toolCallId: req.toolCallId, content: [{ type: "text", text: refused }], isError: true, errorCode: "TOOL_DENIED", durationMs: Date.now() - started };
          }
          if (servedToolNeedsApproval(rt, tool.definition, req.agentId)) {
            const denial = await gate.check(name, req, signal, tool.approvalSummary && (() => tool.approvalSummary!(req)));
            if (denial) {
              rt.log.info({ tool: name, runId: req.runId, sessionKey: req.sessionKey, code: denial.code }, "tool call not approved");
              return { toolCallId: req.toolCallId, content: [{ type: "text", text: denial.text }], isError: true, errorCode: denial.code, durationMs: Date.now() - started };
            }
          }
          if (signal.aborted) throw new LurkError("ABORTED", "the tool call was cancelled");
          return tool.handler(req, { ...ctx, signal, progress: progressPublisher(rt, req) });
        }, req, signal, started);
      } finally {
        tracked.done();
      }
    }, { queue: opts.queue });
  };
  const set = (next: readonly ServedTool[]): void => {
    tools = [...next];
    byName.clear();
    for (const tool of tools) {
      byName.set(tool.definition.name, tool);
      if (!subscribed.has(tool.definition.name)) serveCalls(tool.definition.name);
    }
  };
  set(initial);
  return { ...catalog, set };
}
