/**
 * The actor lifecycle. An actor is a definition `{ name, version, description, start(rt) }`;
 * `start` receives an ActorRuntime (connection, service, typed client, consumer helper, events,
 * logger, config) and returns what to stop. `runActorProcess` is a whole `main.ts`:
 * config -> security checks -> connect -> register service -> start -> drain on SIGTERM.
 * The launcher's single-process mode calls `startActor` for several definitions in one process;
 * each still has its own connection, user and inbox, and they talk only over NATS.
 */
import { hostname } from "node:os";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Service } from "@nats-io/services";
import type { z } from "zod";
import {
  actorEventSchema, endpointSpec, LurkError, subjects, type EndpointActor, type EndpointOp,
  type ParsedRequestOf, type ReplyOf, type Subjects,
} from "../contract/index.js";
import { BusClient } from "./client.js";
import { configSecrets, loadConfig, type LurkConfig } from "./config.js";
import { connectActor } from "./connect.js";
import { tunnelGuard } from "./port-owner.js";
import { startConsumer, type ConsumeOptions, type RunningConsumer } from "./consumer.js";
import { checkTransportSecurity, passwordFor } from "./credentials.js";
import { createLogger, redactSecrets, registerSecret, type Logger } from "./logger.js";
import { MediaStore } from "./media.js";
import { startIdleGc } from "./memory.js";
import { addEndpoint, registerService, type EndpointHandlerContext } from "./service.js";

export interface Stoppable {
  stop(): Promise<void>;
}

export interface ActorDefinition {
  /** service name == NATS user */
  name: string;
  version: string;
  description: string;
  start(rt: ActorRuntime): Promise<Stoppable | void>;
  /** extra service metadata (`$SRV.INFO`, shown by `lurkbot status`), computed before the service registers */
  metadata?(config: LurkConfig, log: Logger): Promise<Record<string, string>> | Record<string, string>;
}

/** this process, as events name it (read once: `hostname()` is a system call) */
const INSTANCE = { host: hostname(), pid: process.pid };

export class ActorRuntime {
  readonly subjects: Subjects;
  readonly client: BusClient;
  readonly js: JetStreamClient;
  private readonly stoppables: Stoppable[] = [];
  private readonly abort = new AbortController();
  private readonly idleHooks: Array<() => void> = [];
  /** changes whenever a request or a durable message is handled (see memory.ts) */
  readonly activity = { count: 0 };

  constructor(
    readonly name: string,
    readonly config: LurkConfig,
    readonly nc: NatsConnection,
    readonly service: Service,
    readonly log: Logger,
  ) {
    this.subjects = subjects(config.nats.prefix);
    this.client = new BusClient(nc, config.nats.prefix, config.bus.requestTimeoutMs);
    this.js = jetstream(nc);
  }

  private mediaStore: MediaStore | undefined;
  /** The media store (media.ts), opened on first use. */
  get media(): MediaStore {
    return (this.mediaStore ??= new MediaStore(this.nc, this.config.media));
  }

  /** Aborted when the actor is stopping. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  get limits() {
    return { maxBytes: this.config.bus.maxPayloadBytes, maxDepth: this.config.bus.maxDepth };
  }

  /** Serves `lurk.<actor>.<op>` with the contract's schemas. */
  serve<A extends EndpointActor, O extends EndpointOp<A>>(actor: A, op: O, handler: (req: ParsedRequestOf<A, O>, ctx: EndpointHandlerContext) => Promise<ReplyOf<A, O>> | ReplyOf<A, O>, opts: { queue?: string } = {}): void {
    const spec = endpointSpec(actor, op);
    this.serveSubject(op, `${this.subjects.prefix}.${actor}.${op}`, spec.request, spec.reply, handler as never, opts);
  }

  /** Serves any subject with given schemas (e.g. `lurk.tools.call.<tool>`). */
  serveSubject<Req extends z.ZodType, Res extends z.ZodType>(name: string, subject: string, request: Req, reply: Res, handler: (req: z.output<Req>, ctx: EndpointHandlerContext) => Promise<z.input<Res>> | z.input<Res>, opts: { queue?: string } = {}): void {
    const counted = (req: z.output<Req>, ctx: EndpointHandlerContext) => {
      this.activity.count++;
      return handler(req, ctx);
    };
    addEndpoint(this.service, { name, subject, request, reply, limits: this.limits, log: this.log, handler: counted, ...(opts.queue ? { queue: opts.queue } : {}) });
  }

