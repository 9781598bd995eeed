/**
 * DM pairing (policy "pairing"), on the router's LMDB (`<dataDir>/router/pairing`): an unknown
 * sender gets an 8-character code, valid `ttlMs` (1 hour by default); at most `maxPending`
 * codes wait per channel (3 by default), further unknown senders are ignored until one expires
 * or is decided. The owner approves (`lurkbot pairing approve CODE`) or denies; an approved
 * sender may DM from then on (until revoked). Expired codes are swept on every access.
 * The clock is injectable so tests can move time.
 * Every committed change is also handed to `onChange` as a replica key and value (undefined:
 * removed; `replicaKey`), and the change resolves once it is done (replica.ts writes it to the KV
 * bucket for the router instance that takes over); `replaceAll` swaps in the bucket's content.
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

/** The KV key of a pairing record: `pending.<code>`, `approved.<channel>.<sender id, base64url>`. */
export function replicaKey(record: PairingPending | PairingApproved): string {
  return "code" in record ? `pending.${record.code}` : `approved.${record.channel}.${Buffer.from(record.senderId).toString("base64url")}`;
}

export type PairingChange = { key: string; value: PairingPending | PairingApproved | undefined };

export function newPairingCode(): string {
  let code = "";
  for (let i = 0; i < CODE_LENGTH; i++) code += ALPHABET[randomInt(ALPHABET.length)];
  return code;
}

export class PairingStore {
  private readonly root: RootDatabase;
  private readonly pending: Database<PairingPending, string>;
  private readonly approved: Database<PairingApproved, string>;

  /** called after each committed change; the change waits for it */
  onChange: (change: PairingChange) => Promise<void> = () => Promise.resolve();
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
    await this.transaction((changes) => {
      if (this.approved.get(approvedKey(channel, sender.id))) {
        outcome = { kind: "approved" };
        return;
      }
      const live = this.sweep(changes).filter((p) => p.channel === channel);
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
      void this.pending.put(record.code, record);
      changes.push({ key: replicaKey(record), value: record });
      outcome = { kind: "code", code, created: true, expiresAt: record.expiresAt };
    });
    return outcome;
  }

  /** Approves a live code: the sender may DM from now on. Null for an unknown or expired code. */
  async approve(code: string, by?: string): Promise<PairingPending | null> {
    return this.decide(code, (p, changes) => {
      const record: PairingApproved = {
        channel: p.channel, senderId: p.senderId, approvedAt: this.now(),
        ...(p.senderName ? { senderName: p.senderName } : {}), ...(by ? { approvedBy: by } : {}),
      };
      void this.approved.put(approvedKey(p.channel, p.senderId), record);
      changes.push({ key: replicaKey(record), value: record });
    });
  }

  /** Drops a live code (the sender may ask again later). */
  async deny(code: string): Promise<PairingPending | null> {
    return this.decide(code, () => undefined);
  }

  async revoke(channel: string, senderId: string): Promise<PairingApproved | null> {
    let removed: PairingApproved | null = null;
    await this.transaction((changes) => {
      const key = approvedKey(channel, senderId);
      removed = this.approved.get(key) ?? null;
      if (removed) {
        void this.approved.remove(key);
        changes.push({ key: replicaKey(removed), value: undefined });
      }
    });
    return removed;
  }

  async list(): Promise<{ pending: PairingPending[]; approved: PairingApproved[] }> {
    let pending: PairingPending[] = [];
    await this.transaction((changes) => {
      pending = this.sweep(changes);
    });
    const approved = [...this.approved.getRange()].map((e) => e.value);
    return { pending: pending.sort((a, b) => a.createdAt - b.createdAt), approved };
  }

  /** Every record here, for the replica (pending codes not yet expired, approved senders). */
  records(): Array<PairingPending | PairingApproved> {
    const now = this.now();
    return [...[...this.pending.getRange()].map((e) => e.value).filter((p) => p.expiresAt > now), ...[...this.approved.getRange()].map((e) => e.value)];
  }

  /** Replaces every record with the replica's (no onChange): what another router instance left. */
  async replaceAll(records: Array<PairingPending | PairingApproved>): Promise<void> {
    await this.root.transaction(() => {
      for (const { key } of this.pending.getRange()) void this.pending.remove(key);
      for (const { key } of this.approved.getRange()) void this.approved.remove(key);
      for (const r of records) {
        if ("code" in r) void this.pending.put(r.code, r);
        else void this.approved.put(approvedKey(r.channel, r.senderId), r);
      }
    });
  }

  async close(): Promise<void> {
    await this.root.close();
  }

  /** An LMDB transaction; the changes `work` records go to onChange once it committed. */
  private async transaction(work: (changes: PairingChange[]) => void): Promise<void> {
    const changes: PairingChange[] = [];
    await this.root.transaction(() => work(changes));
    for (const change of changes) await this.onChange(change);
  }

  private async decide(code: string, apply: (p: PairingPending, changes: PairingChange[]) => void): Promise<PairingPending | null> {
    const key = code.trim().toUpperCase();
    let result: PairingPending | null = null;
    await this.transaction((changes) => {
      const live = this.sweep(changes);
      const record = live.find((p) => p.code === key);
      if (!record) return;
      void this.pending.remove(key);
      changes.push({ key: replicaKey(record), value: undefined });
      apply(record, changes);
      result = record;
    });
    return result;
  }

  /** Removes expired codes (inside a transaction); returns the live ones. */
  private sweep(changes: PairingChange[]): PairingPending[] {
    const now = this.now();
    const live: PairingPending[] = [];
    for (const { key, value } of this.pending.getRange()) {
      if (value.expiresAt <= now) {
        void this.pending.remove(key);
        changes.push({ key: replicaKey(value), value: undefined });
      } else live.push(value);
    }
    return live;
  }
}
