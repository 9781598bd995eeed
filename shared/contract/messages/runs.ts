/** Router/cron/heartbeat/subagents -> agent-runner (run requests and control) and run events. */
import { z } from "zod";
import {
  agentIdSchema, attachmentSchema, originSchema, promptModeSchema, reasoningLevelSchema, sessionKeySchema,
  sessionTypeSchema, stopReasonSchema, thinkLevelSchema, ttsAutoSchema, usageSchema, verboseLevelSchema,
} from "../common.js";
import { defineMessage, idSchema } from "../envelope.js";
import { errorCodeSchema } from "../errors.js";

export const runTriggerSchema = z.enum(["message", "heartbeat", "cron", "subagent", "announce", "system"]);

export const runInputSchema = z.object({
  /** user: what a person wrote; system_event: app-only context (kept, shown to the model as a note) */
  kind: z.enum(["user", "system_event"]),
  text: z.string().max(200_000),
  attachments: z.array(attachmentSchema).max(32).default([]),
  sourceId: idSchema.optional(),
  /**
   * kind user from a chat channel: the message's platform id, shown to the model with the message
   * (`[message_id: …]`) so the `message` tool can react to it (the router sets it)
   */
  messageId: z.string().min(1).max(400).optional(),
});
export type RunInput = z.infer<typeof runInputSchema>;

/** `lurk.run.req.<agentId>`, stream RUNS (work queue), `Nats-Msg-Id` = runId. */
export const runRequestSchema = defineMessage("lurk.run.request.v1", {
  runId: idSchema,
  sessionKey: sessionKeySchema,
  agentId: agentIdSchema,
  sessionType: sessionTypeSchema,
  trigger: runTriggerSchema,
  inputs: z.array(runInputSchema).min(1).max(1000),
  /** where the final reply goes; absent for runs whose output is not delivered */
  origin: originSchema.optional(),
  deliver: z.boolean().default(true),
  options: z.object({
    model: z.string().max(200).optional(),
    thinking: thinkLevelSchema.optional(),
    /** sampling temperature for this run's model calls (wins over the agent's and the model's) */
    temperature: z.number().min(0).max(2).optional(),
    verbose: verboseLevelSchema.optional(),
    reasoning: reasoningLevelSchema.optional(),
    /** the session's `/tts` (or the message's directive): overrides tts.auto for this run */
    tts: ttsAutoSchema.optional(),
    promptMode: promptModeSchema.optional(),
    maxIterations: z.number().int().min(1).max(100).optional(),
    timeoutMs: z.number().int().positive().max(24 * 3600_000).optional(),
    /**
     * instead of a model turn on the inputs: "compact" summarizes the session's older history now
     * (/compact); "consolidate" puts what the transcript `previousSessionId` of the session holds
     * since its last consolidation into MEMORY.md and HISTORY.md (after /new and /reset)
     */
    command: z.enum(["compact", "consolidate"]).optional(),
    /** with command "consolidate": the transcript a reset ended */
    previousSessionId: idSchema.optional(),
  }).default({}),
  /** set for subagent runs: who spawned it and the task */
  subagent: z.object({
    parentSessionKey: sessionKeySchema,
    task: z.string().max(100_000),
    label: z.string().max(200).optional(),
    depth: z.number().int().min(1).max(10),
  }).optional(),
});
export type RunRequest = z.infer<typeof runRequestSchema>;

/** `lurk.run.ctl.<runId>`: steer the active run with a new message, queue a follow-up, or abort it. */
export const runControlSchema = defineMessage("lurk.run.control.v1", {
  runId: idSchema,
  action: z.enum(["abort", "steer", "followup"]),
  input: runInputSchema.optional(),
  reason: z.string().max(500).optional(),
});
export type RunControl = z.infer<typeof runControlSchema>;

/**
 * The answer to a run control sent as a request: only the agent-runner instance holding the
 * run answers (`accepted: true` once the input is queued in the run, or the abort fired;
 * `accepted: false` at once when the run takes no more inputs: its loop ended, or a command run); the
 * others stay silent. No answer within a short wait means no runner holds the run: a steer or
 * follow-up is then not taken, and the sender queues the message as a run of its own.
 */
