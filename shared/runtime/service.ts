/**
 * An actor's NATS service (`$SRV.PING/INFO/STATS`) and its request endpoints.
 *
 * Contract of every endpoint handler: the payload is size-capped, parsed without prototype keys
 * and validated with the contract schema before the handler sees it; whatever the handler
 * throws becomes a typed `lurk.error.v1` reply with the services framework's error headers; the
 * error is counted in STATS; no exception escapes, so the next message is served.
 */
import { hostname } from "node:os";
import type { NatsConnection } from "@nats-io/transport-node";
import { Svcm, type Service, type ServiceMsg } from "@nats-io/services";
import { z } from "zod";
import { ERROR_CODES, LurkError, safeParseJson, type SafeParseLimits } from "../contract/index.js";
import type { Logger } from "./logger.js";

export interface ServiceIdentityOptions {
  name: string;
  version: string;
  description: string;
  metadata?: Record<string, string>;
}

export async function registerService(nc: NatsConnection, opts: ServiceIdentityOptions): Promise<Service> {
  return new Svcm(nc).add({
    name: opts.name,
    version: opts.version,
    description: opts.description,
    queue: opts.name,
    metadata: { host: hostname(), pid: String(process.pid), node: process.version, started: new Date().toISOString(), ...opts.metadata },
  });
}

export interface EndpointHandlerContext {
  /** the validated request's envelope id, for causation */
  requestId: string;
  subject: string;
}

export interface AddEndpointOptions<Req extends z.ZodType, Res extends z.ZodType> {
  name: string;
  subject: string;
  request: Req;
  reply: Res;
  /** queue group; default: the service name, so instances share the load */
  queue?: string;
  limits: SafeParseLimits;
  log: Logger;
  handler: (req: z.output<Req>, ctx: EndpointHandlerContext) => Promise<z.input<Res>> | z.input<Res>;
}

export function addEndpoint<Req extends z.ZodType, Res extends z.ZodType>(service: Service, opts: AddEndpointOptions<Req, Res>): void {
  service.addEndpoint(opts.name, {
    subject: opts.subject,
    ...(opts.queue ? { queue: opts.queue } : {}),
    metadata: { schema: `${opts.subject}` },
    handler: (err, msg) => {
      if (err) {
        opts.log.error({ err, subject: opts.subject }, "endpoint subscription failed");
        return;
      }
      void serveOne(service, opts, msg);
    },
  });
}

async function serveOne<Req extends z.ZodType, Res extends z.ZodType>(service: Service, opts: AddEndpointOptions<Req, Res>, msg: ServiceMsg): Promise<void> {
  try {
    const body = safeParseJson(msg.data, opts.limits);
    const parsed = opts.request.safeParse(body);
    if (!parsed.success) {
      throw new LurkError("VALIDATION_FAILED", formatIssues(parsed.error), { details: parsed.error.issues.slice(0, 20) });
    }
    const id = (parsed.data as { id?: string }).id ?? "";
    const result = await opts.handler(parsed.data, { requestId: id, subject: msg.subject });
    const reply = opts.reply.parse(result);
    msg.respond(JSON.stringify(reply));
  } catch (err) {
    const lurkError = LurkError.from(err);
    countEndpointError(service, opts.name, lurkError);
    const level = lurkError.code === "INTERNAL" ? "error" : "warn";
    opts.log[level]({ err: lurkError, code: lurkError.code, subject: opts.subject }, "request failed");
    if (msg.reply) {
      msg.respondError(ERROR_CODES[lurkError.code].status, headerSafe(`${lurkError.code}: ${lurkError.message}`), JSON.stringify(lurkError.toReply()));
    }
  }
}

export function formatIssues(error: z.ZodError): string {
  return error.issues.slice(0, 5).map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`).join("; ");
}

function headerSafe(text: string): string {
  return text.replace(/[\r\n]+/g, " ").slice(0, 500);
}

/**
 * The services framework counts errors only for handlers that throw synchronously; our handlers
 * are async, so we count through the endpoint's stats object. test/runtime checks STATS.
 */
function countEndpointError(service: Service, endpoint: string, err: Error): void {
  const handlers = (service as unknown as { handlers?: Array<{ name: string; stats?: { countError(e: Error): void } }> }).handlers;
  handlers?.find((h) => h.name === endpoint)?.stats?.countError(err);
}
