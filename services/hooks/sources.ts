/**
 * The bus subscriptions that feed hook events, made only for event types some running hook
 * wants (no hook on agent:run_end: no subscription to run ends, no cost per run). Each is in the
 * queue group "hooks": with several hooks instances, one of them takes each event. Payloads are
 * size-capped, parsed safely and validated; a malformed one is logged and skipped.
 */
import type { Subscription } from "@nats-io/transport-node";
import {
  actorEventSchema, routerCommandDataSchema, runEventSchema, safeParseJson, sessionsResetDataSchema,
} from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { wantsType } from "../../shared/runtime/hooks/events.js";
import { commandEvent, resetEvent, runEndEvent, type HookEvent } from "./hook-event.js";

const QUEUE = "hooks";

export function subscribeSources(rt: ActorRuntime, patterns: readonly string[], dispatch: (e: HookEvent) => void): { subjects: string[]; stop(): void } {
  const subs: Subscription[] = [];
  const s = rt.subjects;
  const on = (subject: string, build: (data: unknown) => HookEvent | null) => {
    subs.push(rt.nc.subscribe(subject, {
      queue: QUEUE,
      callback: (_err, msg) => {
        let event: HookEvent | null = null;
        try {
          event = build(safeParseJson(msg.data, rt.limits));
        } catch (err) {
          rt.log.warn({ subject: msg.subject, err: (err as Error).message }, "a malformed bus event was skipped (no hook runs for it)");
        }
        if (event) dispatch(event);
      },
    }));
  };
  const actorEvent = <T>(raw: unknown, schema: { parse(v: unknown): T }) => {
    const e = actorEventSchema.parse(raw);
    return { ts: e.ts, id: e.id, data: schema.parse(e.data) };
  };
  if (wantsType(patterns, "command")) {
    on(s.event("router", "command"), (raw) => {
      const e = actorEvent(raw, routerCommandDataSchema);
      return commandEvent(e.data, e.ts);
    });
  }
  if (wantsType(patterns, "session", "reset")) {
    on(s.event("sessions", "reset"), (raw) => {
      const e = actorEvent(raw, sessionsResetDataSchema);
      return resetEvent(e.data, e.ts, e.id);
    });
  }
  if (wantsType(patterns, "agent", "run_end")) {
    for (const subject of s.runTerminalAll) {
      on(subject, (raw) => {
        const e = runEventSchema.parse(raw);
        return e.event.kind === "done" || e.event.kind === "error" ? runEndEvent(e.runId, e.sessionKey, e.event, e.ts) : null;
      });
    }
  }
  return { subjects: subs.map((x) => x.getSubject()), stop: () => subs.forEach((x) => x.unsubscribe()) };
}
