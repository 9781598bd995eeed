/**
 * The approvals actor's LMDB store (`<dataDir>/approvals`): approvalId -> ApprovalRecord.
 * Pending and decided records survive restarts. A pending record past its expiry becomes
 * "expired" (= denied) on the next sweep or the next access, whichever comes first.
 * Every committed change is also handed to `onChange` (the replica writes it to the KV bucket for
 * the instance that takes over; the change resolves once that write is done); `replace` applies
 * the bucket's content and reports nothing.
 */
import { mkdirSync } from "node:fs";
import { open, type Database, type RootDatabase } from "lmdb";
import { LurkError, type ApprovalRecord } from "../../shared/contract/index.js";

export class ApprovalStore {
  private readonly root: RootDatabase;
  private readonly records: Database<ApprovalRecord, string>;
  /** no pending record expires before this (a lower bound: the periodic sweep skips the scan until then) */
  private nextExpiry = 0;

  /** called after each committed change; the change waits for it */
  onChange: (record: ApprovalRecord) => Promise<void> = () => Promise.resolve();

  constructor(path: string, private readonly now: () => number = Date.now) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.root = open({ path, compression: true });
    this.records = this.root.openDB({ name: "records" });
  }

  async create(record: ApprovalRecord): Promise<ApprovalRecord> {
    let created = false;
    await this.root.transaction(() => {
      if (this.records.get(record.approvalId)) return;
      void this.records.put(record.approvalId, record);
      created = true;
    });
    if (!created) throw new LurkError("CONFLICT", `an approval ${record.approvalId} exists already`);
    this.nextExpiry = Math.min(this.nextExpiry, record.expiresAt);
    await this.onChange(record);
    return record;
  }

  /** Sets a record from the replica (no onChange). */
  async replace(record: ApprovalRecord): Promise<void> {
    await this.records.put(record.approvalId, record);
    if (record.status === "pending") this.nextExpiry = Math.min(this.nextExpiry, record.expiresAt);
  }

  /** The record as it is now (an overdue pending one expired first); `expired` lists what expired. */
  async get(approvalId: string, expired: ApprovalRecord[] = []): Promise<ApprovalRecord | null> {
    const record = this.records.get(approvalId);
    if (!record) return null;
    if (record.status === "pending" && record.expiresAt <= this.now()) {
      const done = await this.expire(approvalId);
      if (done) {
        expired.push(done);
        return done;
      }
      return this.records.get(approvalId) ?? null;
    }
    return record;
  }

  /** Decides a pending record; null when it is not pending (any more). */
  async decide(approvalId: string, status: "approved" | "denied" | "expired", decidedBy: string): Promise<ApprovalRecord | null> {
    let result: ApprovalRecord | null = null;
    await this.root.transaction(() => {
      const record = this.records.get(approvalId);
      if (!record || record.status !== "pending") return;
      result = { ...record, status, decidedAt: this.now(), decidedBy };
      void this.records.put(approvalId, result);
    });
    if (result) await this.onChange(result);
    return result;
  }

  /**
   * Marks an approved record as used (`usedAt`), once, in one transaction: "used" when it was
   * already, "mismatch" when it is not an approval of this call, "missing" when unknown.
   */
  async redeem(approvalId: string, toolCallId: string, argsHash: string): Promise<ApprovalRecord | "missing" | "mismatch" | "used"> {
    let result: ApprovalRecord | "missing" | "mismatch" | "used" = "missing";
    await this.root.transaction(() => {
      const record = this.records.get(approvalId);
      if (!record) return;
      if (record.status !== "approved" || record.toolCallId !== toolCallId || record.argsHash !== argsHash) result = "mismatch";
      else if (record.usedAt !== undefined) result = "used";
      else {
        result = { ...record, usedAt: this.now() };
        void this.records.put(approvalId, result);
      }
    });
    if (typeof result === "object") await this.onChange(result);
    return result;
  }

  expire(approvalId: string): Promise<ApprovalRecord | null> {
    return this.decide(approvalId, "expired", "timeout");
  }

  /** Pending records past their expiry, expired now (no scan before the earliest pending expiry). */
  async sweep(): Promise<ApprovalRecord[]> {
    const now = this.now();
    if (now < this.nextExpiry) return [];
    const overdue: string[] = [];
    let next = Infinity;
    for (const { key, value } of this.records.getRange()) {
      if (value.status !== "pending") continue;
      if (value.expiresAt <= now) overdue.push(key);
      else next = Math.min(next, value.expiresAt);
    }
    // set before any await: a record created meanwhile lowers it again (create)
    this.nextExpiry = next;
    const done: ApprovalRecord[] = [];
    for (const id of overdue) {
      const r = await this.expire(id);
      if (r) done.push(r);
    }
    return done;
  }

  /** The newest record `match` accepts (one scan, nothing sorted). */
  newest(match: (record: ApprovalRecord) => boolean): ApprovalRecord | undefined {
    let found: ApprovalRecord | undefined;
    for (const { value } of this.records.getRange()) if (match(value) && (!found || value.createdAt > found.createdAt)) found = value;
    return found;
  }

  /** Newest first. */
  list(status: ApprovalRecord["status"] | undefined, limit: number): ApprovalRecord[] {
    const all: ApprovalRecord[] = [];
    for (const { value } of this.records.getRange()) if (!status || value.status === status) all.push(value);
    return all.sort((a, b) => b.createdAt - a.createdAt).slice(0, limit);
  }

  /** Every record stored here. */
  all(): ApprovalRecord[] {
    const out: ApprovalRecord[] = [];
    for (const { value } of this.records.getRange()) out.push(value);
    return out;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
