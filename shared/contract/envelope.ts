/**
 * The envelope every bus message carries, in its JSON body:
 * `type` (versioned, e.g. `lurk.inbound.message.v1`), `id` (unique), `ts` (ms since epoch) and
 * correlation: `runId`, `sessionKey`, `causationId` (the id of the message that caused this one).
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";

export const idSchema = z.string().min(1).max(200);
export const timestampSchema = z.number().int().nonnegative();

export const envelopeShape = {
  id: idSchema,
  ts: timestampSchema,
  runId: idSchema.optional(),
  sessionKey: z.string().min(1).max(512).optional(),
  causationId: idSchema.optional(),
};

/** What `z.object(envelopeShape).extend(shape).extend({ type: z.literal(type) })` is: payload fields override envelope ones. */
export type MessageSchema<T extends string, S extends z.ZodRawShape> = z.ZodObject<
  z.core.util.Extend<z.core.util.Extend<typeof envelopeShape, z.core.util.Writeable<S>>, { type: z.ZodLiteral<T> }>,
  z.core.$strip
>;

/** A message schema: the envelope plus the payload fields, tagged with its versioned type. */
export function defineMessage<T extends string, S extends z.ZodRawShape>(type: T, shape: S): MessageSchema<T, S> {
  // one object rather than two .extend() copies: the same schema, built once (every process builds ~50 at start-up)
  return z.object({ ...envelopeShape, ...shape, type: z.literal(type) }) as unknown as MessageSchema<T, S>;
}

export type Envelope = { type: string; id: string; ts: number; runId?: string; sessionKey?: string; causationId?: string };

/** Builds a message: fills `type`, a fresh `id` (unless given) and `ts`. */
export function envelope<T extends string, P extends object>(type: T, payload: P & Partial<Envelope>): P & Envelope & { type: T } {
  return { id: randomUUID(), ts: Date.now(), ...payload, type };
}
