/**
 * The `models` config key: additions to and overrides of the agent-runner's built-in model table
 * (services/agent-runner/models.ts) and model aliases.
 *   "models": {
 *     "entries": { "openai/my-finetune": { "contextWindow": 128000, "maxOutput": 16384,
 *                  "capabilities": { "thinking": false }, "cost": { "inputPerMTok": 3, "outputPerMTok": 12 } } },
 *     "aliases": { "fast": "openai/gpt-4o-mini" }
 *   }
 * An entry's fields override the built-in ones field by field; an unknown model gets conservative defaults.
 */
import { z } from "zod";

const perMTok = z.number().nonnegative().max(100_000);

export const modelCostSchema = z.object({
  /** USD per million input tokens (not cached) */
  inputPerMTok: perMTok,
  outputPerMTok: perMTok,
  cacheReadPerMTok: perMTok.optional(),
  cacheWritePerMTok: perMTok.optional(),
});

export const modelEntrySchema = z.object({
  /** tokens the model reads at most (prompt + history + output) */
  contextWindow: z.number().int().min(1024).max(100_000_000).optional(),
  /** tokens one answer may have at most; sent to the provider as its max tokens */
  maxOutput: z.number().int().min(16).max(10_000_000).optional(),
  /** `pdf`: the model takes a PDF as a document (Anthropic, OpenAI); off for unknown models */
  capabilities: z.object({ tools: z.boolean(), vision: z.boolean(), thinking: z.boolean(), pdf: z.boolean() }).partial().optional(),
  cost: modelCostSchema.optional(),
});
export type ModelEntryConfig = z.infer<typeof modelEntrySchema>;

export const modelRefSchema = z.string().regex(/^[a-z0-9-]+\/.+$/, "provider/model, e.g. openai/gpt-4o-mini");

export const modelsConfigSchema = z.object({
  /** keyed by `provider/model` */
  entries: z.record(modelRefSchema, modelEntrySchema).default({}),
  /** short name -> `provider/model` (these win over the built-in aliases) */
  aliases: z.record(z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "an alias is letters, digits, '.', '_', '-'"), modelRefSchema).default({}),
}).default({ entries: {}, aliases: {} });
export type ModelsConfig = z.infer<typeof modelsConfigSchema>;
