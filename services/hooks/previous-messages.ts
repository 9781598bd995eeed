/**
 * `context.previousMessages` for hooks that ask for it (HOOK.md `context: ["previousMessages"]`):
 * on an event with a `previousSessionId` (`/new`, `/reset`, `session:reset`), the last user and
 * assistant text messages of the transcript that ended, read from the sessions actor
 * (`sessions.history` with that session id; the hooks user may ask nothing else of it but `get`).
 * Tool calls, tool results, thinking, system events and notes are left out; an assistant turn
 * that only called tools has no text and is left out too. Capped in count and characters.
 */
import { assistantText, type TranscriptRecord } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { readHistory } from "../../shared/runtime/session-history.js";

export const PREVIOUS_MESSAGES = {
  /** transcript records read (the newest) */
  records: 400,
  /** messages handed to the hook (the newest) */
  messages: 50,
  /** characters per message; longer ones end in "…" */
  chars: 4000,
} as const;

export interface PreviousMessage {
  role: "user" | "assistant";
  text: string;
  /** ISO 8601, when the record was written */
  timestamp: string;
}

/** The ended transcript's messages (oldest first). Throws when the sessions actor cannot be asked. */
export async function fetchPreviousMessages(rt: ActorRuntime, sessionKey: string, sessionId: string): Promise<PreviousMessage[]> {
  const { records } = await readHistory(rt.client, { sessionKey, sessionId, limit: PREVIOUS_MESSAGES.records });
  return textMessages(records);
}

/** The user and assistant text messages of `records`, the newest PREVIOUS_MESSAGES.messages, each capped (pure). */
export function textMessages(records: readonly TranscriptRecord[]): PreviousMessage[] {
  const out: PreviousMessage[] = [];
  for (const r of records) {
    const m = r.kind === "message" ? r.message : undefined;
    if (!m || m.role === "tool_result") continue;
    const text = (m.role === "assistant" ? assistantText(m) : m.content.map((b) => (b.type === "text" ? b.text : "")).join("")).trim();
    if (!text) continue;
    out.push({ role: m.role, text: text.length > PREVIOUS_MESSAGES.chars ? `${text.slice(0, PREVIOUS_MESSAGES.chars)}…` : text, timestamp: new Date(r.ts).toISOString() });
  }
  return out.slice(-PREVIOUS_MESSAGES.messages);
}
