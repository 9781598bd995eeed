/**
 * The bus subscriptions that feed hook events, made only for event types some running hook
 * wants (no hook on agent:run_end: no subscription to run ends, no cost per run). `update`
 * follows a reloaded registry: it subscribes to what became wanted and unsubscribes from what no
 * running hook wants any more. Each subscription is in the queue group "hooks": with several
 * hooks instances, one of them takes each event. Payloads are size-capped, parsed safely and
 * validated; a malformed one is logged and skipped.
 */
import type { Subscription } from "@nats-io/transport-node";
import {
  actorEventSchema, routerCommandDataSchema, runEventSchema, safeParseJson, sessionsResetDataSchema,
} from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { wantsType } from "../../shared/runtime/hooks/events.js";
import { commandEvent, resetEvent, runEndEvent, type HookEvent } from "./hook-event.js";

const QUEUE = "hooks";

type Kind = "command" | "reset" | "run_end";

export class HookSources {
  private readonly subs = new Map<Kind, Subscription[]>();

  constructor(private readonly rt: ActorRuntime, private readonly dispatch: (e: HookEvent) => void) {}

  /** Subscribes to exactly what `patterns` (the running hooks' events) need; returns the subjects followed. */
  update(patterns: readonly string[]): string[] {
    const wanted: Record<Kind, boolean> = {
      command: wantsType(patterns, "command"),
      reset: wantsType(patterns, "session", "reset"),
      run_end: wantsType(patterns, "agent", "run_end"),
    };
    for (const kind of Object.keys(wanted) as Kind[]) {
      const have = this.subs.get(kind);
      if (wanted[kind] && !have) this.subs.set(kind, this.subscribe(kind));
      if (!wanted[kind] && have) {
        for (const sub of have) sub.unsubscribe();
        this.subs.delete(kind);
      }
    }
    return this.subjects;
  }

  get subjects(): string[] {
    return [...this.subs.values()].flat().map((x) => x.getSubject());
  }

  stop(): void {
    for (const subs of this.subs.values()) for (const sub of subs) sub.unsubscribe();
    this.subs.clear();
  }

  private subscribe(kind: Kind): Subscription[] {
    const s = this.rt.subjects;
    if (kind === "command") {
      return [this.on(s.event("router", "command"), (raw) => {
        const e = actorEvent(raw, routerCommandDataSchema);
        return commandEvent(e.data, e.ts);
      })];
    }
    if (kind === "reset") {
      return [this.on(s.event("sessions", "reset"), (raw) => {
        const e = actorEvent(raw, sessionsResetDataSchema);
        return resetEvent(e.data, e.ts, e.id);
      })];
    }
    return s.runTerminalAll.map((subject) => this.on(subject, (raw) => {
      const e = runEventSchema.parse(raw);
      return e.event.kind === "done" || e.event.kind === "error" ? runEndEvent(e.runId, e.sessionKey, e.event, e.ts) : null;
    }));
  }

  private on(subject: string, build: (data: unknown) => HookEvent | null): Subscription {
    return this.rt.nc.subscribe(subject, {
      queue: QUEUE,
      callback: (_err, msg) => {
        let event: HookEvent | null = null;
        try {
          event = build(safeParseJson(msg.data, this.rt.limits));
        } catch (err) {
          this.rt.log.warn({ subject: msg.subject, err: (err as Error).message }, "a malformed bus event was skipped (no hook runs for it)");
        }
        if (event) this.dispatch(event);
      },
    });
  }
}

function actorEvent<T>(raw: unknown, schema: { parse(v: unknown): T }): { ts: number; id: string; data: T } {
  const e = actorEventSchema.parse(raw);
  return { ts: e.ts, id: e.id, data: schema.parse(e.data) };
}
