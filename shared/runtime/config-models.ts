/**
 * The `models` config key: additions to and overrides of the agent-runner's built-in model table
 * (services/agent-runner/models.ts) and model aliases.
 *   "models": {
 *     "entries": { "openai/my-finetune": { "contextWindow": 128000, "maxOutput": 16384,
 *                  "capabilities": { "thinking": false }, "cost": { "inputPerMTok": 3, "outputPerMTok": 12 } } },
 *     "aliases": { "fast": "openai/gpt-4o-mini" }
 *   }
 * An entry's fields override the built-in ones field by field; an unknown model gets conservative defaults.
 * Speech and transcription models are priced by their own units, not tokens (the usage ledger,
 * shared/runtime/media-prices.ts): `"elevenlabs/eleven_multilingual_v2": { "cost": { "perMChars": 120 } }`
 * (USD per million characters synthesized), `"openai/whisper-1": { "cost": { "perAudioMinute": 0.006 } }`
 * (USD per minute of audio transcribed). A cost names token prices (both input and output), a
 * unit price, or both; the token prices of an entry replace the built-in ones together, a unit
 * price its own built-in one.
 * `temperature` is the model's default sampling temperature; `fixedTemperature: true` marks a model
 * that refuses one; `reasoningTags` / `reasoningReplay`: inline `<think>` reasoning (shared/runtime/models.ts).
 */
import { z } from "zod";

const perMTok = z.number().nonnegative().max(100_000);

export const modelCostSchema = z.object({
  /** USD per million input tokens (not cached); with outputPerMTok */
  inputPerMTok: perMTok.optional(),
  outputPerMTok: perMTok.optional(),
  cacheReadPerMTok: perMTok.optional(),
  cacheWritePerMTok: perMTok.optional(),
  /** speech models: USD per million characters synthesized */
  perMChars: z.number().nonnegative().max(100_000).optional(),
  /** transcription models: USD per minute of audio transcribed */
  perAudioMinute: z.number().nonnegative().max(1_000).optional(),
}).superRefine((c, ctx) => {
  if ((c.inputPerMTok === undefined) !== (c.outputPerMTok === undefined)) {
    ctx.addIssue({ code: "custom", input: c, message: "give both inputPerMTok and outputPerMTok (USD per million tokens)" });
  } else if (c.inputPerMTok === undefined && c.perMChars === undefined && c.perAudioMinute === undefined) {
    ctx.addIssue({ code: "custom", input: c, message: "give token prices (inputPerMTok and outputPerMTok), perMChars (speech) or perAudioMinute (transcription)" });
  }
});

export const modelEntrySchema = z.object({
  /** tokens the model reads at most (prompt + history + output) */
  contextWindow: z.number().int().min(1024).max(100_000_000).optional(),
  /** tokens one answer may have at most; sent to the provider as its max tokens */
  maxOutput: z.number().int().min(16).max(10_000_000).optional(),
  /** `pdf`: the model takes a PDF as a document (Anthropic, OpenAI); off for unknown models */
  capabilities: z.object({ tools: z.boolean(), vision: z.boolean(), thinking: z.boolean(), pdf: z.boolean() }).partial().optional(),
  cost: modelCostSchema.optional(),
  /** the model's default sampling temperature (an agent's or a run's wins; unset: none is sent) */
  temperature: z.number().min(0).max(2).optional(),
  /** the model takes no temperature (reasoning models): a configured one is left out */
  fixedTemperature: z.boolean().optional(),
  /** reasoning written as `<think>…</think>` in the text: split out anywhere (true), never (false), or when a message begins with it ("auto", the default) */
  reasoningTags: z.union([z.boolean(), z.literal("auto")]).optional(),
  /** that thinking goes back to the model inside the assistant text on later turns (OpenAI-compatible APIs; MiniMax wants it) */
  reasoningReplay: z.boolean().optional(),
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
