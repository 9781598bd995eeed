/**
 * Replication of the sessions store through the SESSIONS stream (`sessions.replication`).
 *
 * Active instance (`startWriting`): a pump publishes the outbox (change-log.ts) in commit order to
 * `lurk.sesslog.<sessionKey>`, one message per change set (a large one split in parts), with a
 * message id so a retry within JetStream's duplicate window is stored once; an acked change set
 * leaves the outbox. `settled(n)` resolves once change set `n` is in the stream: a write is
 * answered only then (or after `ackTimeoutMs`, logged: it stays queued and goes out when
 * JetStream answers again). A deleted session's subject is purged once its delete is stored.
 *
 * Standby (`startFollowing`): an ordered consumer from the store's applied sequence + 1 applies
 * every change set in stream order (parts gathered first). `catchUp` returns once everything the
 * stream held when it was called is applied: the takeover waits for it before it serves.
 */
import { jetstream, jetstreamManager, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type StreamState } from "@nats-io/jetstream";
import { DeliverPolicy } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { randomUUID } from "node:crypto";
import { jsonBytes, safeParseJson, sessionChangeSchema, STREAMS, type SessionChangeOp } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { sleepUnlessAborted } from "../../shared/runtime/abortable-sleep.js";
import type { OutboxEntry } from "./change-log.js";
import type { SessionStore } from "./store.js";

const BATCH = 64;
/** a takeover gives up waiting for the stream when nothing was applied for this long */
const CATCH_UP_STALL_MS = 30_000;
const RETRY_MS = [200, 1_000, 5_000];
/** room for the envelope and headers under the bus's message cap */
const PART_MARGIN_BYTES = 16 * 1024;

export class SessionReplication {
  private readonly js: JetStreamClient;
  private writing: AbortController | undefined;
  private pumping: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private readonly waiters = new Map<number, Array<() => void>>();
  private following: { messages: ConsumerMessages; done: Promise<void> } | undefined;
  /** parts of a change set split over several messages, gathered until the last */
  private partial: { txn: string; ops: SessionChangeOp[] } | undefined;

  private jsmOnce: Promise<JetStreamManager> | undefined;

  constructor(private readonly rt: ActorRuntime, private readonly store: SessionStore, private readonly ackTimeoutMs: number) {
    this.js = jetstream(rt.nc);
  }

  /** one manager for the stream's info and purges (made on first use; no API check: the stream is ours) */
  private jsm(): Promise<JetStreamManager> {
    return (this.jsmOnce ??= jetstreamManager(this.rt.nc, { checkAPI: false }));
  }

  private get log() {
    return this.store.changeLog!;
  }

  /** This instance writes: publish what the outbox holds and every change set queued from now on. */
  startWriting(): void {
    if (this.writing || this.closed) return;
    const writing = new AbortController();
    this.writing = writing;
    this.pumping = this.pump(writing.signal);
  }

  /** Stops publishing (lease lost): queued change sets are dropped, another instance writes now. */
  async stopWriting(): Promise<void> {
    const writing = this.writing;
    if (!writing) return;
    writing.abort();
    this.wake?.();
    await this.pumping;
    this.writing = undefined;
    this.discardQueued("another instance writes now");
    for (const [, resolvers] of this.waiters) resolvers.forEach((r) => r());
    this.waiters.clear();
  }

  /**
   * Drops the change sets this store committed but never got into the stream (logged). For an
   * instance that is not the writer, or one whose takeover applied another writer's changes:
   * publishing its older ones after those would undo them.
   */
  discardQueued(why: string): void {
    if (this.log.pendingCount === 0) return;
    const dropped = this.store.logTxn((log) => log.discardInTxn());
    this.rt.log.warn({ dropped }, `sessions: change sets committed here but never stored in the SESSIONS stream are dropped: ${why}`);
  }

  /** A change set was queued: the pump goes on. */
  queued(): void {
    this.wake?.();
  }

  /** Resolves once change set `n` is in the stream, or after the ack timeout (then logged). */
  async settled(n: number): Promise<void> {
    const oldest = this.log.pending(1)[0];
    if (n === 0 || !this.writing || oldest === undefined || oldest.n > n) return;
    let timer: NodeJS.Timeout | undefined;
    const stored = new Promise<boolean>((resolve) => {
      const list = this.waiters.get(n) ?? [];
      list.push(() => resolve(true));
      this.waiters.set(n, list);
      timer = setTimeout(() => resolve(false), this.ackTimeoutMs);
    });
    const inStream = await stored;
    clearTimeout(timer);
    if (!inStream) this.rt.log.warn({ changeSet: n, pending: this.log.pendingCount }, "sessions: JetStream has not stored a change set in time; answering, it stays queued for replication");
  }

