/**
 * The child records in the KV bucket `lurk_subagents` (SUBAGENTS_BUCKET; kv-replica.ts), for the
 * instance that takes the lease next: key `child.<runId>` = the ChildRecord (removed with it).
 * `load()`, on taking the lease, applies the bucket to this host's LMDB (its copy is older), then
 * writes what only LMDB has (an install from before the bucket). An entry that does not parse is
 * skipped with a warning.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { SUBAGENTS_BUCKET } from "../../shared/contract/index.js";
import { KvReplica } from "../../shared/runtime/kv-replica.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { childRecordSchema, type ChildRecord, type ChildStore } from "./store.js";

const PREFIX = "child.";
const keyOf = (runId: string) => `${PREFIX}${runId}`;

export class ChildReplica {
  private constructor(private readonly kv: KvReplica, private readonly store: ChildStore) {}

  static async open(nc: NatsConnection, store: ChildStore, log: Logger): Promise<ChildReplica> {
    return new ChildReplica(await KvReplica.open(nc, SUBAGENTS_BUCKET, log), store);
  }

  /** One record written (undefined: removed); resolves once it is in the bucket. */
  write(runId: string, record: ChildRecord | undefined): Promise<void> {
    return this.kv.write(keyOf(runId), record);
  }

  drain(): Promise<void> {
    return this.kv.drain();
  }

  /** The bucket into LMDB, then what only LMDB has into the bucket. */
  load(): Promise<{ applied: number; skipped: number; published: number }> {
    return this.kv.syncRecords(PREFIX, childRecordSchema, (record) => this.store.replace(record), this.store.records().map((record) => [record.runId, record]));
  }
}
