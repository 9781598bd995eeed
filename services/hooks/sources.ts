/**
 * Where hook events come from:
 *  - chat commands, session resets and new sessions from the LURK_HOOK_EVENTS stream (durable
 *    consumer "hooks", one filter-less consumer on a stream of exactly those subjects: nats-server
 *    2.9 allows one filter per consumer). Events published while no hooks instance ran are kept a
 *    day and dispatched when one starts, unless older than `hooks.replayMaxAgeMs` (skipped with a
 *    log line); each is acked once its hooks ran (a stop in the middle hands it back: its hooks
 *    may run again). With several instances each event goes to one of them. Events no running
 *    hook wants are acked at once: enabling a hook later does not fire it for old events;
 *  - run ends by core subscription, made only while some running hook wants `agent:run_end` (no
 *    such hook: no subscription and no cost per run; a run end is not kept for a stopped actor).
 *    `update` follows a reloaded registry. In the queue group "hooks": one instance takes each.
 * Payloads are size-capped, parsed safely and validated; a malformed run end is logged and
 * skipped, a malformed stream event is dead-lettered by the consumer.
 */
import type { Subscription } from "@nats-io/transport-node";
import type { z } from "zod";
import {
  actorEventSchema, CONSUMERS, LurkError, routerCommandDataSchema, runEventSchema, safeParseJson, sessionsCreatedDataSchema, sessionsResetDataSchema, STREAMS,
  type ActorEvent,
} from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { RunningConsumer } from "../../shared/runtime/consumer.js";
import { wantsType } from "../../shared/runtime/hooks/events.js";
import { commandEvent, createdEvent, resetEvent, runEndEvent, type HookEvent } from "./hook-event.js";

const QUEUE = "hooks";
const SKIP_LOG_MS = 10_000;

export interface HookSink {
  /** queues the event; resolves once its hooks ran (or it was dropped) */
  dispatch(event: HookEvent): Promise<void>;
  /** some running hook takes the event */
  wants(event: HookEvent): boolean;
}

export class HookSources {
  private runEnds: Subscription[] | undefined;
  private stream: RunningConsumer | undefined;
  /** skipped events since the last skip log line */
  private skips: { more: number; timer: NodeJS.Timeout } | undefined;

  constructor(private readonly rt: ActorRuntime, private readonly sink: HookSink) {}

  /** Starts reading LURK_HOOK_EVENTS (once; always, whatever the hooks want: see the header). */
  startStream(): void {
    this.stream ??= this.rt.consume({
      stream: STREAMS.hookEvents,
      consumer: CONSUMERS.hooks,
      schema: actorEventSchema,
      // one at a time, in stream order: the dispatcher runs events one by one anyway
      concurrency: 1,
      handler: (e, delivery) => this.fromStream(e, delivery.subject),
    });
  }

  /** Follows run ends exactly while `patterns` (the running hooks' events) want them; returns the subjects followed. */
  update(patterns: readonly string[]): string[] {
    const wanted = wantsType(patterns, "agent", "run_end");
    if (wanted && !this.runEnds) this.runEnds = this.rt.subjects.runTerminalAll.map((subject) => this.onRunEnd(subject));
    if (!wanted && this.runEnds) {
      for (const sub of this.runEnds) sub.unsubscribe();
      this.runEnds = undefined;
    }
    return this.subjects;
  }

  get subjects(): string[] {
    return [...(this.stream ? this.rt.subjects.hookEventSubjects : []), ...(this.runEnds ?? []).map((x) => x.getSubject())];
  }

  /** Stops the stream consumer (its event under way gets the consumer's grace, then goes back) and the subscriptions. */
  async stop(): Promise<void> {
    for (const sub of this.runEnds ?? []) sub.unsubscribe();
    this.runEnds = undefined;
    clearTimeout(this.skips?.timer);
    await this.stream?.stop();
  }

  private async fromStream(e: ActorEvent, subject: string): Promise<void> {
    const event = streamEvent(e, subject, this.rt.subjects.hookEventSubjects);
    if (!event || !this.sink.wants(event)) return;
    const age = Date.now() - e.ts;
    const maxAge = this.rt.config.hooks.replayMaxAgeMs;
    if (age > maxAge) {
      this.skipped(event, age, maxAge);
      return;
    }
    await this.sink.dispatch(event);
  }

  /** one log line per SKIP_LOG_MS at most (a day's backlog is not a day of lines), then how many more */
  private skipped(event: HookEvent, age: number, maxAge: number): void {
    const name = `${event.type}:${event.action}`;
    this.rt.emit("skipped", { event: name, ageMs: age, reason: "older than hooks.replayMaxAgeMs" }, "warn");
    if (this.skips) {
      this.skips.more++;
      return;
    }
    this.rt.log.warn({ event: name, sessionKey: event.sessionKey, ageMs: age, replayMaxAgeMs: maxAge }, "hook event skipped: it waited longer than hooks.replayMaxAgeMs for the hooks actor");
    const skips = { more: 0, timer: setTimeout(() => {
      this.skips = undefined;
      if (skips.more > 0) this.rt.log.warn({ skipped: skips.more, replayMaxAgeMs: maxAge }, "more hook events skipped: older than hooks.replayMaxAgeMs");
    }, SKIP_LOG_MS) };
    skips.timer.unref();
    this.skips = skips;
  }

  private onRunEnd(subject: string): Subscription {
    return this.rt.nc.subscribe(subject, {
      queue: QUEUE,
      callback: (_err, msg) => {
        let event: HookEvent | null = null;
        try {
          const e = runEventSchema.parse(safeParseJson(msg.data, this.rt.limits));
          event = e.event.kind === "done" || e.event.kind === "error" ? runEndEvent(e.runId, e.sessionKey, e.event, e.ts) : null;
        } catch (err) {
          this.rt.log.warn({ subject: msg.subject, err: (err as Error).message }, "a malformed bus event was skipped (no hook runs for it)");
        }
        if (event) void this.sink.dispatch(event);
      },
    });
  }
}

/** The hook event of a stream message; throws VALIDATION_FAILED (dead letter) for data out of shape. */
function streamEvent(e: ActorEvent, subject: string, [command, reset, created]: readonly string[]): HookEvent | null {
  const data = <S extends z.ZodType>(schema: S): z.output<S> => {
    const r = schema.safeParse(e.data);
    if (r.success) return r.data;
    throw new LurkError("VALIDATION_FAILED", `${subject}: ${r.error.issues.slice(0, 3).map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  };
  if (subject === command) return commandEvent(data(routerCommandDataSchema), e.ts);
  if (subject === reset) return resetEvent(data(sessionsResetDataSchema), e.ts, e.id);
  if (subject === created) return createdEvent(data(sessionsCreatedDataSchema), e.ts);
  return null;
}
