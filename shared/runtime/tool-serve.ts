/**
 * Serving tools from an actor of your own (the pattern test/fixtures/ext-tools shows): the
 * catalog on `lurk.tools.list` and its announcement (tool-catalog.ts), and one
 * `lurk.tools.call.<name>` endpoint per tool, in the actor's own queue group. The approval rules
 * apply to these tools as to the built-in ones: a tool whose definition says `needsApproval`,
 * or that `tools.requireApproval` / `agents[].requireApproval` names (config-tools-approval.ts),
 * runs only after a human approved that exact call (approval-gate.ts: request, wait, signed
 * token, redeemed once); the catalog shows `needsApproval: true` for it. A denial, an expiry or
 * a bad token is a TOOL_DENIED reply the model reads; the handler is not called.
 * Grants: the actor's NATS user needs approvals request/wait/redeem and $SRV.INFO.approvals
 * (the `tools-ext` user has them).
 */
import { toolCallReply, toolCallRequest, type ToolCallReply, type ToolCallRequest, type ToolDefinition } from "../contract/index.js";
import type { ActorRuntime } from "./actor.js";
import { approvalGateFor, approvalHeartbeat } from "./approval-gate.js";
import { configRequiresApproval } from "./config-tools-approval.js";
import type { EndpointHandlerContext } from "./service.js";
import { serveToolCatalog, type ServedToolCatalog } from "./tool-catalog.js";

export interface ServedTool {
  /** the catalog entry; `actor` is this actor's name */
  definition: Omit<ToolDefinition, "actor">;
  /** runs an allowed (and, when needed, approved) call */
  handler(req: ToolCallRequest, ctx: EndpointHandlerContext): Promise<ToolCallReply> | ToolCallReply;
}

/** Whether a call of this tool by `agentId` needs a human approval (definition or config). */
export function servedToolNeedsApproval(rt: ActorRuntime, definition: ServedTool["definition"], agentId?: string): boolean {
  return definition.needsApproval || configRequiresApproval(rt.config, agentId, definition);
}

/** Serves the catalog and the calls of `tools` in queue group `queue`. */
export function serveTools(rt: ActorRuntime, tools: readonly ServedTool[], opts: { queue: string }): ServedToolCatalog {
  const gate = approvalGateFor(rt);
  const catalog = serveToolCatalog(rt, (req) => ({
    actor: rt.name,
    tools: tools.map(({ definition }) => ({ ...definition, actor: rt.name, needsApproval: servedToolNeedsApproval(rt, definition, req.agentId) })),
  }), opts);
  for (const tool of tools) {
    const { name } = tool.definition;
    rt.serveSubject(`call-${name}`, rt.subjects.toolCall(name), toolCallRequest, toolCallReply, async (req, ctx): Promise<ToolCallReply> => {
      if (servedToolNeedsApproval(rt, tool.definition, req.agentId)) {
        const started = Date.now();
        const denial = await gate.check(name, req, { onWaiting: approvalHeartbeat(rt, req) });
        if (denial) {
          rt.log.info({ tool: name, runId: req.runId, sessionKey: req.sessionKey, code: denial.code }, "tool call not approved");
          return { toolCallId: req.toolCallId, content: [{ type: "text", text: denial.text }], isError: true, errorCode: denial.code, durationMs: Date.now() - started };
        }
      }
      return tool.handler(req, ctx);
    }, opts);
  }
  return catalog;
}
