/**
 * A copy of an actor's LMDB state in a JetStream KV bucket, for the instance that takes over on
 * another host (active-instance.ts). Only the active instance writes.
 *
 * Contract:
 * - `write(key, value)` (undefined: delete) goes out in the order called; the promise resolves
 *   once that write is in JetStream. A failed write is logged and the chain goes on: LMDB keeps
 *   the change and the next takeover of this host publishes what the bucket lacks. `tryWrite`
 *   is the same and says whether the write got in (for a change that must not count otherwise).
 * - `sync(apply, local)`, when an instance takes over: every live entry of the bucket goes through
 *   `apply` (this host's copy is older); an entry it refuses (false: does not parse) is skipped
 *   with a warning. Then the local entries the bucket lacks (an install from before the bucket)
 *   are written. `entries()` lists the live entries for an actor that applies them itself (the
 *   router replaces its pairing records with the bucket's once the bucket holds them).
 */
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { z } from "zod";
import { parseKvValue } from "./lease.js";
import type { Logger } from "./logger.js";

export class KvReplica {
  private chain: Promise<void> = Promise.resolve();

  private constructor(private readonly kv: KV, private readonly log: Logger) {}

  static async open(nc: NatsConnection, bucket: string, log: Logger): Promise<KvReplica> {
    return new KvReplica(await new Kvm(nc).open(bucket), log);
  }

  write(key: string, value: unknown): Promise<void> {
    return this.tryWrite(key, value).then(() => undefined);
  }

  /** `write`, resolving with true once it is in JetStream, false when it failed (logged). */
  tryWrite(key: string, value: unknown): Promise<boolean> {
    const written = this.chain
      .then(async () => {
        if (value === undefined) await this.kv.delete(key);
        else await this.kv.put(key, JSON.stringify(value));
        return true;
      })
      .catch((err) => {
        this.log.warn({ err, key }, "could not replicate a state change");
        return false;
      });
    this.chain = written.then(() => undefined);
    return written;
  }

  /** Resolves once every write queued so far is done. */
  drain(): Promise<void> {
    return this.chain;
  }

  /**
   * `sync` for one kind of record, each under `<prefix><id>`: the bucket's records that parse with
   * `schema` go through `replace`, then `local` (id, record) pairs the bucket lacks are written.
   */
  syncRecords<T>(prefix: string, schema: z.ZodType<T>, replace: (record: T) => Promise<void>, local: Iterable<[id: string, record: T]>): Promise<{ applied: number; skipped: number; published: number }> {
    return this.sync(async (key, value) => {
      const record = key.startsWith(prefix) ? parseKvValue(schema, value) : undefined;
      if (record !== undefined) await replace(record);
      return record !== undefined;
    }, [...local].map(([id, record]) => [`${prefix}${id}`, record] as [string, T]));
  }

  /** The bucket's live entries (deleted keys left out). */
  async entries(): Promise<Array<[key: string, value: Uint8Array]>> {
    const keys: string[] = [];
    for await (const key of await this.kv.keys()) keys.push(key);
    const out: Array<[string, Uint8Array]> = [];
    for (const key of keys) {
      const entry = await this.kv.get(key);
      if (entry && entry.operation === "PUT") out.push([key, entry.value]);
    }
    return out;
  }

  /** The bucket into the local store through `apply`, then the local entries it lacks into the bucket. */
  async sync(apply: (key: string, value: Uint8Array) => Promise<boolean>, local: Iterable<[key: string, value: unknown]>): Promise<{ applied: number; skipped: number; published: number }> {
    const seen = new Set<string>();
    let applied = 0;
    for (const [key, value] of await this.entries()) {
      seen.add(key);
      if (await apply(key, value)) applied++;
      else this.log.warn({ key }, "skipped a replicated entry that does not parse");
    }
    let published = 0;
    for (const [key, value] of local) {
      if (seen.has(key)) continue;
      await this.write(key, value);
      published++;
    }
    return { applied, skipped: seen.size - applied, published };
  }
}
