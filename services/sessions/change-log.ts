/**
 * The sessions store's side of replication (`sessions.replication`; replication.ts publishes and
 * follows). Two more databases in the store's LMDB environment:
 *   outbox  n -> { sessionKey, ops }   change sets committed here and not yet in the stream
 *   meta    "appliedSeq"               the last SESSIONS stream sequence this store holds
 *           "outboxNext"               the next outbox number
 *           "id"                       this store's random id (message ids)
 *           "seeded"                   1 once the store's data before replication was queued
 * Contract: a change set enters the outbox in the same transaction as the writes it describes,
 * so a crash never loses one that was committed; it leaves the outbox once JetStream stored it.
 * `apply` writes a followed change set and its stream sequence in one transaction, so a
 * standby resumes exactly where it stopped.
 */
import { randomBytes } from "node:crypto";
import type { Database, RootDatabase } from "lmdb";
import type { SessionChangeOp } from "../../shared/contract/index.js";

export interface OutboxEntry {
  n: number;
  sessionKey: string;
  ops: SessionChangeOp[];
}

export class ChangeLog {
  private readonly outbox: Database<{ sessionKey: string; ops: SessionChangeOp[] }, number>;
  private readonly meta: Database<number | string, string>;
  private next: number;
  /** this store's own id (random, kept): part of the message ids, so JetStream drops a retried change set */
  readonly id: string;
  /** the outbox number of the last change set committed by this process (0: none) */
  lastQueued = 0;

  constructor(root: RootDatabase) {
    this.outbox = root.openDB({ name: "outbox" });
    this.meta = root.openDB({ name: "meta" });
    this.next = (this.meta.get("outboxNext") as number | undefined) ?? 1;
    const id = this.meta.get("id");
    if (typeof id === "string") this.id = id;
    else {
      this.id = randomBytes(6).toString("hex");
      this.meta.putSync("id", this.id);
    }
  }

  /** Inside the store's write transaction: queues the transaction's change set. */
  enqueueInTxn(sessionKey: string, ops: SessionChangeOp[]): void {
    const n = this.next++;
    void this.outbox.put(n, { sessionKey, ops });
    void this.meta.put("outboxNext", this.next);
    this.lastQueued = n;
  }

  /** The oldest queued change sets, in commit order. */
  pending(max: number): OutboxEntry[] {
    return [...this.outbox.getRange({ limit: max })].map(({ key, value }) => ({ n: key, ...value }));
  }

  get pendingCount(): number {
    return this.outbox.getCount();
  }

  /** Inside a write transaction: change sets up to `n` are in the stream, the last at `streamSeq`. */
  ackedInTxn(n: number, streamSeq: number): void {
    for (const { key } of this.outbox.getRange({ end: n + 1 })) void this.outbox.remove(key);
    if (streamSeq > this.appliedSeq) void this.meta.put("appliedSeq", streamSeq);
  }

  /** Inside a write transaction: drops every queued change set (this instance is no longer the writer); returns how many. */
  discardInTxn(): number {
    let dropped = 0;
    for (const { key } of this.outbox.getRange()) {
      void this.outbox.remove(key);
      dropped++;
    }
    return dropped;
  }

  get appliedSeq(): number {
    return (this.meta.get("appliedSeq") as number | undefined) ?? 0;
  }

  setAppliedInTxn(streamSeq: number): void {
    void this.meta.put("appliedSeq", streamSeq);
  }

  /** whether this store's data went to the stream once (the first active instance publishes what it has) */
  get seeded(): boolean {
    return this.meta.get("seeded") === 1;
  }

  markSeededInTxn(): void {
    void this.meta.put("seeded", 1);
  }
}
