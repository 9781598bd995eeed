/** `lurk.router.<op>`: the router's lanes (one active run per session) and queues. */
import { z } from "zod";
import { queueModeSchema, sessionKeySchema } from "../common.js";
import { defineMessage, idSchema, timestampSchema } from "../envelope.js";

export const laneSchema = z.object({
  sessionKey: sessionKeySchema,
  activeRunId: idSchema.optional(),
  activeSince: timestampSchema.optional(),
  queued: z.number().int().nonnegative(),
  queueMode: queueModeSchema,
});

export const routerStatusRequest = defineMessage("lurk.router.status.v1", {});
export const routerLanesRequest = defineMessage("lurk.router.lanes.v1", { sessionKey: sessionKeySchema.optional() });

export const routerStatusReply = z.object({
  defaultAgentId: z.string(),
  agents: z.array(z.string()),
  activeRuns: z.number().int().nonnegative(),
  queued: z.number().int().nonnegative(),
  processed: z.number().int().nonnegative(),
});
export const routerLanesReply = z.object({ lanes: z.array(laneSchema) });
