/**
 * Approvals as ACP permission requests. When a run waits for a human approval (the approvals
 * actor's "approval" notice in the session's conversation), the editor is asked with
 * session/request_permission about the tool call it already shows (the open call of that tool
 * in this turn; else a tool call announced for the approval). The answer is decided the way the
 * terminal decides: `/approve ID` or `/deny ID` sent in the same session through the router.
 * LurkBot keeps no "always" rules for approvals, so only allow_once and reject_once are offered;
 * a client that answers with an allow_always or reject_always option of its own gets it taken
 * as once. Anything else — a cancelled request, an unknown option, a failed request — denies
 * (fail closed).
 */
import type { OutboundMessage } from "../../../shared/contract/index.js";
import { openToolCall, toolKind, type TurnState } from "./events-map.js";
import { permissionResponse, type PermissionOption, type SessionUpdate, type ToolCallFields } from "./schema.js";

export const PERMISSION_OPTIONS: readonly PermissionOption[] = [
  { optionId: "allow_once", name: "Allow", kind: "allow_once" },
  { optionId: "reject_once", name: "Deny", kind: "reject_once" },
];

export type Decision = "approve" | "deny";

/** The decision an answer to session/request_permission stands for. */
export function decisionOf(answer: unknown): { decision: Decision; cancelled: boolean } {
  const parsed = permissionResponse.safeParse(answer);
  if (!parsed.success) return { decision: "deny", cancelled: false };
  const outcome = parsed.data.outcome;
  if (outcome.outcome === "cancelled") return { decision: "deny", cancelled: true };
  return { decision: /^allow(_once|_always)?$/.test(outcome.optionId) ? "approve" : "deny", cancelled: false };
}

export type Approval = NonNullable<OutboundMessage["approval"]>;

/**
 * The tool call an approval is for, and the updates to send first when the run has not
 * announced it (a tool of another actor, a resumed run).
 */
export function approvalToolCall(approval: Approval, state: TurnState): { toolCall: ToolCallFields; announce: SessionUpdate[] } {
  const open = openToolCall(state, approval.tool);
  if (open) {
    const t = state.tools.get(open)!;
    return { toolCall: { toolCallId: open, title: t.title, kind: t.kind, status: "pending", rawInput: t.args }, announce: [] };
  }
  const toolCallId = `approval-${approval.approvalId}`;
  const title = approval.command ? `${approval.tool}: ${approval.command.replace(/\s+/g, " ").slice(0, 110)}` : approval.tool;
  state.tools.set(toolCallId, { name: approval.tool, title, kind: toolKind(approval.tool), status: "pending", args: approval.command ? { command: approval.command } : {} });
  const toolCall: ToolCallFields = { toolCallId, title, kind: toolKind(approval.tool), status: "pending", ...(approval.command ? { rawInput: { command: approval.command } } : {}) };
  return { toolCall, announce: [{ sessionUpdate: "tool_call", ...toolCall, title }] };
}

/** The params of session/request_permission. */
export function permissionRequest(sessionId: string, toolCall: ToolCallFields): { sessionId: string; toolCall: ToolCallFields; options: readonly PermissionOption[] } {
  return { sessionId, toolCall, options: PERMISSION_OPTIONS };
}
