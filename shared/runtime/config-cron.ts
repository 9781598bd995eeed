/**
 * The `cron` key of the configuration (services/cron, seeds 001 §3.8):
 *   "cron": { "leaseTtlMs": 15000, "leaseRenewMs": 5000, "runLogMax": 200, "maxJobs": 10000 }
 * One cron actor is active at a time (a lease in the KV bucket lurk_leases); a standby takes
 * over once the active one has not renewed for `leaseTtlMs`.
 */
import { z } from "zod";

export const CRON_DEFAULTS = {
  enabled: true,
  leaseTtlMs: 15_000,
  leaseRenewMs: 5_000,
  runLogMax: 200,
  maxJobs: 10_000,
};

export const cronConfigSchema = z.object({
  /** false: the actor serves its endpoints but fires nothing */
  enabled: z.boolean().default(CRON_DEFAULTS.enabled),
  /** a lease not renewed for this long lapses and a standby takes over */
  leaseTtlMs: z.number().int().min(1_000).max(600_000).default(CRON_DEFAULTS.leaseTtlMs),
  /** how often the active instance renews (and a standby tries); below leaseTtlMs / 2 */
  leaseRenewMs: z.number().int().min(100).max(300_000).default(CRON_DEFAULTS.leaseRenewMs),
  /** run-log entries kept per job (oldest dropped first) */
  runLogMax: z.number().int().min(1).max(10_000).default(CRON_DEFAULTS.runLogMax),
  /** jobs the store accepts at most */
  maxJobs: z.number().int().min(1).max(1_000_000).default(CRON_DEFAULTS.maxJobs),
}).refine((c) => c.leaseRenewMs * 2 <= c.leaseTtlMs, { message: "cron.leaseRenewMs must be at most half of cron.leaseTtlMs", path: ["leaseRenewMs"] })
  .default(CRON_DEFAULTS);
export type CronConfig = z.infer<typeof cronConfigSchema>;
