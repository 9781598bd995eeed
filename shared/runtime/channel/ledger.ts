/**
 * A channel's sent-ledger (LMDB at `<dataDir>/channel-<name>/`): delivery id -> what reached the
 * platform. A part is recorded right after the platform accepted it and before the next part
 * (or the JetStream ack), so a redelivered outbound message resumes after the last accepted
 * part and a fully sent one is never sent again. Entries older than the OUTBOUND stream's
 * max age (plus a day) are swept. Each entry names its conversation: the `message` tool's edit and
 * delete act only on a message found here for the conversation they name (delivery.ts).
 */
import { ExpiringDb } from "./expiring-db.js";

export interface LedgerEntry {
  status: "sending" | "sent" | "failed";
  /** platform message id of each accepted part ("" when the platform gives none) */
  parts: string[];
  count: number;
  attempts: number;
  firstAt: number;
  updatedAt: number;
  error?: string;
  /** the conversation it went to (absent in entries written before it was recorded) */
  conversation?: string;
  /** an action (react, edit, delete), not a message the assistant sent */
  action?: boolean;
  /** the start of each part's text (EXCERPT_CHARS), by part: what a user's reaction names (reactions.ts) */
  excerpts?: string[];
}

/** how much of each sent part's text the ledger keeps (for reactions to it) */
export const EXCERPT_CHARS = 120;

const KEEP_MS = 8 * 24 * 3600_000;
const SWEEP_EVERY_MS = 3600_000;

export class SentLedger extends ExpiringDb<LedgerEntry> {
  /**
   * platform message id -> delivery id (`findByPlatformId`): built from the ledger by the first
   * lookup, kept by `partSent`, dropped by a sweep that removed entries (rebuilt when next needed)
   */
  private byPlatform: Map<string, string> | undefined;

  constructor(path: string, now: () => number = Date.now) {
    super(path, "sent", { keepMs: KEEP_MS, sweepEveryMs: SWEEP_EVERY_MS, stampOf: (e) => e.updatedAt, now });
  }

  override async sweep(): Promise<number> {
    const removed = await super.sweep();
    if (removed > 0) this.byPlatform = undefined;
    return removed;
  }

  /** Records one more accepted part (durable when the promise resolves). */
  async partSent(deliveryId: string, platformMessageId: string | undefined, count: number, attempts: number, conversation?: string, text?: string): Promise<LedgerEntry> {
    const now = this.now();
    const current = this.get(deliveryId);
    const parts = [...(current?.parts ?? []), platformMessageId ?? ""];
    // aligned with parts (entries written before excerpts were kept have none)
    const excerpts = [...(current?.excerpts ?? [])];
    while (excerpts.length < parts.length - 1) excerpts.push("");
    // a code point is at most two UTF-16 units: only the start of a long part is split into characters
    excerpts.push([...(text ?? "").slice(0, 2 * EXCERPT_CHARS)].slice(0, EXCERPT_CHARS).join(""));
    const entry: LedgerEntry = {
      status: parts.length >= count ? "sent" : "sending", parts, count, attempts, firstAt: current?.firstAt ?? now, updatedAt: now,
      ...(conversation ?? current?.conversation ? { conversation: conversation ?? current?.conversation } : {}),
      ...(excerpts.some((e) => e !== "") ? { excerpts } : {}),
    };
    await this.db.put(deliveryId, entry);
    if (platformMessageId) this.indexPart(platformMessageId, deliveryId);
    return entry;
  }

  async finish(deliveryId: string, status: "sent" | "failed", attempts: number, error?: string, more: { conversation?: string; action?: boolean } = {}): Promise<LedgerEntry> {
    const now = this.now();
    const current = this.get(deliveryId);
    const conversation = more.conversation ?? current?.conversation;
    const entry: LedgerEntry = {
      status, parts: current?.parts ?? [], count: current?.count ?? 0, attempts, firstAt: current?.firstAt ?? now, updatedAt: now, ...(error ? { error: error.slice(0, 500) } : {}),
      ...(conversation ? { conversation } : {}), ...(more.action ?? current?.action ? { action: true } : {}),
      ...(current?.excerpts ? { excerpts: current.excerpts } : {}),
    };
    await this.db.put(deliveryId, entry);
    return entry;
  }

  /** The delivery (not an action) one of whose parts the platform knows as `platformMessageId`, if any. */
  findByPlatformId(platformMessageId: string): { deliveryId: string; entry: LedgerEntry } | undefined {
    if (!platformMessageId) return undefined;
    if (!this.byPlatform) {
      this.byPlatform = new Map();
      for (const { key, value } of this.db.getRange()) {
        if (!value.action) for (const part of value.parts) if (part) this.indexPart(part, key);
      }
    }
    const deliveryId = this.byPlatform.get(platformMessageId);
    const entry = deliveryId === undefined ? undefined : this.get(deliveryId);
    return entry && !entry.action && entry.parts.includes(platformMessageId) ? { deliveryId: deliveryId!, entry } : undefined;
  }

  /** The conversation and text excerpt of the assistant's message the platform knows as `platformMessageId`, if it is one. */
  sentMessage(platformMessageId: string): { conversation?: string; excerpt?: string } | undefined {
    const found = this.findByPlatformId(platformMessageId);
    if (!found) return undefined;
    const excerpt = found.entry.excerpts?.[found.entry.parts.indexOf(platformMessageId)];
    return { ...(found.entry.conversation ? { conversation: found.entry.conversation } : {}), ...(excerpt ? { excerpt } : {}) };
  }

  /** a platform id found in two deliveries names the first by key (the ledger's order) */
  private indexPart(platformMessageId: string, deliveryId: string): void {
    const known = this.byPlatform?.get(platformMessageId);
    if (this.byPlatform && (known === undefined || deliveryId < known)) this.byPlatform.set(platformMessageId, deliveryId);
  }
}
