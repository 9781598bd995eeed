/**
 * Group messages the bot was not addressed in (mention gating, `routing.groups.requireMention`)
 * kept as context for the next message that runs in that group's session.
 *
 * Contract: `add` keeps the last `limit` messages per session (a message id seen again is not
 * added twice; each text is cut at TEXT_MAX characters, attachments named); `take` hands them
 * over, oldest first, and forgets them, so each reaches the model once, ahead of the message it
 * came before (`withContext`). In memory: a router restart or a change of the active router
 * loses what was not taken yet.
 */
import type { InboundMessage } from "../../shared/contract/index.js";

const TEXT_MAX = 2_000;

export interface ContextLine {
  id: string;
  from: string;
  text: string;
}

export class GroupContext {
  private readonly bySession = new Map<string, ContextLine[]>();

  constructor(private readonly limit: number) {}

  add(sessionKey: string, msg: Pick<InboundMessage, "id" | "sender" | "text" | "attachments">): void {
    if (this.limit === 0) return;
    const lines = this.bySession.get(sessionKey) ?? [];
    if (lines.some((l) => l.id === msg.id)) return;
    const files = msg.attachments.map((a) => `[${a.name ?? a.kind}]`).join(" ");
    const text = [msg.text.length > TEXT_MAX ? `${msg.text.slice(0, TEXT_MAX)}…` : msg.text, files].filter(Boolean).join(" ");
    if (!text) return;
    lines.push({ id: msg.id, from: msg.sender.name ?? msg.sender.id, text });
    if (lines.length > this.limit) lines.splice(0, lines.length - this.limit);
    this.bySession.set(sessionKey, lines);
  }

  take(sessionKey: string): ContextLine[] {
    const lines = this.bySession.get(sessionKey) ?? [];
    this.bySession.delete(sessionKey);
    return lines;
  }
}

/** The message's text with the group's context ahead of it (the text alone when there is none). */
export function withContext(text: string, lines: readonly ContextLine[]): string {
  if (lines.length === 0) return text;
  return [
    "[Chat messages since your last reply, for context]",
    ...lines.map((l) => `${l.from}: ${l.text}`),
    "",
    "[Current message, to you]",
    text,
  ].join("\n");
}
