/**
 * The sessions actor's usage ledger (services/sessions/usage-ledger.ts) and
 * `lurk.sessions.usage_report`: what the assistant spent, in tokens, characters of speech, seconds
 * of transcribed audio and USD, summed per UTC day, agent, `provider/model`, channel, session type
 * and purpose. Every usage update the sessions actor takes (a run's end through `append` with
 * usage, the `usage` op) adds to the buckets of its parts (one per model and purpose); each part's
 * cost is priced at its own model when the update arrives (built-in prices, config `models`
 * overrides); tokens, characters or seconds of a model without a known price are counted as
 * `unpricedTokens` / `unpricedChars` / `unpricedAudioSeconds` instead. The units stay apart:
 * tokens are never characters or seconds.
 */
import { z } from "zod";
import { agentIdSchema, usageSchema } from "../common.js";
import { defineMessage } from "../envelope.js";

/**
 * What a model call was for: a run's own turns, or the runner's housekeeping (compaction
 * summaries, memory consolidation, `tts`: the LLM summary of a long reply made for speech,
 * embedding vectors for memory_search); `speech`: audio synthesized (characters, not tokens);
 * `transcription`: audio transcribed (seconds, not tokens); `image`: the image tool's question to
 * the vision model (tokens).
 */
export const USAGE_PURPOSES = ["turn", "compaction", "consolidation", "tts", "embedding", "speech", "transcription", "image"] as const;
export const usagePurposeSchema = z.enum(USAGE_PURPOSES);
export type UsagePurpose = z.infer<typeof usagePurposeSchema>;

/** most parts in one usage update (models × purposes of one run) */
export const MAX_USAGE_PARTS = 64;

/**
 * One model's share of a usage update for one purpose: `model` as the provider names it (or
 * `provider/model`), its `provider`, and its tokens. The ledger prices it at that model.
 */
export const usagePartSchema = z.object({
  model: z.string().min(1).max(300),
  provider: z.string().max(64),
  purpose: usagePurposeSchema,
  usage: usageSchema,
});
export type UsagePart = z.infer<typeof usagePartSchema>;

/**
 * What a speech or transcription call is billed by, instead of tokens (`lurk.sessions.usage`
 * `units`): `speech` gives `chars` (the characters synthesized); `transcription` gives
 * `audioSeconds` (the audio's duration), or `durationUnknown` when neither the provider nor the
 * file told it (booked without seconds or cost, counted in `unknownDurations`).
 */
export const usageUnitsSchema = z.object({
  chars: z.number().int().nonnegative().max(10_000_000).optional(),
  audioSeconds: z.number().nonnegative().max(10_000_000).optional(),
  durationUnknown: z.literal(true).optional(),
});
export type UsageUnits = z.infer<typeof usageUnitsSchema>;

const DAY_MS = 86_400_000;

/** The UTC day of a time, `YYYY-MM-DD` (the ledger's days). */
export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** The day `n` days after `day` (before, for a negative `n`). */
export const addDays = (day: string, n: number): string => utcDay(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS);

/** The days of the calendar that exist, as `YYYY-MM-DD` (UTC). */
export const usageDaySchema = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "a day is YYYY-MM-DD").refine((d) => {
  const ms = Date.parse(`${d}T00:00:00Z`);
  return !Number.isNaN(ms) && utcDay(ms) === d;
}, "not a day of the calendar");

/** The sums of a bucket or of a report row. */
export const usageSumsSchema = z.object({
  input: z.number().int().nonnegative(),
  output: z.number().int().nonnegative(),
  cacheRead: z.number().int().nonnegative(),
  cacheWrite: z.number().int().nonnegative(),
  total: z.number().int().nonnegative(),
  /**
   * runs: a run's end counts one, in the `turn` bucket of the model it ended on (with no tokens
   * when that model made none); housekeeping updates (a purpose other than `turn`) count none
   */
  runs: z.number().int().nonnegative(),
  /** USD at the prices known when each update arrived */
  costUsd: z.number().nonnegative(),
  /** tokens of updates whose model had no known price (not in costUsd) */
  unpricedTokens: z.number().int().nonnegative(),
  // speech and transcription (absent in buckets written before them: 0)
  /** characters synthesized (purpose `speech`) */
  chars: z.number().int().nonnegative().default(0),
  /** seconds of audio transcribed (purpose `transcription`) */
  audioSeconds: z.number().nonnegative().default(0),
  /** characters of a speech model without a known price (not in costUsd) */
  unpricedChars: z.number().int().nonnegative().default(0),
  /** seconds of a transcription model without a known price (not in costUsd) */
  unpricedAudioSeconds: z.number().nonnegative().default(0),
  /** transcriptions whose duration was unknown: neither in audioSeconds nor in costUsd */
  unknownDurations: z.number().int().nonnegative().default(0),
});
export type UsageSums = z.infer<typeof usageSumsSchema>;

