/**
 * The heartbeat state in the KV bucket `lurk_heartbeat` (HEARTBEAT_BUCKET; kv-replica.ts), for
 * the instance that takes the lease next: key `agent.<agentId>` = the AgentState,
 * `alert.<agentId>.<hash>` = `{ at }` (when that alert text was last delivered).
 * `load()`, on taking the lease, applies the bucket to this host's LMDB (its copy is older), then
 * writes what only LMDB has (an install from before the bucket). An entry that does not parse is
 * skipped with a warning.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { HEARTBEAT_BUCKET } from "../../shared/contract/index.js";
import { KvReplica } from "../../shared/runtime/kv-replica.js";
import { parseKvValue } from "../../shared/runtime/lease.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { agentStateSchema, type HeartbeatStore, type StoreChange } from "./store.js";

const alertValueSchema = z.object({ at: z.number() });

const keyOf = (change: StoreChange) => change.kind === "agent" ? `agent.${change.agentId}` : `alert.${change.agentId}.${change.hash}`;
const valueOf = (change: StoreChange) => change.kind === "agent" ? change.state : change.kind === "alert" ? { at: change.at } : undefined;

export class StateReplica {
  private constructor(private readonly kv: KvReplica, private readonly store: HeartbeatStore) {}

  static async open(nc: NatsConnection, store: HeartbeatStore, log: Logger): Promise<StateReplica> {
    return new StateReplica(await KvReplica.open(nc, HEARTBEAT_BUCKET, log), store);
  }

  /** One change of the store; resolves once it is in the bucket. */
  write(change: StoreChange): Promise<void> {
    return this.kv.write(keyOf(change), valueOf(change));
  }

  drain(): Promise<void> {
    return this.kv.drain();
  }

  /** The bucket into LMDB, then what only LMDB has into the bucket. */
  load(): Promise<{ applied: number; skipped: number; published: number }> {
    return this.kv.sync(async (key, value) => {
      const [kind, agentId, hash] = key.split(".");
      const state = kind === "agent" && agentId ? parseKvValue(agentStateSchema, value) : undefined;
      if (state) await this.store.replace(agentId!, state);
      const alert = kind === "alert" && agentId && hash ? parseKvValue(alertValueSchema, value) : undefined;
      if (alert) await this.store.setAlert(agentId!, hash!, alert.at);
      return state !== undefined || alert !== undefined;
    }, [...this.store.entries()].map((change) => [keyOf(change), valueOf(change)]));
  }
}
