/**
 * Cluster-wide fire claims in the KV bucket `lurk_cron_fires` (CRON_FIRES_BUCKET, max age three
 * days): key `<jobId>.<scheduledAtMs>`, one per fire id. `claim()` uses KV create, which fails
 * when the key exists, so two instances (or one that lost its LMDB) never both publish a fire,
 * even beyond JetStream's two-minute duplicate window.
 *
 * A claim is "claimed" until its publish succeeded, then "published". A claim left "claimed" by
 * another holder for longer than `staleAfterMs` (the lease TTL: that holder lost its lease
 * mid-fire) may be taken over with compare-and-set; the publish that follows has the same
 * Nats-Msg-Id, so a publish the crashed holder did make is still stored once.
 */
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { CRON_FIRES_BUCKET } from "../../shared/contract/index.js";
import { isWrongRevision, parseKvValue } from "../../shared/runtime/lease.js";

export type ClaimResult = "ours" | "published" | "busy";

const claimSchema = z.object({ holder: z.string(), state: z.enum(["claimed", "published"]), at: z.number() });

export class FireClaims {
  /** our claims' revisions (to mark them published) */
  private readonly revisions = new Map<string, number>();

  private constructor(private readonly kv: KV, private readonly holder: string, private readonly staleAfterMs: number, private readonly now: () => number) {}

  static async open(nc: NatsConnection, holder: string, staleAfterMs: number, now: () => number): Promise<FireClaims> {
    return new FireClaims(await new Kvm(nc).open(CRON_FIRES_BUCKET), holder, staleAfterMs, now);
  }

  /**
   * "ours": publish the fire now, then call published(). "published": someone published it
   * already. "busy": another live holder is publishing it; look again later.
   */
  async claim(fireId: string): Promise<ClaimResult> {
    const key = keyOf(fireId);
    try {
      this.revisions.set(fireId, await this.kv.create(key, this.value("claimed")));
      return "ours";
    } catch (err) {
      if (!isWrongRevision(err)) throw err;
    }
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== "PUT") return this.claim(fireId);
    const current = parseKvValue(claimSchema, entry.value);
    if (current?.state === "published") return "published";
    const mine = current?.holder === this.holder;
    if (!mine && current && this.now() - current.at < this.staleAfterMs) return "busy";
    try {
      this.revisions.set(fireId, await this.kv.update(key, this.value("claimed"), entry.revision));
      return "ours";
    } catch (err) {
      if (isWrongRevision(err)) return "busy";
      throw err;
    }
  }

  /** The fire is stored in its stream: nobody publishes it again. */
  async published(fireId: string): Promise<void> {
    const rev = this.revisions.get(fireId);
    this.revisions.delete(fireId);
    const key = keyOf(fireId);
    if (rev !== undefined) await this.kv.update(key, this.value("published"), rev).catch(() => this.kv.put(key, this.value("published")));
    else await this.kv.put(key, this.value("published"));
  }

  private value(state: "claimed" | "published"): string {
    return JSON.stringify({ holder: this.holder, state, at: this.now() });
  }
}

/** `jobId:scheduledAtMs` -> `jobId.scheduledAtMs` (a KV key has no colon). */
function keyOf(fireId: string): string {
  return fireId.replace(/[^A-Za-z0-9_=/-]/g, ".");
}
