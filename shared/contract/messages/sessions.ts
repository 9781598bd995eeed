/** `lurk.sessions.<op>`: session entries and append-only transcripts (the sessions actor, LMDB). */
import { z } from "zod";
import {
  agentIdSchema, channelNameSchema, listLimitSchema, llmMessageSchema, originSchema, queueDropPolicySchema, queueModeSchema,
  reasoningLevelSchema, sessionKeySchema, sessionTypeSchema, thinkLevelSchema, ttsAutoSchema, usageSchema, verboseLevelSchema,
} from "../common.js";
import { defineMessage, idSchema, timestampSchema } from "../envelope.js";
import { MAX_USAGE_PARTS, usageChangeOpSchemas, usagePartSchema, usagePurposeSchema, usageUnitsSchema } from "./usage.js";

/** A session's own queue settings (/queue); unset fields fall back to the router's config. */
export const sessionQueueSettingsSchema = z.object({
  mode: queueModeSchema.optional(),
  debounceMs: z.number().int().min(0).max(60_000).optional(),
  cap: z.number().int().min(1).max(1000).optional(),
  drop: queueDropPolicySchema.optional(),
});

export const sessionEntrySchema = z.object({
  sessionKey: sessionKeySchema,
  sessionId: idSchema,
  agentId: agentIdSchema,
  sessionType: sessionTypeSchema,
  createdAt: timestampSchema,
  updatedAt: timestampSchema,
  channel: channelNameSchema.optional(),
  /** the last place a user wrote from: heartbeat and cron deliver here with target "last" */
  lastOrigin: originSchema.optional(),
  model: z.string().optional(),
  provider: z.string().optional(),
  thinking: thinkLevelSchema.optional(),
  /** session settings from chat commands (/model, /verbose, /reasoning, /queue); the router applies them to runs */
  modelOverride: z.string().max(200).optional(),
  verbose: verboseLevelSchema.optional(),
  reasoning: reasoningLevelSchema.optional(),
  queue: sessionQueueSettingsSchema.optional(),
  /** /tts: when this session's replies are also spoken (absent: tts.auto) */
  tts: ttsAutoSchema.optional(),
  usage: usageSchema,
  parentSessionKey: sessionKeySchema.optional(),
  label: z.string().max(200).optional(),
  records: z.number().int().nonnegative(),
  /** the run currently holding the session, if any */
  activeRunId: idSchema.optional(),
});
export type SessionEntry = z.infer<typeof sessionEntrySchema>;

/**
 * One transcript line. `id` is chosen by the writer and is stable (e.g. `<runId>:a:<turn>`), so
 * appending the same record twice stores it once: that makes a redelivered run's checkpoints
 * idempotent. `kind` app-only records (context_note, system_event, compaction_summary, run_marker)
 * stay in the transcript; the agent-runner decides which reach the model.
 */
export const transcriptRecordSchema = z.object({
  id: idSchema,
  seq: z.number().int().nonnegative().optional(),
  ts: timestampSchema,
  runId: idSchema.optional(),
  kind: z.enum(["message", "system_event", "context_note", "compaction_summary", "run_marker"]),
  message: llmMessageSchema.optional(),
  text: z.string().optional(),
  runStatus: z.enum(["started", "done", "error", "aborted"]).optional(),
  meta: z.record(z.string(), z.unknown()).optional(),
});
export type TranscriptRecord = z.infer<typeof transcriptRecordSchema>;

const key = { sessionKey: sessionKeySchema };

/** What creates a session entry (or updates its last origin). */
const ensureFields = {
  ...key,
  agentId: agentIdSchema,
  sessionType: sessionTypeSchema,
  channel: channelNameSchema.optional(),
  origin: originSchema.optional(),
  parentSessionKey: sessionKeySchema.optional(),
  label: z.string().max(200).optional(),
};

export const sessionsEnsureRequest = defineMessage("lurk.sessions.ensure.v1", ensureFields);
export const sessionsGetRequest = defineMessage("lurk.sessions.get.v1", key);
export const sessionsListRequest = defineMessage("lurk.sessions.list.v1", {
  agentId: agentIdSchema.optional(),
  sessionType: sessionTypeSchema.optional(),
  limit: listLimitSchema.default(100),
});
export const sessionsHistoryRequest = defineMessage("lurk.sessions.history.v1", {
  ...key,
  /** the newest `limit` records, oldest first */
  limit: listLimitSchema.default(200),
  /** an earlier transcript of the session (a reset's `previousSessionId`) instead of the current one */
  sessionId: idSchema.optional(),
  /** only records before this seq (paging back after a `truncated` reply: the first record's seq) */
  beforeSeq: z.number().int().min(0).optional(),
});
/**
 * Every transcript of a session: the current one and those earlier resets ended (found through
 * their runs, so a transcript no run wrote to is not listed), oldest first. Page through each
 * with sessions.history `sessionId`.
 */
