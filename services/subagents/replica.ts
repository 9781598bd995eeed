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
import { parseKvValue } from "../../shared/runtime/lease.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { childRecordSchema, type ChildRecord, type ChildStore } from "./store.js";

const keyOf = (runId: string) => `child.${runId}`;

export class ChildReplica {
  private constructor(private readonly kv: KvReplica, private readonly store: ChildStore, private readonly log: Logger) {}

  static async open(nc: NatsConnection, store: ChildStore, log: Logger): Promise<ChildReplica> {
    return new ChildReplica(await KvReplica.open(nc, SUBAGENTS_BUCKET, log), store, log);
  }

  /** One record written (undefined: removed); resolves once it is in the bucket. */
  write(runId: string, record: ChildRecord | undefined): Promise<void> {
    return this.kv.write(keyOf(runId), record);
  }

  drain(): Promise<void> {
    return this.kv.drain();
  }

  /** The bucket into LMDB, then what only LMDB has into the bucket. */
  async load(): Promise<{ children: number; published: number }> {
    const entries = await this.kv.entries();
    let children = 0;
    for (const [key, value] of entries) {
      const record = key.startsWith("child.") ? parseKvValue(childRecordSchema, value) : undefined;
      if (!record) {
        this.log.warn({ key }, "skipped a subagents entry that does not parse");
        continue;
      }
      await this.store.replace(record);
      children++;
    }
    let published = 0;
    for (const record of this.store.records()) {
      if (entries.has(keyOf(record.runId))) continue;
      await this.write(record.runId, record);
      published++;
    }
    return { children, published };
  }
}
