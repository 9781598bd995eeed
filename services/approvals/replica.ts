/**
 * The approval records in the KV bucket `lurk_approvals` (APPROVALS_BUCKET; kv-replica.ts), for
 * the instance that takes the lease next: key `approval.<approvalId>` = the ApprovalRecord.
 * Every create, decision, expiry and redeem is in the bucket before it is answered, so a
 * takeover never brings back a pending record that was decided or a token that was used; a
 * change that could not be written is answered UNAVAILABLE (fail closed: a redeem that was not
 * replicated does not let its call run).
 * `load()`, on taking the lease, applies the bucket to this host's LMDB (its copy is older), then
 * writes what only LMDB has (an install from before the bucket). An entry that does not parse is
 * skipped with a warning.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { APPROVALS_BUCKET, approvalRecordSchema, LurkError, type ApprovalRecord } from "../../shared/contract/index.js";
import { KvReplica } from "../../shared/runtime/kv-replica.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { ApprovalStore } from "./store.js";

const PREFIX = "approval.";
const keyOf = (approvalId: string) => `${PREFIX}${approvalId}`;

export class ApprovalReplica {
  private constructor(private readonly kv: KvReplica, private readonly store: ApprovalStore) {}

  static async open(nc: NatsConnection, store: ApprovalStore, log: Logger): Promise<ApprovalReplica> {
    return new ApprovalReplica(await KvReplica.open(nc, APPROVALS_BUCKET, log), store);
  }

  /** One record written; resolves once it is in the bucket, throws UNAVAILABLE when it could not be written. */
  async write(record: ApprovalRecord): Promise<void> {
    if (await this.kv.tryWrite(keyOf(record.approvalId), record)) return;
    throw new LurkError("UNAVAILABLE", `approval ${record.approvalId} changed on this host but could not be replicated (JetStream); retry in a few seconds`);
  }

  drain(): Promise<void> {
    return this.kv.drain();
  }

  /** The bucket into LMDB, then what only LMDB has into the bucket. */
  load(): Promise<{ applied: number; skipped: number; published: number }> {
    return this.kv.syncRecords(PREFIX, approvalRecordSchema, (record) => this.store.replace(record), this.store.all().map((record) => [record.approvalId, record]));
  }
}
