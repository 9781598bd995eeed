/**
 * Typed request/reply client over the endpoint table: fills the envelope, maps NATS failures to
 * LurkErrors (no responders -> UNAVAILABLE naming the actor; timeout -> TIMEOUT), turns error
 * replies back into LurkErrors, and validates replies.
 */
import { randomUUID } from "node:crypto";
import { errors, type NatsConnection } from "@nats-io/transport-node";
import {
  endpointSpec, errorReplySchema, LurkError, requestType, safeParseJson, subjects,
  type EndpointActor, type EndpointOp, type ReplyOf, type RequestOf,
} from "../contract/index.js";

export const SERVICE_ERROR_HEADER = "Nats-Service-Error-Code";

export interface CallOptions {
  timeoutMs?: number;
  /** correlation: the message that caused this call */
  causationId?: string;
  runId?: string;
}

export class BusClient {
  readonly subjects: ReturnType<typeof subjects>;

  constructor(readonly nc: NatsConnection, prefix?: string, private readonly defaultTimeoutMs = 10_000) {
    this.subjects = subjects(prefix);
  }

  async call<A extends EndpointActor, O extends EndpointOp<A>>(actor: A, op: O, body: RequestOf<A, O>, opts: CallOptions = {}): Promise<ReplyOf<A, O>> {
    const subject = `${this.subjects.prefix}.${actor}.${op}`;
    return this.callSubject(subject, requestType(actor, op), body as object, endpointSpec(actor, op).reply, opts, actor) as Promise<ReplyOf<A, O>>;
  }

  /** Lower-level: any subject, a reply schema. Used for `lurk.tools.call.<tool>`. */
  async callSubject<T>(subject: string, type: string, body: object, replySchema: { parse(v: unknown): T }, opts: CallOptions = {}, serving = subject): Promise<T> {
    const message = {
      id: randomUUID(),
      ts: Date.now(),
      ...(opts.causationId ? { causationId: opts.causationId } : {}),
      ...(opts.runId ? { runId: opts.runId } : {}),
      ...body,
      type,
    };
    let reply;
    try {
      reply = await this.nc.request(subject, JSON.stringify(message), { timeout: opts.timeoutMs ?? this.defaultTimeoutMs });
    } catch (err) {
      throw mapRequestError(err, serving, subject);
    }
    const data = reply.data.length > 0 ? safeParseJson(reply.data) : undefined;
    if (reply.headers?.get(SERVICE_ERROR_HEADER)) {
      const parsed = errorReplySchema.safeParse(data);
      if (parsed.success) throw LurkError.fromReply(parsed.data);
      throw new LurkError("INTERNAL", `${subject} failed: ${reply.headers.get("Nats-Service-Error") || "unknown error"}`);
    }
    try {
      return replySchema.parse(data);
    } catch (err) {
      throw new LurkError("VALIDATION_FAILED", `reply from ${subject} does not match the contract: ${(err as Error).message}`);
    }
  }
}

/** True for nats.js's "no responders" (nothing subscribes to the subject), in either of its forms. */
export function isNoResponders(err: unknown): boolean {
  return (err instanceof errors.RequestError && err.isNoResponders()) || err instanceof errors.NoRespondersError;
}

export function mapRequestError(err: unknown, serving: string, subject: string): LurkError {
  if (isNoResponders(err)) {
    return new LurkError("UNAVAILABLE", `nothing serves ${subject}: is the ${serving} actor running? (npx lurkbot status)`);
  }
  if (err instanceof errors.TimeoutError || (err instanceof Error && err.name === "TimeoutError")) {
    return new LurkError("TIMEOUT", `${subject} did not answer in time`);
  }
  if (err instanceof errors.PermissionViolationError) {
    return new LurkError("FORBIDDEN", `this actor may not publish to ${subject}: ${err.message}`);
  }
  return LurkError.from(err, "UNAVAILABLE");
}
