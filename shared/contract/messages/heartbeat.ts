/** `lurk.heartbeat.<op>` and heartbeat events: the periodic HEARTBEAT.md check per agent. */
import { z } from "zod";
import { agentIdSchema, usageSchema } from "../common.js";
import { defineMessage, timestampSchema } from "../envelope.js";

/** Payload of `lurk.evt.heartbeat.<status>`: the seeds' HeartbeatEventPayload. */
export const heartbeatEventSchema = defineMessage("lurk.heartbeat.event.v1", {
  agentId: agentIdSchema,
  status: z.enum(["sent", "ok-empty", "ok-token", "skipped", "failed"]),
  reason: z.string().max(500).optional(),
  to: z.string().optional(),
  channel: z.string().optional(),
  preview: z.string().max(200).optional(),
  durationMs: z.number().int().nonnegative().optional(),
  hasMedia: z.boolean().default(false),
  silent: z.boolean().default(false),
  indicatorType: z.enum(["ok", "alert", "error"]).optional(),
  usage: usageSchema.optional(),
});
export type HeartbeatEvent = z.infer<typeof heartbeatEventSchema>;

const agent = { agentId: agentIdSchema.optional() };
export const heartbeatStatusRequest = defineMessage("lurk.heartbeat.status.v1", agent);
export const heartbeatLastRequest = defineMessage("lurk.heartbeat.last.v1", agent);
export const heartbeatRunRequest = defineMessage("lurk.heartbeat.run.v1", agent);
export const heartbeatEnableRequest = defineMessage("lurk.heartbeat.enable.v1", agent);
export const heartbeatDisableRequest = defineMessage("lurk.heartbeat.disable.v1", agent);

export const heartbeatAgentStatusSchema = z.object({
  agentId: agentIdSchema,
  enabled: z.boolean(),
  everyMs: z.number().int().positive(),
  nextDueAt: timestampSchema.optional(),
  last: heartbeatEventSchema.optional(),
  tokensSpent: z.number().int().nonnegative(),
});
export const heartbeatStatusReply = z.object({ agents: z.array(heartbeatAgentStatusSchema) });
export const heartbeatEventReply = z.object({ event: heartbeatEventSchema.nullable() });
