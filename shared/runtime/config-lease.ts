/**
 * The lease settings of an actor with one active instance (cron, heartbeat, subagents), the same
 * two keys under each actor's config key:
 *   "<actor>": { "leaseTtlMs": 15000, "leaseRenewMs": 5000 }
 * A standby takes over once the active instance has not renewed for `leaseTtlMs` (at once when
 * it gave the lease up on a clean stop).
 */
import { z } from "zod";

export const LEASE_DEFAULTS = { leaseTtlMs: 15_000, leaseRenewMs: 5_000 };

export const leaseConfigShape = {
  /** a lease not renewed for this long lapses and a standby takes over */
  leaseTtlMs: z.number().int().min(1_000).max(600_000).default(LEASE_DEFAULTS.leaseTtlMs),
  /** how often the active instance renews (and a standby tries); at most half of leaseTtlMs */
  leaseRenewMs: z.number().int().min(100).max(300_000).default(LEASE_DEFAULTS.leaseRenewMs),
};

/** The rule between the two, for `.refine(...)` on the actor's config object. */
export function leaseRenewRule(key: string): [(c: { leaseTtlMs: number; leaseRenewMs: number }) => boolean, { message: string; path: string[] }] {
  return [
    (c) => c.leaseRenewMs * 2 <= c.leaseTtlMs,
    { message: `${key}.leaseRenewMs must be at most half of ${key}.leaseTtlMs`, path: ["leaseRenewMs"] },
  ];
}
