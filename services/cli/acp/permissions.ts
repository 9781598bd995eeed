/**
 * Approvals as ACP permission requests. When a run waits for a human approval (the approvals
 * actor's "approval" notice in the session's conversation), the editor is asked with
 * session/request_permission about the tool call it already shows (the call the notice's
 * toolCallId names; else a tool call announced for the approval), titled with the approval's
 * summary, which is also its text content. The answer is decided the way the
 * terminal decides: `/approve ID` or `/deny ID` sent in the same session through the router.
 * LurkBot keeps no "always" rules for approvals, so only allow_once and reject_once are offered;
 * a client that answers with an allow_always or reject_always option of its own gets it taken
 * as once. Anything else — a cancelled request, an unknown option, a failed request — denies
 * (fail closed).
 */
import type { OutboundMessage } from "../../../shared/contract/index.js";
import { onlyOpenToolCall, toolKind, type TurnState } from "./events-map.js";
import { permissionResponse, type PermissionOption, type SessionUpdate, type ToolCallContent, type ToolCallFields } from "./schema.js";

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

/** the approval's summary (the approvals actor's `command`: exec's command, an upload's site and files) on one line, cut for a title */
function summaryLine(command: string): string {
  const line = command.replace(/\s+/g, " ").trim();
  return line.length > TITLE_SUMMARY_MAX ? `${line.slice(0, TITLE_SUMMARY_MAX - 1)}…` : line;
}
const TITLE_SUMMARY_MAX = 110;

/**
 * The tool call an approval is for, and the updates to send first when the run has not
 * announced it (a tool of another actor, a resumed run). The call is found by the notice's
 * `toolCallId`; a notice without one (an older approvals actor) takes the one open call of
 * that tool, and only when there is exactly one (two parallel calls of one tool would be a
 * guess). Otherwise the call is announced here, under the notice's tool call id when it has one.
 * The approval's summary (`command`) is always the title and the text content: it is what the
 * human decides on (an upload's site and files say more than its raw arguments).
 */
export function approvalToolCall(approval: Approval, state: TurnState): { toolCall: ToolCallFields; announce: SessionUpdate[] } {
  const summary = approval.command !== undefined && approval.command.trim() !== "" ? approval.command : undefined;
  const title = (fallback: string) => (summary ? `${approval.tool}: ${summaryLine(summary)}` : fallback);
  const content: ToolCallContent[] = summary ? [{ type: "content", content: { type: "text", text: summary } }] : [];
  const byId = approval.toolCallId !== undefined && state.tools.has(approval.toolCallId) ? approval.toolCallId : undefined;
  const byName = approval.toolCallId === undefined ? onlyOpenToolCall(state, approval.tool) : undefined;
  const known = byId ?? byName;
  if (known) {
    const t = state.tools.get(known)!;
    return { toolCall: { toolCallId: known, title: title(t.title), kind: t.kind, status: "pending", content, rawInput: t.args }, announce: [] };
  }
  const toolCallId = approval.toolCallId ?? `approval-${approval.approvalId}`;
  const args = summary ? { command: summary } : {};
  const shown = title(approval.tool);
  state.tools.set(toolCallId, { name: approval.tool, title: shown, kind: toolKind(approval.tool), status: "pending", args });
  const toolCall: ToolCallFields = { toolCallId, title: shown, kind: toolKind(approval.tool), status: "pending", content, ...(summary ? { rawInput: args } : {}) };
  return { toolCall, announce: [{ sessionUpdate: "tool_call", ...toolCall, title: shown }] };
}

/** The params of session/request_permission. */
export function permissionRequest(sessionId: string, toolCall: ToolCallFields): { sessionId: string; toolCall: ToolCallFields; options: readonly PermissionOption[] } {
  return { sessionId, toolCall, options: PERMISSION_OPTIONS };
}
