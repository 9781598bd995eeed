/**
 * DM pairing (policy "pairing"), on the router's LMDB (`<dataDir>/router/pairing`): an unknown
 * sender gets an 8-character code, valid `ttlMs` (1 hour by default); at most `maxPending`
 * codes wait per channel (3 by default), further unknown senders are ignored until one expires
 * or is decided. The owner approves (`lurkbot pairing approve CODE`) or denies; an approved
 * sender may DM from then on (until revoked). Expired codes are swept on every access.
 * The clock is injectable so tests can move time.
 */
import { randomInt } from "node:crypto";
import { mkdirSync } from "node:fs";
import { open, type Database, type RootDatabase } from "lmdb";
import type { PairingApproved, PairingPending } from "../../shared/contract/index.js";

const ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
export const CODE_LENGTH = 8;

export type PairingOutcome =
  | { kind: "approved" }
  | { kind: "code"; code: string; created: boolean; expiresAt: number }
  | { kind: "full" };

export interface PairingLimits {
  ttlMs: number;
  maxPending: number;
}

const approvedKey = (channel: string, senderId: string) => `${channel}\u0000${senderId}`;

export function newPairingCode(): string {
  let code = "";
  for (let i = 0; i < CODE_LENGTH; i++) code += ALPHABET[randomInt(ALPHABET.length)];
  return code;
}

export class PairingStore {
  private readonly root: RootDatabase;
  private readonly pending: Database<PairingPending, string>;
  private readonly approved: Database<PairingApproved, string>;

  constructor(path: string, private readonly limits: PairingLimits, private readonly now: () => number = Date.now) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.root = open({ path, compression: true });
    this.pending = this.root.openDB({ name: "pending" });
    this.approved = this.root.openDB({ name: "approved" });
  }

  isApproved(channel: string, senderId: string): boolean {
    return this.approved.get(approvedKey(channel, senderId)) !== undefined;
  }

  /** An unknown sender wrote: their code (new or still pending), "approved", or "full". */
  async request(channel: string, sender: { id: string; name?: string }, conversation?: string): Promise<PairingOutcome> {
    let outcome!: PairingOutcome;
    await this.root.transaction(() => {
      if (this.approved.get(approvedKey(channel, sender.id))) {
        outcome = { kind: "approved" };
        return;
      }
      const live = this.sweep().filter((p) => p.channel === channel);
      const mine = live.find((p) => p.senderId === sender.id);
      if (mine) {
        outcome = { kind: "code", code: mine.code, created: false, expiresAt: mine.expiresAt };
        return;
      }
      if (live.length >= this.limits.maxPending) {
        outcome = { kind: "full" };
        return;
      }
      let code = newPairingCode();
      while (this.pending.get(code)) code = newPairingCode();
      const now = this.now();
      const record: PairingPending = {
        code, channel, senderId: sender.id, createdAt: now, expiresAt: now + this.limits.ttlMs,
        ...(sender.name ? { senderName: sender.name } : {}), ...(conversation ? { conversation } : {}),
      };
      void this.pending.put(code, record);
      outcome = { kind: "code", code, created: true, expiresAt: record.expiresAt };
    });
    return outcome;
  }

  /** Approves a live code: the sender may DM from now on. Null for an unknown or expired code. */
  async approve(code: string, by?: string): Promise<PairingPending | null> {
    return this.decide(code, (p) => {
      void this.approved.put(approvedKey(p.channel, p.senderId), {
        channel: p.channel, senderId: p.senderId, approvedAt: this.now(),
        ...(p.senderName ? { senderName: p.senderName } : {}), ...(by ? { approvedBy: by } : {}),
      });
    });
  }

  /** Drops a live code (the sender may ask again later). */
  async deny(code: string): Promise<PairingPending | null> {
    return this.decide(code, () => undefined);
  }

  async revoke(channel: string, senderId: string): Promise<PairingApproved | null> {
    let removed: PairingApproved | null = null;
    await this.root.transaction(() => {
      const key = approvedKey(channel, senderId);
      removed = this.approved.get(key) ?? null;
      if (removed) void this.approved.remove(key);
    });
    return removed;
  }

  async list(): Promise<{ pending: PairingPending[]; approved: PairingApproved[] }> {
    let pending: PairingPending[] = [];
    await this.root.transaction(() => {
      pending = this.sweep();
    });
    const approved = [...this.approved.getRange()].map((e) => e.value);
    return { pending: pending.sort((a, b) => a.createdAt - b.createdAt), approved };
  }

  async close(): Promise<void> {
    await this.root.close();
  }

  private async decide(code: string, apply: (p: PairingPending) => void): Promise<PairingPending | null> {
    const key = code.trim().toUpperCase();
    let result: PairingPending | null = null;
    await this.root.transaction(() => {
      const live = this.sweep();
      const record = live.find((p) => p.code === key);
      if (!record) return;
      void this.pending.remove(key);
      apply(record);
      result = record;
    });
    return result;
  }

  /** Removes expired codes (inside a transaction); returns the live ones. */
  private sweep(): PairingPending[] {
    const now = this.now();
    const live: PairingPending[] = [];
    for (const { key, value } of this.pending.getRange()) {
      if (value.expiresAt <= now) void this.pending.remove(key);
      else live.push(value);
    }
    return live;
  }
}
