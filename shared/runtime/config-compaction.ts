/**
 * Context compaction and memory consolidation settings of the agent-runner
 * (services/agent-runner/compaction.ts, consolidation.ts). The context window comes from the
 * model table (`models.entries["provider/model"].contextWindow` overrides it).
 */
import { z } from "zod";
import { memoryEmbeddingsConfigSchema } from "./config-embeddings.js";
import { modelRefSchema } from "./config-models.js";

export const COMPACTION_DEFAULTS = {
  enabled: true,
  /** compact before a run when the estimated prompt passes this share of the model's context window */
  thresholdRatio: 0.8,
  /** tokens left free for the model's answer: the prompt may use at most window - reserveTokens (capped at half the window) */
  reserveTokens: 16_384,
  /** the most recent messages always kept verbatim (tool call/result groups are never split) */
  keepRecent: 4,
};

export const compactionConfigSchema = z.object({
  enabled: z.boolean().default(COMPACTION_DEFAULTS.enabled),
  thresholdRatio: z.number().min(0.1).max(0.95).default(COMPACTION_DEFAULTS.thresholdRatio),
  reserveTokens: z.number().int().min(0).max(1_000_000).default(COMPACTION_DEFAULTS.reserveTokens),
  keepRecent: z.number().int().min(1).max(200).default(COMPACTION_DEFAULTS.keepRecent),
  /**
   * the model that writes compaction summaries and memory consolidations (`provider/model`; e.g. a
   * cheaper one); the run's own models follow it as fallbacks. Absent: the run's models.
   */
  model: modelRefSchema.optional(),
}).default(COMPACTION_DEFAULTS);
export type CompactionConfig = z.infer<typeof compactionConfigSchema>;

export const MEMORY_DEFAULTS = {
  enabled: true,
  /** messages since the last consolidation that trigger one; the older half goes to MEMORY.md/HISTORY.md */
  window: 50,
};

export const memoryConfigSchema = z.object({
  enabled: z.boolean().default(MEMORY_DEFAULTS.enabled),
  window: z.number().int().min(4).max(5_000).default(MEMORY_DEFAULTS.window),
  /** hybrid memory_search (keywords and vectors) with this embedding model; absent: keywords only (config-embeddings.ts) */
  embeddings: memoryEmbeddingsConfigSchema.optional(),
}).default(MEMORY_DEFAULTS);
export type MemoryConfig = z.infer<typeof memoryConfigSchema>;