  /** Reads a durable consumer with the contract's delivery rules; stopped with the actor. */
  consume<S extends z.ZodType>(opts: Pick<ConsumeOptions<S>, "stream" | "consumer" | "schema" | "handler"> & Partial<Pick<ConsumeOptions<S>, "filterSubject" | "concurrency" | "ackWaitMs">>): RunningConsumer {
    const bus = this.config.bus;
    const running = startConsumer(this.nc, {
      concurrency: 16,
      ackWaitMs: bus.ackWaitMs,
      maxDeliver: bus.maxDeliver,
      backoffMs: bus.backoffMs,
      limits: this.limits,
      prefix: this.config.nats.prefix,
      log: this.log.child({ stream: opts.stream, consumer: opts.consumer }),
      onDeadLetter: (info) => this.emit("dead_letter", { ...info }, "error"),
      ...opts,
      handler: (message, delivery) => {
        this.activity.count++;
        return opts.handler(message, delivery);
      },
    });
    this.stoppables.push(running);
    return running;
  }

  /** Publishes `lurk.evt.<actor>.<event>` (secrets redacted). Never throws. */
  emit(event: string, data: Record<string, unknown> = {}, level: "debug" | "info" | "warn" | "error" = "info"): void {
    try {
      const message = actorEventSchema.parse({
        type: "lurk.actor.event.v1",
        id: `${this.name}-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`,
        ts: Date.now(),
        actor: this.name,
        event,
        level,
        instance: INSTANCE,
        data: redactSecrets(data),
      });
      this.nc.publish(this.subjects.event(this.name, event), JSON.stringify(message));
    } catch (err) {
      this.log.warn({ err, event }, "could not publish event");
    }
  }

  onStop(stoppable: Stoppable): void {
    this.stoppables.push(stoppable);
  }

  /** `hook` runs whenever the actor has gone idle after work (memory.ts), before the idle GC. */
  onIdle(hook: () => void): void {
    this.idleHooks.push(hook);
  }

  /** runs the idle hooks (memory.ts calls it; tests may too) */
  runIdleHooks(): void {
    for (const hook of this.idleHooks) hook();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    for (const s of this.stoppables.reverse()) await s.stop().catch((err) => this.log.warn({ err }, "stop failed"));
    await this.service.stop().catch(() => undefined);
    await this.nc.drain().catch(() => undefined);
  }
}

export interface StartActorOptions {
  config?: LurkConfig;
  env?: Record<string, string | undefined>;
  log?: Logger;
  firstConnectTimeoutMs?: number;
}

/** Connects and starts one actor; returns a handle that drains it. */
export async function startActor(def: ActorDefinition, opts: StartActorOptions = {}): Promise<ActorRuntime> {
  const env = opts.env ?? process.env;
  const config = opts.config ?? loadConfig(env);
  for (const secret of configSecrets(config)) registerSecret(secret);
  checkTransportSecurity(config);
  const password = passwordFor(def.name, config, env);
  registerSecret(password);
  const log = opts.log ?? createLogger(def.name, config.log.level);
  // under a launcher's ssh tunnel: the password only to that launcher's ssh (LURKBOT_NATS_TUNNEL_PARENT)
  const guard = tunnelGuard(config.nats.url, env);
  const nc = await connectActor({ url: config.nats.url, user: def.name, password, log, ...(guard ? { guard } : {}), ...(opts.firstConnectTimeoutMs ? { firstConnectTimeoutMs: opts.firstConnectTimeoutMs } : {}) });
  let metadata: Record<string, string> | undefined;
  try {
    metadata = await def.metadata?.(config, log);
  } catch (err) {
    await nc.close().catch(() => undefined);
    throw err;
  }
  const service = await registerService(nc, { name: def.name, version: def.version, description: def.description, ...(metadata ? { metadata } : {}) });
  const rt = new ActorRuntime(def.name, config, nc, service, log);
  try {
    const started = await def.start(rt);
    if (started) rt.onStop(started);
    // a round trip to the server: every subscription the actor made is registered before it
    // reports ready, so a request sent right after finds a responder
    await nc.flush();
  } catch (err) {
    await rt.stop();
    throw err;
  }
  const idleGc = startIdleGc(rt.activity, log, () => rt.runIdleHooks());
  rt.onStop({ stop: async () => idleGc.stop() });
  log.info({ version: def.version, serviceId: service.info().id }, "actor started");
  rt.emit("started", { version: def.version });
  return rt;
}

/** The whole `main.ts` of an actor process. */
export function runActorProcess(def: ActorDefinition): void {
  let rt: ActorRuntime | undefined;
  let stopping = false;
  const stop = async (reason: string) => {
    if (stopping) return;
    stopping = true;
    rt?.log.info({ reason }, "stopping: draining");
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    await rt?.stop().catch(() => undefined);
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  // started by the launcher with an IPC channel: a vanished launcher must not leave us behind
  if (process.send) process.on("disconnect", () => void stop("launcher gone"));
  startActor(def)
    .then((runtime) => {
      rt = runtime;
      if (stopping) void runtime.stop();
      process.send?.({ type: "ready", actor: def.name });
    })
    .catch((err) => {
      const e = LurkError.from(err);
      process.stderr.write(`${def.name}: cannot start: ${e.message}\n`);
      process.exit(e.code === "INSECURE_CONFIG" || e.code === "CONFIG_INVALID" ? 78 : 1);
    });
}