  private async pump(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      const batch = this.log.pending(BATCH);
      if (batch.length === 0) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      try {
        const lastSeq = await this.publish(batch);
        const last = batch[batch.length - 1]!.n;
        this.store.logTxn((log) => log.ackedInTxn(last, lastSeq));
        for (const [n, resolvers] of this.waiters) {
          if (n > last) continue;
          resolvers.forEach((r) => r());
          this.waiters.delete(n);
        }
        await this.purgeDeleted(batch);
        failures = 0;
      } catch (err) {
        const delay = RETRY_MS[Math.min(failures++, RETRY_MS.length - 1)]!;
        this.rt.log.warn({ err, pending: this.log.pendingCount, retryInMs: delay }, "sessions: publishing change sets to the SESSIONS stream failed; retrying");
        await sleepUnlessAborted(delay, signal);
      }
    }
  }

  /** Publishes change sets in order (all sent before the acks are awaited); resolves with the last stream sequence. */
  private async publish(batch: OutboxEntry[]): Promise<number> {
    // every bus payload stays under the bus's cap (bus.maxPayloadBytes), which the followers parse with
    const maxBytes = Math.min(this.rt.nc.info?.max_payload ?? Infinity, this.rt.limits.maxBytes ?? Infinity) - PART_MARGIN_BYTES;
    const acks: Array<Promise<{ seq: number }>> = [];
    for (const entry of batch) {
      const parts = splitOps(entry.ops, maxBytes);
      const txn = `${this.log.id}-${entry.n}`;
      for (const [part, ops] of parts.entries()) {
        const body = { type: "lurk.sessions.change.v1", id: randomUUID(), ts: Date.now(), sessionKey: entry.sessionKey, txn, part, parts: parts.length, ops };
        const h = natsHeaders();
        // the store's own id: a change set published again after a restart is stored once too
        h.set("Nats-Msg-Id", `${txn}-${part}`);
        acks.push(this.js.publish(this.rt.subjects.sessionChanges(entry.sessionKey), JSON.stringify(body), { headers: h }));
      }
    }
    const stored = await Promise.all(acks);
    return stored[stored.length - 1]!.seq;
  }

  /** After a session's delete is in the stream: its earlier change sets go (the delete itself stays). */
  private async purgeDeleted(batch: OutboxEntry[]): Promise<void> {
    const deleted = batch.filter((e) => e.ops.some((op) => op.op === "deleteSession")).map((e) => e.sessionKey);
    if (deleted.length === 0) return;
    const jsm = await this.jsm();
    for (const sessionKey of new Set(deleted)) {
      try {
        await jsm.streams.purge(STREAMS.sessions, { filter: this.rt.subjects.sessionChanges(sessionKey), keep: 1 });
      } catch (err) {
        this.rt.log.warn({ err, sessionKey }, "sessions: could not purge a deleted session's change sets from the stream");
      }
    }
  }

  /** Stops writing and following for good (the actor stops). */
  async close(): Promise<void> {
    this.closed = true;
    await this.stopWriting();
    await this.stopFollowing();
  }

  private closed = false;

  /** Standby: follows the stream from the store's applied sequence. */
  async startFollowing(): Promise<void> {
    if (this.following || this.closed) return;
    const consumer = await this.js.consumers.get(STREAMS.sessions, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.log.appliedSeq + 1 });
    const messages = await consumer.consume();
    const done = (async () => {
      for await (const m of messages) this.apply(m.data, m.seq);
    })().catch((err: unknown) => this.rt.log.error({ err }, "sessions: following the SESSIONS stream stopped"))
      // a follower that ended on its own is started again by the next startFollowing (a takeover's catch-up)
      .finally(() => {
        if (this.following?.messages === messages) this.following = undefined;
      });
    this.following = { messages, done };
  }

  async stopFollowing(): Promise<void> {
    const f = this.following;
    if (!f) return;
    this.following = undefined;
    await f.messages.close().catch(() => undefined);
    await f.done;
    this.partial = undefined;
  }

  /** Applies everything the stream holds now (following until then), then stops following; resolves with the stream's state it caught up to. */
  async catchUp(signal: AbortSignal): Promise<StreamState> {
    const state = (await (await this.jsm()).streams.info(STREAMS.sessions)).state;
    const target = state.last_seq;
    if (this.log.appliedSeq < target) {
      await this.startFollowing();
      let seen = this.log.appliedSeq;
      let progressAt = Date.now();
      while (this.log.appliedSeq < target && !signal.aborted) {
        await sleepUnlessAborted(20, signal);
        if (this.log.appliedSeq !== seen) [seen, progressAt] = [this.log.appliedSeq, Date.now()];
        else if (Date.now() - progressAt > CATCH_UP_STALL_MS) {
          await this.stopFollowing();
          throw new Error(`applying the SESSIONS stream stalled at ${seen} of ${target}`);
        }
      }
    }
    await this.stopFollowing();
    return state;
  }

  private apply(data: Uint8Array, seq: number): void {
    let change;
    try {
      change = sessionChangeSchema.parse(safeParseJson(data, this.rt.limits));
    } catch (err) {
      this.rt.log.error({ err, seq }, "sessions: a change set in the stream is unreadable; skipped");
      this.store.logTxn((log) => log.setAppliedInTxn(seq));
      return;
    }
    if (change.parts > 1) {
      if (change.part === 0 || this.partial?.txn !== change.txn) this.partial = { txn: change.txn, ops: [] };
      this.partial.ops.push(...change.ops);
      if (change.part < change.parts - 1) return;
      const ops = this.partial.ops;
      this.partial = undefined;
      this.store.applyChange(ops, seq);
      return;
    }
    this.store.applyChange(change.ops, seq);
  }
}

/** The ops of one change set in groups that each fit `maxBytes` as JSON (a single larger op stays alone). */
export function splitOps(ops: SessionChangeOp[], maxBytes: number): SessionChangeOp[][] {
  if (jsonBytes(ops) <= maxBytes) return [ops];
  const parts: SessionChangeOp[][] = [];
  let current: SessionChangeOp[] = [];
  let size = 2;
  for (const op of ops) {
    const bytes = jsonBytes(op) + 1;
    if (current.length > 0 && size + bytes > maxBytes) {
      parts.push(current);
      current = [];
      size = 2;
    }
    current.push(op);
    size += bytes;
  }
  if (current.length > 0) parts.push(current);
  return parts;
}
