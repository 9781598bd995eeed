/**
 * The `cron` key of the configuration (services/cron, seeds 001 §3.8):
 *   "cron": { "leaseTtlMs": 15000, "leaseRenewMs": 5000, "runLogMax": 200, "maxJobs": 10000 }
 * One cron actor is active at a time (a lease in the KV bucket lurk_leases); a standby takes
 * over once the active one has not renewed for `leaseTtlMs`.
 */
import { z } from "zod";
import { LEASE_DEFAULTS, leaseConfigShape, leaseRenewRule } from "./config-lease.js";

export const CRON_DEFAULTS = {
  enabled: true,
  ...LEASE_DEFAULTS,
  runLogMax: 200,
  maxJobs: 10_000,
};

export const cronConfigSchema = z.object({
  /** false: the actor serves its endpoints but fires nothing */
  enabled: z.boolean().default(CRON_DEFAULTS.enabled),
  ...leaseConfigShape,
  /** run-log entries kept per job (oldest dropped first) */
  runLogMax: z.number().int().min(1).max(10_000).default(CRON_DEFAULTS.runLogMax),
  /** jobs the store accepts at most */
  maxJobs: z.number().int().min(1).max(1_000_000).default(CRON_DEFAULTS.maxJobs),
}).refine(...leaseRenewRule("cron")).default(CRON_DEFAULTS);
export type CronConfig = z.infer<typeof cronConfigSchema>;
