/**
 * The `subagents` config key (services/subagents): limits on child runs and their defaults.
 *   "subagents": { "maxDepth": 1, "maxChildrenPerSession": 5, "maxConcurrent": 8,
 *                  "defaultTimeoutSeconds": 600, "cleanup": "keep", "archiveDays": 7 }
 * maxDepth 1 (the seeds' rule): only a top-level session spawns; a subagent cannot spawn again.
 * One subagents instance is active (lease keys: config-lease.ts).
 */
import { z } from "zod";
import { LEASE_DEFAULTS, leaseConfigShape, leaseRenewRule } from "./config-lease.js";

export const SUBAGENTS_DEFAULTS = {
  maxDepth: 1,
  maxChildrenPerSession: 5,
  maxConcurrent: 8,
  defaultTimeoutSeconds: 600,
  cleanup: "keep" as "keep" | "delete",
  archiveDays: 7,
  ...LEASE_DEFAULTS,
};

export const subagentsConfigSchema = z.object({
  /** how deep children may nest: 1 = a subagent may not spawn another */
  maxDepth: z.number().int().min(1).max(10).default(SUBAGENTS_DEFAULTS.maxDepth),
  /** children of one requester session that may run (or wait to announce) at once */
  maxChildrenPerSession: z.number().int().min(1).max(100).default(SUBAGENTS_DEFAULTS.maxChildrenPerSession),
  /** children running at once over all sessions */
  maxConcurrent: z.number().int().min(1).max(1000).default(SUBAGENTS_DEFAULTS.maxConcurrent),
  /** a child still running after this long is aborted and announced as timed out (a spawn may ask for less or more) */
  defaultTimeoutSeconds: z.number().int().min(1).max(24 * 3600).default(SUBAGENTS_DEFAULTS.defaultTimeoutSeconds),
  /** what happens to a child's session after its announce: "keep" it, or "delete" it */
  cleanup: z.enum(["keep", "delete"]).default(SUBAGENTS_DEFAULTS.cleanup),
  /** finished children stay listed this many days, then their records are dropped */
  archiveDays: z.number().min(0).max(3650).default(SUBAGENTS_DEFAULTS.archiveDays),
  ...leaseConfigShape,
}).refine(...leaseRenewRule("subagents")).default(SUBAGENTS_DEFAULTS);
export type SubagentsConfig = z.infer<typeof subagentsConfigSchema>;
