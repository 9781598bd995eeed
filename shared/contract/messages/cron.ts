/** `lurk.cron.<op>`: scheduled jobs with the seeds' schedule, payload and validation rules. */
import { z } from "zod";
import { agentIdSchema, channelNameSchema, thinkLevelSchema } from "../common.js";
import { defineMessage, idSchema, timestampSchema } from "../envelope.js";

export const cronScheduleSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("at"), atMs: timestampSchema }),
  z.object({ kind: z.literal("every"), everyMs: z.number().int().min(1000), anchorMs: timestampSchema.optional() }),
  z.object({ kind: z.literal("cron"), expr: z.string().min(1).max(200), tz: z.string().max(100).default("UTC") }),
]);

export const cronPayloadSchema = z.discriminatedUnion("kind", [
  /** injected into the main session (a light reminder) */
  z.object({ kind: z.literal("systemEvent"), text: z.string().min(1).max(100_000) }),
  /** an isolated session runs an agent turn (heavy work) */
  z.object({
    kind: z.literal("agentTurn"),
    message: z.string().min(1).max(100_000),
    model: z.string().max(200).optional(),
    thinking: thinkLevelSchema.optional(),
    timeoutSeconds: z.number().int().positive().max(24 * 3600).default(3600),
    deliver: z.boolean().default(true),
    channel: z.union([z.literal("last"), channelNameSchema]).default("last"),
    to: z.string().max(200).optional(),
    bestEffortDeliver: z.boolean().default(false),
  }),
]);

export const cronJobStateSchema = z.object({
  nextRunAtMs: timestampSchema.optional(),
  runningAtMs: timestampSchema.optional(),
  lastRunAtMs: timestampSchema.optional(),
  lastStatus: z.enum(["ok", "error", "skipped"]).optional(),
  lastError: z.string().optional(),
  lastDurationMs: z.number().int().nonnegative().optional(),
});

const cronJobFields = {
  name: z.string().min(1).max(200),
  description: z.string().max(2000).optional(),
  agentId: agentIdSchema.default("main"),
  enabled: z.boolean().default(true),
  deleteAfterRun: z.boolean().default(false),
  schedule: cronScheduleSchema,
  sessionTarget: z.enum(["main", "isolated"]),
  wakeMode: z.enum(["next-heartbeat", "now"]).default("next-heartbeat"),
  payload: cronPayloadSchema,
  /**
   * isolated jobs only (seeds' `isolation`): after a successful run, its reply is posted into the
   * agent's main session as a system event ("<prefix>: <job name>: <text>"), waiting there for
   * the next heartbeat or message. "summary" posts the reply's first paragraph, "full" all of
   * it; either is cut at postToMainMaxChars.
   */
  isolation: z.object({
    postToMainPrefix: z.string().min(1).max(200).default("Cron"),
    postToMainMode: z.enum(["summary", "full"]).default("summary"),
    postToMainMaxChars: z.number().int().min(100).max(100_000).default(8000),
  }).optional(),
};

/** Seeds' rule: main takes systemEvent only; isolated takes agentTurn only. */
const targetMatchesPayload = (job: { sessionTarget: string; payload: { kind: string } }) =>
  (job.sessionTarget === "main") === (job.payload.kind === "systemEvent");
const targetMessage = { message: "sessionTarget main needs a systemEvent payload; isolated needs agentTurn", path: ["payload"] };

export const cronJobSchema = z.object({
  id: idSchema,
  ...cronJobFields,
  createdAtMs: timestampSchema,
  updatedAtMs: timestampSchema,
  state: cronJobStateSchema,
}).refine(targetMatchesPayload, targetMessage);
export type CronJob = z.infer<typeof cronJobSchema>;

export const cronRunLogSchema = z.object({
  jobId: idSchema,
  fireId: idSchema,
  scheduledAtMs: timestampSchema,
  startedAtMs: timestampSchema,
  endedAtMs: timestampSchema.optional(),
  /** "running" until the run's terminal event (or its reconciliation) is seen */
  status: z.enum(["running", "ok", "error", "skipped"]),
  error: z.string().optional(),
  runId: idSchema.optional(),
  /** the job's agent (entries written before this field existed have none) */
  agentId: agentIdSchema.optional(),
});

export const cronAddRequest = defineMessage("lurk.cron.add.v1", cronJobFields).refine(targetMatchesPayload, targetMessage);
export const cronListRequest = defineMessage("lurk.cron.list.v1", { agentId: agentIdSchema.optional(), includeDisabled: z.boolean().default(true) });
export const cronGetRequest = defineMessage("lurk.cron.get.v1", { jobId: idSchema });
/** A patch names only what changes: no defaults are filled in (zod's partial() would fill them). */
const cronJobPatchFields = {
  ...cronJobFields,
  agentId: agentIdSchema,
  enabled: z.boolean(),
  deleteAfterRun: z.boolean(),
  wakeMode: z.enum(["next-heartbeat", "now"]),
};
export const cronEditRequest = defineMessage("lurk.cron.edit.v1", { jobId: idSchema, patch: z.object(cronJobPatchFields).partial() });
export const cronRmRequest = defineMessage("lurk.cron.rm.v1", { jobId: idSchema });
export const cronRunRequest = defineMessage("lurk.cron.run.v1", { jobId: idSchema, mode: z.enum(["due", "force"]).default("force") });
/** `agentId`: only that agent's runs (the cron tool confines an agent to its own). */
export const cronRunsRequest = defineMessage("lurk.cron.runs.v1", { jobId: idSchema.optional(), agentId: agentIdSchema.optional(), limit: z.number().int().min(1).max(1000).default(50) });
export const cronStatusRequest = defineMessage("lurk.cron.status.v1", {});

export const cronJobReply = z.object({ job: cronJobSchema });
export const cronJobListReply = z.object({ jobs: z.array(cronJobSchema) });
export const cronRmReply = z.object({ removed: z.boolean() });
export const cronRunReply = z.object({ status: z.enum(["fired", "skipped"]), fireId: idSchema.optional(), reason: z.string().optional() });
export const cronRunsReply = z.object({ runs: z.array(cronRunLogSchema) });
export const cronStatusReply = z.object({ running: z.boolean(), active: z.boolean(), jobs: z.number().int(), nextRunAtMs: timestampSchema.optional() });
