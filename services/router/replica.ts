/**
 * The router's state in the KV bucket `lurk_router` (ROUTER_BUCKET; kv-replica.ts), for the
 * router instance that takes the lease next:
 * - `run.<runId>` = { sessionKey, since }: a run holding its session's lane (written when it is
 *   dispatched, or when a run another actor stored in RUNS starts; removed when it ends; not
 *   awaited: a dispatch does not wait for it);
 * - `pending.<code>` / `approved.<channel>.<sender>`: DM pairing (pairing.ts), written before
 *   the change is answered;
 * - `meta.pairing` = { since }: the bucket holds the pairing records (written once, by the first
 *   instance that published its LMDB's records: an install from before the bucket);
 * - `group.<hash of the session key>` = { sessionKey, lines }: a group's messages kept as context
 *   (group-context.ts; bounded in count, bytes and age), rewritten when one is kept, removed when
 *   they are shown to the model; not awaited: losing the last few to a crash only loses context;
 * - `handled.<hash of channel:messageId>` = { key, at }: a message handled without a run of its
 *   own (handled-messages.ts), written before it is acked, removed after an hour;
 * - `handoff.<hash of the work's run id>` = { runId, handedTo, at }: the run a message (or a
 *   wake-now inject) was handed to (queue.ts), written before the hand-off is asked, removed after
 *   an hour: its redelivery at the next instance is checked against that run's transcript.
 * Hashed keys stay short and valid KV tokens whatever the ids hold; the value names the id, and
 * an entry whose key does not match its value is skipped.
 * `load()`, on taking the lease: the runs to hold lanes for, the kept group context and handled
 * messages, and the pairing records replace this host's (a sender revoked on another host stays
 * revoked); without `meta.pairing` this host's records are published first.
 */
import { createHash } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { pairingApprovedSchema, pairingPendingSchema, ROUTER_BUCKET, sessionKeySchema, type PairingApproved, type PairingPending } from "../../shared/contract/index.js";
import { KvReplica } from "../../shared/runtime/kv-replica.js";
import { parseKvValue } from "../../shared/runtime/lease.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { ContextLine } from "./group-context.js";
import type { PairingChange, PairingStore } from "./pairing.js";
import { replicaKey } from "./pairing.js";

const runEntrySchema = z.object({ sessionKey: sessionKeySchema, since: z.number() });
export type HeldRun = { runId: string } & z.infer<typeof runEntrySchema>;
const PAIRING_MARKER = "meta.pairing";
const groupEntrySchema = z.object({
  sessionKey: sessionKeySchema,
  lines: z.array(z.object({ id: z.string(), from: z.string(), text: z.string(), at: z.number() })).max(500),
});
export type KeptContext = { sessionKey: string; lines: ContextLine[] };
const handledEntrySchema = z.object({ key: z.string().min(1).max(1_000), at: z.number() });
export type HandledEntry = z.infer<typeof handledEntrySchema>;
const handOffEntrySchema = z.object({ runId: z.string().min(1).max(300), handedTo: z.string().min(1).max(300), at: z.number() });
export type HandOffEntry = z.infer<typeof handOffEntrySchema>;

const hashed = (prefix: string, id: string) => `${prefix}${createHash("sha256").update(id).digest("hex").slice(0, 40)}`;
export const groupKey = (sessionKey: string) => hashed("group.", sessionKey);
export const handledKey = (key: string) => hashed("handled.", key);
export const handOffKey = (runId: string) => hashed("handoff.", runId);

/** What a term starts from (term.ts). */
export interface RouterState {
  runs: HeldRun[];
  groups: KeptContext[];
  handled: HandledEntry[];
  handOffs: HandOffEntry[];
}

export class RouterReplica {
  private constructor(private readonly kv: KvReplica, private readonly pairing: PairingStore, private readonly log: Logger) {}

  static async open(nc: NatsConnection, pairing: PairingStore, log: Logger): Promise<RouterReplica> {
    return new RouterReplica(await KvReplica.open(nc, ROUTER_BUCKET, log), pairing, log);
  }

  pairingChanged(change: PairingChange): Promise<void> {
    return this.kv.write(change.key, change.value);
  }

  runHeld(runId: string, sessionKey: string, since: number): void {
    void this.kv.write(`run.${runId}`, { sessionKey, since });
  }

  runEnded(runId: string): void {
    void this.kv.write(`run.${runId}`, undefined);
  }

  /** A group's kept lines (undefined: none left); not awaited (see the header). */
  groupContextChanged(sessionKey: string, lines: readonly ContextLine[] | undefined): void {
    void this.kv.write(groupKey(sessionKey), lines ? { sessionKey, lines } : undefined);
  }

  /** Resolves once the entry is in the bucket (or the write failed, logged): the message may be acked. */
  handled(key: string, at: number): Promise<void> {
    return this.kv.write(handledKey(key), { key, at });
  }

  handledForgotten(key: string): void {
    void this.kv.write(handledKey(key), undefined);
  }

  /** Resolves once the entry is in the bucket (or the write failed, logged): the hand-off may be asked. */
  handOff(runId: string, handedTo: string, at: number): Promise<void> {
    return this.kv.write(handOffKey(runId), { runId, handedTo, at });
  }

  handOffForgotten(runId: string): void {
    void this.kv.write(handOffKey(runId), undefined);
  }

  drain(): Promise<void> {
    return this.kv.drain();
  }

  /** The runs that held lanes, the kept group context and handled messages, and the pairing records into this host's store. */
  async load(): Promise<RouterState & { pairing: number; skipped: number }> {
    const state: RouterState = { runs: [], groups: [], handled: [], handOffs: [] };
    const records: Array<PairingPending | PairingApproved> = [];
    let marked = false;
    let skipped = 0;
    for (const [key, value] of await this.kv.entries()) {
      if (key === PAIRING_MARKER) marked = true;
      else if (key.startsWith("run.")) {
        const entry = parseKvValue(runEntrySchema, value);
        if (entry) state.runs.push({ runId: key.slice("run.".length), ...entry });
        else skipped++;
      } else if (key.startsWith("group.")) {
        const entry = parseKvValue(groupEntrySchema, value);
        if (entry && groupKey(entry.sessionKey) === key) state.groups.push(entry);
        else skipped++;
      } else if (key.startsWith("handled.")) {
        const entry = parseKvValue(handledEntrySchema, value);
        if (entry && handledKey(entry.key) === key) state.handled.push(entry);
        else skipped++;
      } else if (key.startsWith("handoff.")) {
        const entry = parseKvValue(handOffEntrySchema, value);
        if (entry && handOffKey(entry.runId) === key) state.handOffs.push(entry);
        else skipped++;
      } else if (key.startsWith("pending.") || key.startsWith("approved.")) {
        const record = key.startsWith("pending.") ? parseKvValue(pairingPendingSchema, value) : parseKvValue(pairingApprovedSchema, value);
        if (record && replicaKey(record) === key) records.push(record);
        else skipped++;
      }
    }
    if (skipped > 0) this.log.warn({ skipped }, "skipped replicated router entries that do not parse");
    if (marked) {
      await this.pairing.replaceAll(records);
      return { ...state, pairing: records.length, skipped };
    }
    // the first instance with the bucket: its records (and any already there) become the shared ones
    const local = this.pairing.records();
    for (const record of local) await this.kv.write(replicaKey(record), record);
    await this.kv.write(PAIRING_MARKER, { since: Date.now() });
    await this.kv.drain();
    return { ...state, pairing: local.length, skipped };
  }
}
