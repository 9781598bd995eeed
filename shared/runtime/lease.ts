/**
 * One active instance of a stateful actor: a lease in the JetStream KV bucket `lurk_leases`
 * (LEASE_BUCKET), written with compare-and-set on the key's revision.
 *
 * Contract:
 * - `acquire()` takes a free, released or lapsed lease (create, or update at the revision it
 *   read) and renews one it holds; two contenders can never both succeed for one revision.
 * - A lease lapses when its holder did not renew for `ttlMs`. nats-server 2.9 has no per-key
 *   TTL, so a standby judges that itself: the same revision seen for `ttlMs` of its own
 *   monotonic time, or an entry older than `ttlMs` by the server's write timestamp.
 * - `held` is false once the last successful renewal is older than `ttlMs - margin` (a holder
 *   cut off from the server stops acting before a standby may take over).
 * - `release()` marks the lease released so a standby takes over at once.
 * - With `holderGone` (opt-in), a live lease whose holder it declares gone (dead-holder.ts: a
 *   crashed process of this host) is taken at once, like a released one.
 * The bucket is created by the admin (ensureStreams); actors only read and write it.
 */
import { hostname } from "node:os";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { LEASE_BUCKET, safeParseJson } from "../contract/index.js";

export interface LeaseOptions {
  /** the KV key, e.g. the actor name ("cron") */
  key: string;
  /** who we are (unique per instance) */
  holder: string;
  /** the holder's NATS service instance id, so `lurkbot status` can tell which instance is active */
  instance?: string;
  ttlMs: number;
  bucket?: string;
  /** monotonic-ish local clock, for tests */
  now?: () => number;
  /** true when the holder of a live lease is known to be gone (its lease is then taken at once) */
  holderGone?: (holder: Omit<LeaseHolder, "live">) => Promise<boolean>;
}

const leaseValueSchema = z.object({
  holder: z.string(),
  host: z.string().optional(),
  pid: z.number().optional(),
  instance: z.string().optional(),
  ttlMs: z.number().int().positive(),
  renewedAt: z.number(),
  released: z.boolean().default(false),
});
type LeaseValue = z.infer<typeof leaseValueSchema>;

export class Lease {
  private revision = 0;
  private renewedLocalAt = -Infinity;
  /** what a standby saw last: the revision and since when (local clock) */
  private seen: { revision: number; since: number } | undefined;

  private constructor(private readonly kv: KV, readonly opts: Required<Omit<LeaseOptions, "bucket" | "instance" | "holderGone">> & Pick<LeaseOptions, "instance" | "holderGone">) {}

  static async open(nc: NatsConnection, opts: LeaseOptions): Promise<Lease> {
    const kv = await new Kvm(nc).open(opts.bucket ?? LEASE_BUCKET);
    return new Lease(kv, { key: opts.key, holder: opts.holder, ttlMs: opts.ttlMs, now: opts.now ?? (() => performance.now()), ...(opts.instance ? { instance: opts.instance } : {}), ...(opts.holderGone ? { holderGone: opts.holderGone } : {}) });
  }

  /** True while our last renewal is fresh (with a margin of a fifth of the TTL). */
  get held(): boolean {
    return this.revision > 0 && this.opts.now() - this.renewedLocalAt < this.opts.ttlMs * 0.8;
  }

  /** Takes or renews the lease; false when another live holder has it. Network errors throw. */
  async acquire(): Promise<boolean> {
    const entry = await this.kv.get(this.opts.key);
    const now = this.opts.now();
    if (!entry || entry.operation !== "PUT") return this.write(() => this.kv.create(this.opts.key, this.value()), now);
    const current = parseKvValue(leaseValueSchema, entry.value);
    if (current?.holder === this.opts.holder && entry.revision === this.revision) {
      return this.write(() => this.kv.update(this.opts.key, this.value(), entry.revision), now);
    }
    this.revision = 0;
    if (!this.seen || this.seen.revision !== entry.revision) this.seen = { revision: entry.revision, since: now };
    const ttl = current?.ttlMs ?? this.opts.ttlMs;
    const stale = now - this.seen.since >= ttl || Date.now() - entry.created.getTime() >= ttl;
    if (current && !current.released && !stale && !(await this.opts.holderGone?.(current).catch(() => false))) return false;
    return this.write(() => this.kv.update(this.opts.key, this.value(), entry.revision), now);
  }