export const sessionsTranscriptsRequest = defineMessage("lurk.sessions.transcripts.v1", key);
/**
 * Token usage of a run (its end), added to the session's counters: `usage` is the total and
 * `model`/`provider` the model the run ended on. `parts` splits it by model and purpose (a
 * failover, compaction and speech summaries on other models): the usage ledger books each part
 * at its own model's price; without `parts` the whole update is booked as turns of `model`.
 */
export const usageUpdateSchema = z.object({
  usage: usageSchema,
  model: z.string(),
  provider: z.string(),
  parts: z.array(usagePartSchema).max(MAX_USAGE_PARTS).optional(),
});

export const sessionsAppendRequest = defineMessage("lurk.sessions.append.v1", {
  ...key,
  records: z.array(transcriptRecordSchema).min(1).max(500),
  /** added in the same transaction as the records (a run's end: marker and usage at once) */
  usage: usageUpdateSchema.optional(),
});

/**
 * The start of a run in one round trip: ensure the session, report the run's status before this
 * call, append the run's first records unless the run already finished, and return the run's
 * records and the transcript. With `known` (the caller's cached session id and last seq), only
 * newer records come back (`incremental: true`).
 */
export const sessionsBeginRequest = defineMessage("lurk.sessions.begin.v1", {
  ...ensureFields,
  runId: idSchema,
  records: z.array(transcriptRecordSchema).max(500),
  historyLimit: listLimitSchema.default(200),
  known: z.object({ sessionId: idSchema, lastSeq: z.number().int().min(-1) }).optional(),
});
/**
 * One run's records and status. `statusOnly`: the status and no records (`records: []`), a reply
 * of constant size however long the run: for callers that only ask whether it ended (the router's
 * lane checks), since a long run's records can exceed one bus message. `recordId` (with
 * `statusOnly`): `records` holds that one record when the run stored it (the router's check that
 * a run took an input handed to it), else none.
 */
export const sessionsRunRequest = defineMessage("lurk.sessions.run.v1", { ...key, runId: idSchema, statusOnly: z.boolean().optional(), recordId: idSchema.optional() });
/**
 * Usage outside a run's end: the runner's housekeeping (memory consolidation, embeddings), speech
 * synthesized and audio transcribed (`units`: characters, seconds; purposes `speech` and
 * `transcription`, which take units and no tokens and leave the session's counters alone), or a
 * run's usage given on its own. Added to the session's counters when the session exists (the
 * session's last model changes only for `turn`) and to the usage ledger under `purpose`. Without
 * a session (`sessionKey` absent, or a session that no longer exists while `agentId` is given)
 * only the ledger gets it, under `agentId` with channel and session type "-". A request with an
 * `idempotencyKey` already seen in the last two UTC days is counted once (`duplicate: true`).
 */
export const sessionsUsageRequest = defineMessage("lurk.sessions.usage.v1", {
  sessionKey: sessionKeySchema.optional(),
  /** the agent the usage belongs to when there is no session (else the session's agent) */
  agentId: agentIdSchema.optional(),
  usage: usageSchema,
  model: z.string().max(300),
  provider: z.string().max(64),
  purpose: usagePurposeSchema.default("turn"),
  /** what `speech` (chars) and `transcription` (audioSeconds or durationUnknown) are billed by; only with those purposes */
  units: usageUnitsSchema.optional(),
  /** the same key sent again (a retried request) is counted once */
  idempotencyKey: idSchema.optional(),
});
export const sessionsPatchRequest = defineMessage("lurk.sessions.patch.v1", {
  ...key,
  patch: z.object({
    model: z.string().max(200).nullable().optional(),
    thinking: thinkLevelSchema.nullable().optional(),
    modelOverride: z.string().max(200).nullable().optional(),
    verbose: verboseLevelSchema.nullable().optional(),
    reasoning: reasoningLevelSchema.nullable().optional(),
    queue: sessionQueueSettingsSchema.nullable().optional(),
    tts: ttsAutoSchema.nullable().optional(),
    label: z.string().max(200).nullable().optional(),
    lastOrigin: originSchema.optional(),
    activeRunId: idSchema.nullable().optional(),
  }),
});
export const sessionsResetRequest = defineMessage("lurk.sessions.reset.v1", { ...key, reason: z.string().max(200).default("manual") });
export const sessionsDeleteRequest = defineMessage("lurk.sessions.delete.v1", key);

