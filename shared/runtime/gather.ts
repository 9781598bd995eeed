/**
 * Scatter-gather over core NATS: one request to every responder of `subject` (each actor kind
 * in its own queue group answers once), replies collected for `maxWaitMs`; with `stallMs`,
 * `maxWaitMs` only bounds the wait for the first reply and the gather ends `stallMs` after the
 * latest one. Every reply is parsed safely and validated: a valid one is kept, a typed error
 * reply (the services error header) is kept apart, anything else is counted as malformed and
 * skipped. One bad reply never ends the gather. Throws only what sending the request throws
 * (e.g. no permission).
 */
import type { NatsConnection } from "@nats-io/transport-node";
import type { z } from "zod";
import { errorReplySchema, LurkError, safeParseJson, type SafeParseLimits } from "../contract/index.js";
import { SERVICE_ERROR_HEADER } from "./client.js";

export interface Gathered<T> {
  replies: T[];
  /** typed error replies (an unreadable one is INTERNAL) */
  errors: LurkError[];
  /** replies that were not JSON, too large, or did not match the schema */
  malformed: number;
}

export async function gatherReplies<S extends z.ZodType>(nc: NatsConnection, subject: string, body: unknown, schema: S,
  opts: { maxWaitMs: number; stallMs?: number; limits?: SafeParseLimits }): Promise<Gathered<z.output<S>>> {
  const out: Gathered<z.output<S>> = { replies: [], errors: [], malformed: 0 };
  const strategy = opts.stallMs !== undefined ? { strategy: "stall" as const, stall: opts.stallMs } : { strategy: "timer" as const };
  const replies = await nc.requestMany(subject, JSON.stringify(body), { ...strategy, maxWait: opts.maxWaitMs });
  for await (const msg of replies) {
    let data: unknown;
    try {
      data = msg.data.length > 0 ? safeParseJson(msg.data, opts.limits) : undefined;
    } catch {
      out.malformed++;
      continue;
    }
    if (msg.headers?.get(SERVICE_ERROR_HEADER)) {
      const parsed = errorReplySchema.safeParse(data);
      out.errors.push(parsed.success ? LurkError.fromReply(parsed.data) : new LurkError("INTERNAL", `${subject} failed`));
      continue;
    }
    const parsed = schema.safeParse(data);
    if (parsed.success) out.replies.push(parsed.data);
    else out.malformed++;
  }
  return out;
}
