/**
 * Group messages the bot was not addressed in (mention gating, `routing.groups.requireMention`)
 * kept as context for the next message that runs in that group's session.
 *
 * Contract: `add` keeps the last `limit` messages per session (a message id seen again is not
 * added twice; each text is cut at TEXT_MAX characters, attachments named), at most
 * SESSION_BYTES_MAX bytes of them (the oldest go first) and none older than MAX_AGE_MS; `take`
 * hands them over, oldest first, and forgets them, so each reaches the model once, ahead of the
 * message it came before (`withContext`). Every change of a session's lines is reported to
 * `onChange` (undefined: none left), which the router replicates (replica.ts), so the instance
 * taking the lease `restore`s them; `prune` forgets sessions whose lines all aged out.
 */
import type { InboundMessage } from "../../shared/contract/index.js";
import { oneLineText, PROMPT_NAME_MAX_CHARS } from "../../shared/runtime/prompt-text.js";

const TEXT_MAX = 2_000;
/** a session's lines as replicated stay well under the bus payload cap (1 MiB) */
export const SESSION_BYTES_MAX = 64 * 1024;
/** lines older than this are not shown any more (the chat moved on) */
export const MAX_AGE_MS = 24 * 60 * 60 * 1000;

export interface ContextLine {
  id: string;
  from: string;
  text: string;
  /** when it was kept (ms) */
  at: number;
}

export interface GroupContextOptions {
  onChange?: (sessionKey: string, lines: readonly ContextLine[] | undefined) => void;
  now?: () => number;
}

const lineBytes = (l: ContextLine) => Buffer.byteLength(l.id) + Buffer.byteLength(l.from) + Buffer.byteLength(l.text) + 48;

export class GroupContext {
  private readonly bySession = new Map<string, ContextLine[]>();
  private readonly now: () => number;

  constructor(private readonly limit: number, private readonly opts: GroupContextOptions = {}) {
    this.now = opts.now ?? Date.now;
  }

  add(sessionKey: string, msg: Pick<InboundMessage, "id" | "sender" | "text" | "attachments">): void {
    if (this.limit === 0) return;
    const lines = this.bySession.get(sessionKey) ?? [];
    if (lines.some((l) => l.id === msg.id)) return;
    const files = msg.attachments.map((a) => `[${a.name ?? a.kind}]`).join(" ");
    const text = [msg.text.length > TEXT_MAX ? `${msg.text.slice(0, TEXT_MAX)}…` : msg.text, files].filter(Boolean).join(" ");
    if (!text) return;
    lines.push({ id: msg.id, from: msg.sender.name ?? msg.sender.id, text, at: this.now() });
    this.keep(sessionKey, lines);
  }

  take(sessionKey: string): ContextLine[] {
    const lines = this.bySession.get(sessionKey);
    if (!lines) return [];
    this.bySession.delete(sessionKey);
    this.opts.onChange?.(sessionKey, undefined);
    const since = this.now() - MAX_AGE_MS;
    return lines.filter((l) => l.at >= since);
  }

  /** A session's lines from the replica (the previous active router kept them); reported only when none are left to keep. */
  restore(sessionKey: string, lines: readonly ContextLine[]): void {
    const kept = this.limit === 0 ? [] : this.bounded([...lines]);
    if (kept.length > 0) this.bySession.set(sessionKey, kept);
    else this.opts.onChange?.(sessionKey, undefined);
  }

  /** Forgets the sessions whose newest line aged out. */
  prune(): void {
    const since = this.now() - MAX_AGE_MS;
    for (const [sessionKey, lines] of this.bySession) {
      if (lines.at(-1)!.at >= since) continue;
      this.bySession.delete(sessionKey);
      this.opts.onChange?.(sessionKey, undefined);
    }
  }

  private keep(sessionKey: string, lines: ContextLine[]): void {
    const kept = this.bounded(lines);
    this.bySession.set(sessionKey, kept);
    this.opts.onChange?.(sessionKey, kept);
  }

  /** The newest lines within the count, age and byte bounds. */
  private bounded(lines: ContextLine[]): ContextLine[] {
    const since = this.now() - MAX_AGE_MS;
    let kept = lines.filter((l) => l.at >= since).slice(-this.limit);
    let bytes = kept.reduce((sum, l) => sum + lineBytes(l), 0);
    while (kept.length > 1 && bytes > SESSION_BYTES_MAX) {
      bytes -= lineBytes(kept[0]!);
      kept = kept.slice(1);
    }
    return kept;
  }
}

/**
 * The message's text with the group's context ahead of it (the text alone when there is none).
 * Each kept message is `<sender>: <text>`, the sender's name on one line and capped
 * (shared/runtime/prompt-text.ts) and the text's further lines indented, so no group member's
 * name or text can start a line of its own (a fake "[Current message, to you]" marker).
 */
export function withContext(text: string, lines: readonly ContextLine[]): string {
  if (lines.length === 0) return text;
  return [
    "[Chat messages since your last reply, for context]",
    ...lines.map((l) => `${oneLineText(l.from, PROMPT_NAME_MAX_CHARS) || "?"}: ${l.text.split(/\r?\n/).join("\n  ")}`),
    "",
    "[Current message, to you]",
    text,
  ].join("\n");
}
