/**
 * A copy of an actor's LMDB state in a JetStream KV bucket, for the instance that takes over on
 * another host (active-instance.ts). Only the active instance writes.
 *
 * Contract:
 * - `write(key, value)` (undefined: delete) goes out in the order called; the promise resolves
 *   once that write is in JetStream. A failed write is logged and the chain goes on: LMDB keeps
 *   the change and the next takeover of this host publishes what the bucket lacks.
 * - `entries()` lists the bucket's live keys with their values (JSON checked by the caller).
 */
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "./logger.js";

export class KvReplica {
  private chain: Promise<void> = Promise.resolve();

  private constructor(private readonly kv: KV, private readonly log: Logger) {}

  static async open(nc: NatsConnection, bucket: string, log: Logger): Promise<KvReplica> {
    return new KvReplica(await new Kvm(nc).open(bucket), log);
  }

  write(key: string, value: unknown): Promise<void> {
    this.chain = this.chain
      .then(async () => {
        if (value === undefined) await this.kv.delete(key);
        else await this.kv.put(key, JSON.stringify(value));
      })
      .catch((err) => this.log.warn({ err, key }, "could not replicate a state change"));
    return this.chain;
  }

  /** Resolves once every write queued so far is done. */
  drain(): Promise<void> {
    return this.chain;
  }

  /** The bucket's live entries: key -> value bytes. */
  async entries(): Promise<Map<string, Uint8Array>> {
    const keys: string[] = [];
    for await (const key of await this.kv.keys()) keys.push(key);
    const out = new Map<string, Uint8Array>();
    for (const key of keys) {
      const entry = await this.kv.get(key);
      if (entry && entry.operation === "PUT") out.set(key, entry.value);
    }
    return out;
  }
}