  /** Renews a held lease; false (and no longer held) when someone else took it. */
  async renew(): Promise<boolean> {
    if (this.revision === 0) return false;
    return this.write(() => this.kv.update(this.opts.key, this.value(), this.revision), this.opts.now());
  }

  /** Gives the lease up so a standby takes over at once (best effort). */
  async release(): Promise<void> {
    if (this.revision === 0) return;
    const rev = this.revision;
    this.revision = 0;
    await this.kv.update(this.opts.key, this.value(true), rev).catch(() => undefined);
  }

  private value(released = false): string {
    const v: LeaseValue = { holder: this.opts.holder, host: hostname(), pid: process.pid, ...(this.opts.instance ? { instance: this.opts.instance } : {}), ttlMs: this.opts.ttlMs, renewedAt: Date.now(), released };
    return JSON.stringify(v);
  }

  private async write(put: () => Promise<number>, startedAt: number): Promise<boolean> {
    try {
      this.revision = await put();
      this.renewedLocalAt = startedAt;
      this.seen = undefined;
      return true;
    } catch (err) {
      if (isWrongRevision(err)) {
        this.revision = 0;
        return false;
      }
      throw err;
    }
  }
}

/** Who holds a lease, as a reader sees it (`lurkbot status`). */
export interface LeaseHolder {
  holder: string;
  host?: string;
  pid?: number;
  /** the holder's service instance id */
  instance?: string;
  /** not released, and written within its TTL (by the server's clock) */
  live: boolean;
}

/** The holders of the given leases (absent keys left out); read-only. */
export async function readLeases(nc: NatsConnection, keys: readonly string[], bucket = LEASE_BUCKET): Promise<Map<string, LeaseHolder>> {
  const kv = await new Kvm(nc).open(bucket);
  const out = new Map<string, LeaseHolder>();
  for (const key of keys) {
    const entry = await kv.get(key);
    const value = entry && entry.operation === "PUT" ? parseKvValue(leaseValueSchema, entry.value) : undefined;
    if (!entry || !value) continue;
    const live = !value.released && Date.now() - entry.created.getTime() < value.ttlMs;
    out.set(key, { holder: value.holder, ...(value.host ? { host: value.host } : {}), ...(value.pid ? { pid: value.pid } : {}), ...(value.instance ? { instance: value.instance } : {}), live });
  }
  return out;
}

/** A KV entry's value checked against `schema`; undefined when it is not JSON or does not match. */
export function parseKvValue<T>(schema: z.ZodType<T>, data: Uint8Array): T | undefined {
  try {
    const parsed = schema.safeParse(safeParseJson(data));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** A KV create/update/delete refused because the key's revision moved (compare-and-set lost). */
export function isWrongRevision(err: unknown): boolean {
  const e = err as { code?: number | string; api_error?: { err_code?: number }; message?: string };
  const code = e?.api_error?.err_code ?? e?.code;
  return code === 10071 || code === 10164 || /wrong last sequence|key exists/i.test(e?.message ?? "");
}

export interface LeaseKeeperOptions {
  /** how often the lease is renewed (holder) or tried (standby); about a third of the TTL */
  intervalMs: number;
  /** called on every change of `active` */
  onChange(active: boolean): void;
  onError?(err: unknown): void;
}

/** Keeps trying and renewing a lease on a timer and reports when we become active or stop being. */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private active = false;
  private stopped = false;
  private ticking: Promise<void> = Promise.resolve();

  constructor(readonly lease: Lease, private readonly opts: LeaseKeeperOptions) {}

  get isActive(): boolean {
    return this.active && this.lease.held;
  }

  start(): void {
    this.schedule(0);
  }

  /** One try now (tests, start-up); resolves once `active` reflects it. */
  tick(): Promise<void> {
    this.ticking = this.ticking.then(async () => {
      if (this.stopped) return;
      let ok = false;
      try {
        ok = await this.lease.acquire();
      } catch (err) {
        this.opts.onError?.(err);
        ok = this.lease.held;
      }
      this.set(ok && this.lease.held);
    });
    return this.ticking;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking.catch(() => undefined);
    this.set(false);
    await this.lease.release();
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.tick().finally(() => this.schedule(this.opts.intervalMs));
    }, delayMs);
    this.timer.unref();
  }

  private set(active: boolean): void {
    if (active === this.active) return;
    this.active = active;
    this.opts.onChange(active);
  }
}
