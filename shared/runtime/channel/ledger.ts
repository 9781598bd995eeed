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
}

const KEEP_MS = 8 * 24 * 3600_000;
const SWEEP_EVERY_MS = 3600_000;

export class SentLedger extends ExpiringDb<LedgerEntry> {
  constructor(path: string, now: () => number = Date.now) {
    super(path, "sent", { keepMs: KEEP_MS, sweepEveryMs: SWEEP_EVERY_MS, stampOf: (e) => e.updatedAt, now });
  }

  /** Records one more accepted part (durable when the promise resolves). */
  async partSent(deliveryId: string, platformMessageId: string | undefined, count: number, attempts: number, conversation?: string): Promise<LedgerEntry> {
    const now = this.now();
    const current = this.get(deliveryId);
    const parts = [...(current?.parts ?? []), platformMessageId ?? ""];
    const entry: LedgerEntry = {
      status: parts.length >= count ? "sent" : "sending", parts, count, attempts, firstAt: current?.firstAt ?? now, updatedAt: now,
      ...(conversation ?? current?.conversation ? { conversation: conversation ?? current?.conversation } : {}),
    };
    await this.db.put(deliveryId, entry);
    return entry;
  }

  async finish(deliveryId: string, status: "sent" | "failed", attempts: number, error?: string, more: { conversation?: string; action?: boolean } = {}): Promise<LedgerEntry> {
    const now = this.now();
    const current = this.get(deliveryId);
    const conversation = more.conversation ?? current?.conversation;
    const entry: LedgerEntry = {
      status, parts: current?.parts ?? [], count: current?.count ?? 0, attempts, firstAt: current?.firstAt ?? now, updatedAt: now, ...(error ? { error: error.slice(0, 500) } : {}),
      ...(conversation ? { conversation } : {}), ...(more.action ?? current?.action ? { action: true } : {}),
    };
    await this.db.put(deliveryId, entry);
    return entry;
  }

  /** The delivery (not an action) one of whose parts the platform knows as `platformMessageId`, if any (a scan: for the rare edit and delete). */
  findByPlatformId(platformMessageId: string): { deliveryId: string; entry: LedgerEntry } | undefined {
    if (!platformMessageId) return undefined;
    for (const { key, value } of this.db.getRange()) {
      if (!value.action && value.parts.includes(platformMessageId)) return { deliveryId: key, entry: value };
    }
    return undefined;
  }
}
