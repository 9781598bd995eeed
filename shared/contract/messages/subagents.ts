/** `lurk.subagents.<op>`: spawning child runs and announcing their results back. */
import { z } from "zod";
import { agentIdSchema, sessionKeySchema, thinkLevelSchema, usageSchema } from "../common.js";
import { defineMessage, idSchema, timestampSchema } from "../envelope.js";

export const subagentOutcomeSchema = z.enum(["ok", "error", "timeout", "unknown"]);

export const subagentRecordSchema = z.object({
  childSessionKey: sessionKeySchema,
  runId: idSchema,
  requesterSessionKey: sessionKeySchema,
  agentId: agentIdSchema,
  task: z.string(),
  label: z.string().optional(),
  depth: z.number().int().min(1),
  cleanup: z.enum(["delete", "keep"]),
  status: z.enum(["running", "announcing", "done", "stopped"]),
  outcome: subagentOutcomeSchema.optional(),
  startedAt: timestampSchema,
  endedAt: timestampSchema.optional(),
  usage: usageSchema.optional(),
});

export type SubagentRecord = z.infer<typeof subagentRecordSchema>;

export const subagentsSpawnRequest = defineMessage("lurk.subagents.spawn.v1", {
  requesterSessionKey: sessionKeySchema,
  agentId: agentIdSchema.optional(),
  task: z.string().min(1).max(100_000),
  label: z.string().max(200).optional(),
  model: z.string().max(200).optional(),
  thinking: thinkLevelSchema.optional(),
  /** absent: config subagents.defaultTimeoutSeconds */
  timeoutSeconds: z.number().int().positive().max(24 * 3600).optional(),
  /** absent: config subagents.cleanup */
  cleanup: z.enum(["delete", "keep"]).optional(),
});
export const subagentsListRequest = defineMessage("lurk.subagents.list.v1", { requesterSessionKey: sessionKeySchema.optional() });
/** One child (runId or childSessionKey), or with `all` every running child of requesterSessionKey. */
export const subagentsStopRequest = defineMessage("lurk.subagents.stop.v1", {
  requesterSessionKey: sessionKeySchema.optional(),
  childSessionKey: sessionKeySchema.optional(),
  runId: idSchema.optional(),
  all: z.boolean().default(false),
});

export const subagentSpawnReply = z.object({ status: z.literal("accepted"), childSessionKey: sessionKeySchema, runId: idSchema });
export const subagentListReply = z.object({ children: z.array(subagentRecordSchema) });
export const subagentStopReply = z.object({ stopped: z.number().int() });
