/**
 * Requests to an actor that keeps one active instance through a lease (lease.ts), e.g. the
 * heartbeat actor. Every instance registers the endpoints (`lurkbot status` lists them all, and
 * the services framework hands a request to any one of them):
 * - the active instance handles a request itself;
 * - a standby relays the validated request to `<prefix>.<actor>.active.<op>`, which only the
 *   active instance subscribes to (from `activate()` until `deactivate()`), and answers with its
 *   reply or its typed error;
 * - with no active instance (between a holder's end and a standby's takeover, at most the
 *   lease's TTL) the relay answers UNAVAILABLE, saying to retry.
 * The active side parses, validates and answers like an endpoint (size cap, safe JSON, the
 * endpoint's schemas, typed error replies), so a bad relay never stops it.
 */
import { headers, type Msg, type Subscription } from "@nats-io/transport-node";
import {
  endpointSpec, ERROR_CODES, LurkError, requestType, safeParseJson,
  type EndpointActor, type EndpointOp, type ParsedRequestOf, type ReplyOf,
} from "../contract/index.js";
import type { ActorRuntime } from "./actor.js";
import { SERVICE_ERROR_HEADER } from "./client.js";
import { formatIssues } from "./service.js";

type Handler<A extends EndpointActor, O extends EndpointOp<A>> = (req: ParsedRequestOf<A, O>) => Promise<ReplyOf<A, O>> | ReplyOf<A, O>;

export interface RelayedEndpointOptions<Req> {
  /** how long a standby waits for the active instance's answer (default 10 s) */
  relayTimeoutMs?: (req: Req) => number;
}

const DEFAULT_RELAY_TIMEOUT_MS = 10_000;

export class ActiveRelay<A extends EndpointActor> {
  private readonly handlers = new Map<string, (data: Uint8Array) => Promise<unknown>>();
  private subscriptions: Subscription[] = [];

  constructor(private readonly rt: ActorRuntime, private readonly actor: A, private readonly isActive: () => boolean) {}

  /** Registers the endpoint on this instance: handled here while active, relayed otherwise. */
  serve<O extends EndpointOp<A>>(op: O, handler: Handler<A, O>, opts: RelayedEndpointOptions<ParsedRequestOf<A, O>> = {}): void {
    const spec = endpointSpec(this.actor, op);
    this.handlers.set(op, async (data) => {
      const body = safeParseJson(data, this.rt.limits);
      const parsed = spec.request.safeParse(body);
      if (!parsed.success) throw new LurkError("VALIDATION_FAILED", formatIssues(parsed.error), { details: parsed.error.issues.slice(0, 20) });
      return spec.reply.parse(await handler(parsed.data as ParsedRequestOf<A, O>));
    });
    this.rt.serve(this.actor, op, async (req) => {
      if (this.isActive()) return handler(req);
      const subject = this.rt.subjects.activeOp(this.actor, op);
      try {
        return await this.rt.client.callSubject(subject, requestType(this.actor, op), req as object, spec.reply, {
          timeoutMs: opts.relayTimeoutMs?.(req) ?? DEFAULT_RELAY_TIMEOUT_MS,
        }, this.actor) as ReplyOf<A, O>;
      } catch (err) {
        const e = LurkError.from(err);
        // no responder on the relay subject (client.ts's wording); an UNAVAILABLE the active instance answered passes as it is
        if (e.code !== "UNAVAILABLE" || !e.message.startsWith(`nothing serves ${subject}`)) throw e;
        throw new LurkError("UNAVAILABLE", `no ${this.actor} instance is active right now (a standby takes over within its lease's TTL); retry in a few seconds`);
      }
    });
  }

  /** This instance holds the lease: it answers the relayed requests. */
  activate(): void {
    if (this.subscriptions.length > 0) return;
    for (const [op, handle] of this.handlers) {
      this.subscriptions.push(this.rt.nc.subscribe(this.rt.subjects.activeOp(this.actor, op), { callback: (err, msg) => { if (!err) void this.answer(op, msg, handle); } }));
    }
  }

  /** This instance lost or gave up the lease: relayed requests go to the next holder. */
  deactivate(): void {
    for (const sub of this.subscriptions.splice(0)) sub.unsubscribe();
  }

  private async answer(op: string, msg: Msg, handle: (data: Uint8Array) => Promise<unknown>): Promise<void> {
    try {
      const reply = await handle(msg.data);
      msg.respond(JSON.stringify(reply));
    } catch (err) {
      const e = LurkError.from(err);
      this.rt.log[e.code === "INTERNAL" ? "error" : "warn"]({ err: e, code: e.code, op }, "relayed request failed");
      const h = headers();
      h.set("Nats-Service-Error", `${e.code}: ${e.message}`.replace(/[\r\n]+/g, " ").slice(0, 500));
      h.set(SERVICE_ERROR_HEADER, String(ERROR_CODES[e.code].status));
      msg.respond(JSON.stringify(e.toReply()), { headers: h });
    }
  }
}