export const sessionReply = z.object({ session: sessionEntrySchema });
export const sessionOrNullReply = z.object({ session: sessionEntrySchema.nullable() });
export const sessionListReply = z.object({ sessions: z.array(sessionEntrySchema) });
/**
 * `truncated`: older records within the limit were left out to keep the reply under the bus's
 * message size; ask again with `beforeSeq` (shared/runtime/session-history.ts pages for you).
 */
export const historyReply = z.object({ session: sessionEntrySchema.nullable(), records: z.array(transcriptRecordSchema), truncated: z.boolean().optional() });
export const transcriptInfoSchema = z.object({
  sessionId: idSchema,
  records: z.number().int().nonnegative(),
  firstTs: timestampSchema.optional(),
  lastTs: timestampSchema.optional(),
  current: z.boolean(),
});
export type TranscriptInfo = z.infer<typeof transcriptInfoSchema>;
/** `session` null: no such session (and no transcripts) */
export const transcriptsReply = z.object({ session: sessionEntrySchema.nullable(), transcripts: z.array(transcriptInfoSchema) });
export const appendReply = z.object({ appended: z.number().int(), duplicates: z.number().int(), lastSeq: z.number().int() });
export const runRecordsReply = z.object({
  records: z.array(transcriptRecordSchema),
  status: z.enum(["unknown", "started", "done", "error", "aborted"]),
  /** the run's records exceed one reply: only the newest that fit are here (its end marker among them) */
  truncated: z.boolean().optional(),
});
/** A daily or idle reset the sessions actor made: the transcript it ended is `previousSessionId`. */
export const autoResetSchema = z.object({ reason: z.enum(["daily", "idle"]), previousSessionId: idSchema });
export const beginReply = z.object({
  prior: z.enum(["unknown", "started", "done", "error", "aborted"]),
  session: sessionEntrySchema,
  runRecords: z.array(transcriptRecordSchema),
  records: z.array(transcriptRecordSchema),
  incremental: z.boolean(),
  /** older records within historyLimit were left out (reply size): page back with sessions.history `beforeSeq`; `incremental` is then false */
  truncated: z.boolean().optional(),
  /** the daily or idle reset this begin made: the run starts a fresh transcript */
  reset: autoResetSchema.optional(),
});
/** `sessions.ensure`: the entry, and the daily or idle reset this call made, if any. */
export const ensureReply = z.object({ session: sessionEntrySchema, reset: autoResetSchema.optional() });
export const resetReply = z.object({ session: sessionEntrySchema, previousSessionId: idSchema });
export const deleteReply = z.object({ deleted: z.boolean() });
/** `sessions.usage`: the session after the update (null without one); `duplicate`: the idempotency key was seen, nothing was added. */
export const usageReply = z.object({ session: sessionEntrySchema.nullable(), duplicate: z.boolean().default(false) });
export type UsageUpdate = z.infer<typeof usageUpdateSchema>;

/** The LMDB databases of the sessions store a change set writes (services/sessions/store.ts). */
export const SESSION_DBS = ["entries", "records", "recordIds", "runs"] as const;
const dbKey = z.union([z.string().max(1024), z.tuple([z.string().max(1024), z.union([z.number().int(), z.string().max(1024)])])]);

/**
 * One write of a change set: a put of one key, the removal of a whole session, or a usage-ledger
 * bucket or prune (messages/usage.ts; change sets written before the ledger stay readable).
 */
export const sessionChangeOpSchema = z.discriminatedUnion("op", [
  z.object({ op: z.literal("put"), db: z.enum(SESSION_DBS), key: dbKey, value: z.unknown() }),
  z.object({ op: z.literal("deleteSession"), sessionKey: sessionKeySchema, sessionId: z.string().max(200) }),
  ...usageChangeOpSchemas,
]);
export type SessionChangeOp = z.infer<typeof sessionChangeOpSchema>;

/**
 * Payload of `lurk.sesslog.<sessionKey>` (SESSIONS stream): the writes of one committed
 * transaction of the active sessions instance, applied in stream order by the standbys. A
 * transaction larger than one message is split into `parts` messages with the same `txn`.
 */
export const sessionChangeSchema = defineMessage("lurk.sessions.change.v1", {
  txn: z.string().max(100),
  part: z.number().int().nonnegative(),
  parts: z.number().int().positive().max(10_000),
  ops: z.array(sessionChangeOpSchema).max(100_000),
});
export type SessionChange = z.infer<typeof sessionChangeSchema>;
