/**
 * The heartbeat state, replicated for the next active instance through the JetStream KV bucket
 * `lurk_heartbeat` (HEARTBEAT_BUCKET, history 1): key `agent.<agentId>` = the AgentState,
 * `alert.<agentId>.<hash>` = `{ at }` (when that alert text was last delivered).
 *
 * Contract:
 * - Only the lease holder writes. Its changes (HeartbeatStore.onChange) are written in the order
 *   made; a durable store change resolves once its write is in JetStream, so a run under way, a
 *   next due time or a delivered alert survives the loss of this host.
 * - `load()`, when an instance takes the lease, applies the bucket to its LMDB (a standby's copy
 *   is older than the bucket), then writes what only LMDB has (an install from before the bucket).
 * - An entry that does not parse is skipped with a warning; the state it held starts fresh.
 */
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { HEARTBEAT_BUCKET } from "../../shared/contract/index.js";
import { parseKvValue } from "../../shared/runtime/lease.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { agentStateSchema, type HeartbeatStore, type StoreChange } from "./store.js";

const alertValueSchema = z.object({ at: z.number() });

const agentKey = (agentId: string) => `agent.${agentId}`;
const alertKey = (agentId: string, hash: string) => `alert.${agentId}.${hash}`;

export class StateReplica {
  /** the writes in the order they were made */
  private chain: Promise<void> = Promise.resolve();

  private constructor(private readonly kv: KV, private readonly store: HeartbeatStore, private readonly log: Logger) {}

  static async open(nc: NatsConnection, store: HeartbeatStore, log: Logger): Promise<StateReplica> {
    return new StateReplica(await new Kvm(nc).open(HEARTBEAT_BUCKET), store, log);
  }

  /** Queues one change; resolves once it is written (a failure is logged, not thrown: LMDB still has it). */
  write(change: StoreChange): Promise<void> {
    this.chain = this.chain.then(() => this.put(change)).catch((err) => {
      this.log.warn({ err, change: change.kind, agentId: change.agentId }, "could not replicate a heartbeat state change");
    });
    return this.chain;
  }

  /** Resolves once every change queued so far is written. */
  drain(): Promise<void> {
    return this.chain;
  }

  private async put(change: StoreChange): Promise<void> {
    if (change.kind === "agent") await this.kv.put(agentKey(change.agentId), JSON.stringify(change.state));
    else if (change.kind === "alert") await this.kv.put(alertKey(change.agentId, change.hash), JSON.stringify({ at: change.at }));
    else await this.kv.delete(alertKey(change.agentId, change.hash));
  }

  /** The bucket into LMDB, then what only LMDB has into the bucket. Returns what it applied. */
  async load(): Promise<{ agents: number; alerts: number; published: number }> {
    const seen = new Set<string>();
    let agents = 0;
    let alerts = 0;
    const keys: string[] = [];
    for await (const key of await this.kv.keys()) keys.push(key);
    for (const key of keys) {
      const entry = await this.kv.get(key);
      if (!entry || entry.operation !== "PUT") continue;
      seen.add(key);
      const [kind, agentId, hash] = key.split(".");
      if (kind === "agent" && agentId) {
        const state = parseKvValue(agentStateSchema, entry.value);
        if (state) {
          await this.store.replace(agentId, state);
          agents++;
        } else this.log.warn({ key }, "skipped a heartbeat state entry that does not parse");
      } else if (kind === "alert" && agentId && hash) {
        const alert = parseKvValue(alertValueSchema, entry.value);
        if (alert) {
          await this.store.setAlert(agentId, hash, alert.at);
          alerts++;
        }
      }
    }
    let published = 0;
    for (const change of [...this.store.entries()]) {
      const key = change.kind === "agent" ? agentKey(change.agentId) : alertKey(change.agentId, (change as { hash: string }).hash);
      if (seen.has(key)) continue;
      await this.write(change);
      published++;
    }
    return { agents, alerts, published };
  }
}
