/**
 * `tools.jobs`: background jobs of the `process` tool (services/tools/jobs/). A job runs in the
 * exec sandbox with exec's limits, inside the tools instance that started it; these caps bound
 * how many jobs an instance keeps, how long one may run, and how much output is kept.
 */
import { z } from "zod";

export const jobsConfigSchema = z.object({
  /** jobs (running or finished, not yet forgotten) one tools instance keeps at once */
  maxJobs: z.number().int().min(1).max(256).default(8),
  /** a job is killed this long after it started (its own timeoutSeconds may be shorter) */
  maxRuntimeMs: z.number().int().min(1_000).max(24 * 3600_000).default(30 * 60_000),
  /** output kept per job in `<workspace>/.lurkbot/jobs/<jobId>.log`, MB; more is dropped (and said so) */
  maxOutputMb: z.number().int().min(1).max(4096).default(16),
  /** a finished job is forgotten this long after it ended (its log file stays) */
  keepFinishedMs: z.number().int().min(0).max(7 * 24 * 3600_000).default(30 * 60_000),
});
export type JobsConfig = z.infer<typeof jobsConfigSchema>;