/** The tokens of a usage update or of sums: their total, else the sum of their parts. */
export const usageTokens = (u: Pick<UsageSums, "input" | "output" | "cacheRead" | "cacheWrite" | "total">): number =>
  u.total || u.input + u.output + u.cacheRead + u.cacheWrite;

const bucketKeyHead = [usageDaySchema, z.string().max(64), z.string().max(300), z.string().max(64), z.string().max(32)] as const;
/**
 * A ledger bucket's key: [UTC day, agent id, `provider/model`, channel ("-" when unknown), session
 * type ("-" when unknown), purpose]. Buckets written before purposes existed have no sixth element
 * and count as `turn` (they hold their runs' compaction and speech summaries too).
 */
export const usageBucketKeySchema = z.union([z.tuple([...bucketKeyHead, z.string().max(32)]), z.tuple([...bucketKeyHead])]);
export type UsageBucketKey = z.infer<typeof usageBucketKeySchema>;

/** The key of a delivered usage op's idempotency key: [UTC day it arrived, the key]. */
export const usageSeenKeySchema = z.tuple([usageDaySchema, z.string().min(1).max(200)]);
export type UsageSeenKey = z.infer<typeof usageSeenKeySchema>;

/**
 * The ledger's change-set ops (sessions replication, `sessionChangeOpSchema`): a bucket's new
 * value (absolute, so applying it twice is harmless), the removal of every day before `before`,
 * an idempotency key of the `usage` op seen (so a standby that takes over still counts a retried
 * update once), and the removal of the keys seen before `before`.
 */
export const usageChangeOpSchemas = [
  z.object({ op: z.literal("usage"), key: usageBucketKeySchema, value: usageSumsSchema }),
  z.object({ op: z.literal("pruneUsage"), before: usageDaySchema }),
  z.object({ op: z.literal("usageSeen"), key: usageSeenKeySchema }),
  z.object({ op: z.literal("pruneUsageSeen"), before: usageDaySchema }),
] as const;

/**
 * The pseudo session key of the ledger's own change sets (`lurk.sesslog.usage-ledger`): not a
 * valid session key, so no session's delete ever purges them.
 */
export const USAGE_LEDGER_CHANGE_KEY = "usage-ledger";

export const USAGE_GROUP_KEYS = ["day", "agent", "model", "channel", "sessionType", "purpose"] as const;
export const usageGroupKeySchema = z.enum(USAGE_GROUP_KEYS);
export type UsageGroupKey = z.infer<typeof usageGroupKeySchema>;

export const sessionsUsageReportRequest = defineMessage("lurk.sessions.usage_report.v1", {
  /** first day (UTC) included; default: the oldest day the ledger holds */
  from: usageDaySchema.optional(),
  /** last day (UTC) included; default: today */
  to: usageDaySchema.optional(),
  /** the row keys, in this order (none: one row with everything) */
  groupBy: z.array(usageGroupKeySchema).max(USAGE_GROUP_KEYS.length).refine((keys) => new Set(keys).size === keys.length, "a group key is named twice"),
  /** only this agent's usage */
  agentId: agentIdSchema.optional(),
});

export const usageReportRowSchema = usageSumsSchema.extend({
  day: z.string().optional(),
  agentId: z.string().optional(),
  model: z.string().optional(),
  channel: z.string().optional(),
  sessionType: z.string().optional(),
  purpose: z.string().optional(),
});
export type UsageReportRow = z.infer<typeof usageReportRowSchema>;

/**
 * The report: rows sorted by their keys in `groupBy` order, their `totals`, the days covered
 * (`from`..`to`, defaults filled in) and the oldest day the ledger holds (null: empty). A report
 * larger than one bus message is refused with PAYLOAD_TOO_LARGE: narrow the range or the grouping.
 */
export const usageReportReply = z.object({
  from: usageDaySchema,
  to: usageDaySchema,
  groupBy: z.array(usageGroupKeySchema),
  rows: z.array(usageReportRowSchema),
  totals: usageSumsSchema,
  ledgerSince: usageDaySchema.nullable(),
});
export type UsageReport = z.infer<typeof usageReportReply>;