export const runControlReplySchema = z.object({
  runId: idSchema,
  action: z.enum(["abort", "steer", "followup"]),
  accepted: z.boolean(),
});
export type RunControlReply = z.infer<typeof runControlReplySchema>;

const ev = <K extends string, S extends z.ZodRawShape>(kind: K, shape: S) => z.object({ kind: z.literal(kind), ...shape });

/** The event kinds of a run. Start/end come in pairs; exactly one terminal `done` or `error`. */
export const runEventBodySchema = z.discriminatedUnion("kind", [
  ev("run_start", { agentId: agentIdSchema, model: z.string().optional(), provider: z.string().optional(), trigger: runTriggerSchema }),
  ev("turn_start", { turn: z.number().int().positive() }),
  ev("message_delta", { turn: z.number().int().positive(), text: z.string() }),
  ev("thinking_delta", { turn: z.number().int().positive(), text: z.string() }),
  ev("message_end", { turn: z.number().int().positive(), text: z.string() }),
  ev("tool_start", { turn: z.number().int().positive(), toolCallId: z.string(), name: z.string(), args: z.record(z.string(), z.unknown()) }),
  ev("tool_progress", { toolCallId: z.string(), message: z.string().max(2000) }),
  ev("tool_end", { turn: z.number().int().positive(), toolCallId: z.string(), name: z.string(), isError: z.boolean(), preview: z.string().max(2000), durationMs: z.number().nonnegative(), resumed: z.boolean().default(false) }),
  ev("usage", { turn: z.number().int().positive(), usage: usageSchema, model: z.string(), provider: z.string() }),
  ev("turn_end", { turn: z.number().int().positive(), stopReason: stopReasonSchema }),
  ev("steer", { skippedToolCalls: z.array(z.string()) }),
  ev("provider_switch", { from: z.string(), to: z.string(), reason: z.string() }),
  ev("compaction", { messagesBefore: z.number().int(), messagesAfter: z.number().int(), reason: z.string() }),
  ev("approval_pending", { approvalId: idSchema, toolCallId: z.string(), name: z.string() }),
  ev("run_end", { turns: z.number().int().nonnegative() }),
  ev("done", { text: z.string(), turns: z.number().int().nonnegative(), usage: usageSchema, silent: z.boolean().default(false) }),
  ev("error", { code: errorCodeSchema, message: z.string(), retryable: z.boolean() }),
]);

/** `lurk.run.evt.<runId>.<kind>`, core publish. `seq` orders the events of one run. */
export const runEventSchema = defineMessage("lurk.run.event.v1", {
  runId: idSchema,
  sessionKey: sessionKeySchema,
  seq: z.number().int().nonnegative(),
  event: runEventBodySchema,
});
export type RunEvent = z.infer<typeof runEventSchema>;
export type RunEventBody = z.infer<typeof runEventBodySchema>;
export const TERMINAL_RUN_EVENTS = ["done", "error"] as const;

/**
 * `lurk.inject.<agentId>`, stream INBOUND: a system event (heartbeat, cron systemEvent, subagent
 * announce) for a session. The router queues it like a message; `wake: "now"` starts a run.
 * `Nats-Msg-Id` = `id` (e.g. `cron:<jobId>:<scheduledAt>`), so a retried fire lands once.
 */
export const systemInjectSchema = defineMessage("lurk.inject.v1", {
  agentId: agentIdSchema,
  sessionKey: sessionKeySchema,
  source: z.enum(["heartbeat", "cron", "subagent", "system"]),
  text: z.string().max(200_000),
  wake: z.enum(["now", "next-heartbeat"]).default("now"),
  trigger: runTriggerSchema.default("system"),
  deliverTo: z.union([z.literal("last"), z.literal("none"), originSchema]).default("last"),
  options: runRequestSchema.shape.options.optional(),
});
export type SystemInject = z.infer<typeof systemInjectSchema>;
