/** `lurk.evt.<actor>.<event>`: monitoring events any actor publishes (core, fire-and-forget). */
import { z } from "zod";
import { agentIdSchema, channelNameSchema, conversationSchema, originSchema, peerSchema, senderSchema, sessionKeySchema, sessionTypeSchema } from "../common.js";
import { defineMessage, idSchema } from "../envelope.js";

export const actorEventSchema = defineMessage("lurk.actor.event.v1", {
  actor: z.string(),
  event: z.string(),
  level: z.enum(["debug", "info", "warn", "error"]),
  instance: z.object({ host: z.string(), pid: z.number().int() }),
  data: z.record(z.string(), z.unknown()).default({}),
});
export type ActorEvent = z.infer<typeof actorEventSchema>;

/** Data of `lurk.evt.<actor>.dead_letter`: a durable message that gave up after its retries. */
export const deadLetterDataSchema = z.object({
  stream: z.string(),
  consumer: z.string(),
  subject: z.string(),
  streamSeq: z.number().int(),
  deliveries: z.number().int(),
  error: z.string(),
  dlqSubject: z.string(),
});

/**
 * Data of `lurk.evt.router.command`: a chat command the router handled (after its answer went
 * out). The hooks actor turns it into `command:<command>`; `args` is the command's text after its
 * name, capped. `ok` is false when the command was refused or failed (its answer was an error).
 */
export const routerCommandDataSchema = z.object({
  command: z.string().min(1).max(64),
  args: z.string().max(2000).default(""),
  ok: z.boolean(),
  sessionKey: sessionKeySchema,
  agentId: agentIdSchema,
  channel: channelNameSchema,
  conversation: conversationSchema,
  accountId: z.string().max(200).optional(),
  peer: peerSchema,
  sender: senderSchema,
  /** the inbound message that carried the command */
  messageId: idSchema,
  /** /new and /reset: the transcript that ended and the one that began */
  previousSessionId: z.string().max(200).optional(),
  sessionId: z.string().max(200).optional(),
});
export type RouterCommandData = z.infer<typeof routerCommandDataSchema>;

/** Data of `lurk.evt.sessions.reset`: a session got a fresh transcript (a command, `lurkbot sessions reset`, or the daily/idle policy). */
export const sessionsResetDataSchema = z.object({
  sessionKey: sessionKeySchema,
  reason: z.string().max(64).optional(),
  previousSessionId: z.string().max(200).optional(),
  sessionId: z.string().max(200).optional(),
});
export type SessionsResetData = z.infer<typeof sessionsResetDataSchema>;

/**
 * Data of `lurk.evt.sessions.created`: the sessions actor created a session's entry (its first
 * `ensure` or run). The hooks actor turns it into `session:start`. `origin` is where the session
 * first talked, when the entry was created by a message.
 */
export const sessionsCreatedDataSchema = z.object({
  sessionKey: sessionKeySchema,
  agentId: agentIdSchema,
  sessionId: z.string().max(200),
  sessionType: sessionTypeSchema,
  channel: channelNameSchema.optional(),
  origin: originSchema.optional(),
  parentSessionKey: sessionKeySchema.optional(),
  label: z.string().max(200).optional(),
});
export type SessionsCreatedData = z.infer<typeof sessionsCreatedDataSchema>;

/** Data of `lurk.evt.sessions.delete`: a session's entry and transcript were deleted (`lurkbot sessions delete`, a finished subagent's child session). */
export const sessionsDeleteDataSchema = z.object({
  sessionKey: sessionKeySchema,
});
export type SessionsDeleteData = z.infer<typeof sessionsDeleteDataSchema>;
