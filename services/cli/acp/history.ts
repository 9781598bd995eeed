/**
 * session/load's replay: the LurkBot session's newest transcript records (the sessions actor's
 * `history`, at most HISTORY_LIMIT records) as the session/update notifications ACP asks for —
 * user messages as user_message_chunk (without the editor-context line LurkBot added), the
 * assistant's text as agent_message_chunk, its tool calls as completed tool_call notifications
 * with their results as content. Undefined when the session does not exist.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { buildSessionKey, type TranscriptRecord } from "../../../shared/contract/index.js";
import { BusClient } from "../../../shared/runtime/client.js";
import { CLI_CHANNEL } from "../channel.js";
import { toolKind, toolTitle } from "./events-map.js";
import type { SessionUpdate } from "./schema.js";

export const HISTORY_LIMIT = 500;
const RESULT_PREVIEW = 2000;
const CONTEXT_LINE = /^\[Editor \(ACP\) context: [^\n]*\]\n\n/;

export function recordUpdates(records: readonly TranscriptRecord[]): SessionUpdate[] {
  const updates: SessionUpdate[] = [];
  const text = (t: string) => ({ type: "text" as const, text: t });
  for (const r of records) {
    const m = r.kind === "message" ? r.message : undefined;
    if (!m) continue;
    if (m.role === "user") {
      const t = m.content.map((b) => (b.type === "text" ? b.text : "")).join("").replace(CONTEXT_LINE, "");
      if (t) updates.push({ sessionUpdate: "user_message_chunk", content: text(t) });
    } else if (m.role === "assistant") {
      for (const b of m.content) {
        if (b.type === "text" && b.text) updates.push({ sessionUpdate: "agent_message_chunk", content: text(b.text) });
        else if (b.type === "tool_call") updates.push({ sessionUpdate: "tool_call", toolCallId: b.id, title: toolTitle(b.name, b.args), kind: toolKind(b.name), status: "completed", rawInput: b.args });
      }
    } else {
      const t = m.content.map((b) => (b.type === "text" ? b.text : "")).join("").slice(0, RESULT_PREVIEW);
      updates.push({ sessionUpdate: "tool_call_update", toolCallId: m.toolCallId, status: m.isError ? "failed" : "completed", content: t ? [{ type: "content", content: text(t) }] : [] });
    }
  }
  return updates;
}

export async function replayHistory(
  nc: NatsConnection,
  opts: { prefix: string; timeoutMs: number; agentId: string; sessionName: string },
): Promise<{ updates: SessionUpdate[] } | undefined> {
  const sessionKey = buildSessionKey({ type: "dm", agentId: opts.agentId, channel: CLI_CHANNEL, peerId: opts.sessionName });
  const { session, records } = await new BusClient(nc, opts.prefix, opts.timeoutMs).call("sessions", "history", { sessionKey, limit: HISTORY_LIMIT });
  if (!session) return undefined;
  return { updates: recordUpdates(records) };
}
