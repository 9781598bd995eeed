/**
 * A LurkBot run's events as ACP session/update payloads: message deltas -> agent_message_chunk,
 * thinking deltas -> agent_thought_chunk, tool_start -> tool_call (in_progress, its kind and a
 * title from the tool's main argument, the arguments as rawInput), tool_end -> tool_call_update
 * (completed or failed, the result's preview as text content). The other events (usage, turns,
 * compaction, provider switches) have no ACP counterpart and map to nothing. Pure: the caller
 * sends what comes back and keeps the TurnState.
 */
import type { RunEventBody } from "../../../shared/contract/index.js";
import type { SessionUpdate, ToolCallStatus, ToolKind } from "./schema.js";

const KINDS: Record<string, ToolKind> = {
  read: "read", memory_get: "read", sessions_history: "read", session_status: "read", agents_list: "read",
  write: "edit", edit: "edit", apply_patch: "edit", media_save: "edit",
  exec: "execute", process: "execute", browser_evaluate: "execute",
  web_fetch: "fetch", browser: "fetch",
  web_search: "search", memory_search: "search", sessions_list: "search",
};

export function toolKind(name: string): ToolKind {
  return KINDS[name] ?? "other";
}

/** the argument that says what a call does, in the order tools name it */
const MAIN_ARGS = ["command", "path", "file", "url", "query", "pattern", "action", "name", "message"];
const TITLE_MAX = 120;

export function toolTitle(name: string, args: Record<string, unknown>): string {
  const key = MAIN_ARGS.find((k) => typeof args[k] === "string" && (args[k] as string).trim() !== "");
  const main = key ? (args[key] as string).replace(/\s+/g, " ").trim() : "";
  const title = main ? `${name}: ${main}` : name;
  return title.length > TITLE_MAX ? `${title.slice(0, TITLE_MAX - 1)}…` : title;
}

export interface ToolCallState {
  name: string;
  title: string;
  kind: ToolKind;
  status: ToolCallStatus;
  args: Record<string, unknown>;
}

/** What one prompt turn has seen of its run. */
export interface TurnState {
  /** the reply's text was streamed (else the final text is sent as one chunk) */
  streamed: boolean;
  tools: Map<string, ToolCallState>;
  /** the stop reason of the run's last model turn */
  lastStopReason?: string;
}

export function newTurnState(): TurnState {
  return { streamed: false, tools: new Map() };
}

export function mapRunEvent(event: RunEventBody, state: TurnState): SessionUpdate[] {
  switch (event.kind) {
    case "message_delta":
      if (!event.text) return [];
      state.streamed = true;
      return [{ sessionUpdate: "agent_message_chunk", content: { type: "text", text: event.text } }];
    case "thinking_delta":
      return event.text ? [{ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: event.text } }] : [];
    case "tool_start": {
      const known = state.tools.get(event.toolCallId);
      if (known?.status === "pending") {
        // announced already for its approval (the notice came first): the call's arguments, still pending
        known.args = event.args;
        return [{ sessionUpdate: "tool_call_update", toolCallId: event.toolCallId, rawInput: event.args }];
      }
      const tool: ToolCallState = { name: event.name, title: toolTitle(event.name, event.args), kind: toolKind(event.name), status: "in_progress", args: event.args };
      state.tools.set(event.toolCallId, tool);
      return [{ sessionUpdate: "tool_call", toolCallId: event.toolCallId, title: tool.title, kind: tool.kind, status: tool.status, rawInput: event.args }];
    }
    case "tool_end": {
      const status: ToolCallStatus = event.isError ? "failed" : "completed";
      const known = state.tools.get(event.toolCallId);
      if (known) known.status = status;
      const content = event.preview ? [{ type: "content" as const, content: { type: "text" as const, text: event.preview } }] : [];
      // a resumed run reports tools it ran before: announce those first
      const announce: SessionUpdate[] = known ? [] : [{ sessionUpdate: "tool_call", toolCallId: event.toolCallId, title: event.name, kind: toolKind(event.name), status: "in_progress" }];
      if (!known) state.tools.set(event.toolCallId, { name: event.name, title: event.name, kind: toolKind(event.name), status, args: {} });
      return [...announce, { sessionUpdate: "tool_call_update", toolCallId: event.toolCallId, status, content, rawOutput: { isError: event.isError, durationMs: Math.round(event.durationMs) } }];
    }
    case "turn_end":
      state.lastStopReason = event.stopReason;
      return [];
    default:
      return [];
  }
}

/**
 * The one tool call of this turn named `tool` that has not ended, or undefined when there is
 * none or more than one (which of two parallel calls an approval is for cannot be told by name).
 */
export function onlyOpenToolCall(state: TurnState, tool: string): string | undefined {
  const open = [...state.tools].filter(([, t]) => t.name === tool && (t.status === "in_progress" || t.status === "pending"));
  return open.length === 1 ? open[0]![0] : undefined;
}
