/**
 * The router's state in the KV bucket `lurk_router` (ROUTER_BUCKET; kv-replica.ts), for the
 * router instance that takes the lease next:
 * - `run.<runId>` = { sessionKey, since }: a run holding its session's lane (written when it is
 *   dispatched, removed when it ends; not awaited: a dispatch does not wait for it);
 * - `pending.<code>` / `approved.<channel>.<sender>`: DM pairing (pairing.ts), written before
 *   the change is answered;
 * - `meta.pairing` = { since }: the bucket holds the pairing records (written once, by the first
 *   instance that published its LMDB's records: an install from before the bucket).
 * `load()`, on taking the lease: the runs to hold lanes for, and the pairing records replace this
 * host's (a sender revoked on another host stays revoked); without `meta.pairing` this host's
 * records are published first.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { pairingApprovedSchema, pairingPendingSchema, ROUTER_BUCKET, sessionKeySchema, type PairingApproved, type PairingPending } from "../../shared/contract/index.js";
import { KvReplica } from "../../shared/runtime/kv-replica.js";
import { parseKvValue } from "../../shared/runtime/lease.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { PairingChange, PairingStore } from "./pairing.js";
import { replicaKey } from "./pairing.js";

const runEntrySchema = z.object({ sessionKey: sessionKeySchema, since: z.number() });
export type HeldRun = { runId: string } & z.infer<typeof runEntrySchema>;
const PAIRING_MARKER = "meta.pairing";

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

  drain(): Promise<void> {
    return this.kv.drain();
  }

  /** The runs that held lanes, and the pairing records into this host's store. */
  async load(): Promise<{ runs: HeldRun[]; pairing: number; skipped: number }> {
    const runs: HeldRun[] = [];
    const records: Array<PairingPending | PairingApproved> = [];
    let marked = false;
    let skipped = 0;
    for (const [key, value] of await this.kv.entries()) {
      if (key === PAIRING_MARKER) marked = true;
      else if (key.startsWith("run.")) {
        const entry = parseKvValue(runEntrySchema, value);
        if (entry) runs.push({ runId: key.slice("run.".length), ...entry });
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
      return { runs, pairing: records.length, skipped };
    }
    // the first instance with the bucket: its records (and any already there) become the shared ones
    const local = this.pairing.records();
    for (const record of local) await this.kv.write(replicaKey(record), record);
    await this.kv.write(PAIRING_MARKER, { since: Date.now() });
    await this.kv.drain();
    return { runs, pairing: local.length, skipped };
  }
}
