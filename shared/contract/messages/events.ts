/** `lurk.evt.<actor>.<event>`: monitoring events any actor publishes (core, fire-and-forget). */
import { z } from "zod";
import { defineMessage } from "../envelope.js";

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
