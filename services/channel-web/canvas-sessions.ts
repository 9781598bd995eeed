/**
 * A session's canvas ends with its transcript: the sessions actor's `lurk.evt.sessions.reset`
 * (/new, /reset, `lurkbot sessions reset`, the daily/idle policy) and `lurk.evt.sessions.delete`
 * events make this actor forget that session's canvas (state and frame) and show the chat's
 * pages what is left, so an old canvas's buttons can never send a userAction into the new
 * transcript. The events are core NATS (not kept): a reset while no channel-web runs leaves the
 * old canvas until the agent's a2ui_reset. Malformed events are logged and skipped.
 */
import type { Subscription } from "@nats-io/transport-node";
import { actorEventSchema, safeParseJson, sessionsDeleteDataSchema, sessionsResetDataSchema } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";

export function onSessionEnd(rt: ActorRuntime, forget: (sessionKey: string, why: "reset" | "delete") => Promise<void>): { stop(): void } {
  const subs: Subscription[] = [];
  const on = (why: "reset" | "delete", data: { parse(v: unknown): { sessionKey: string } }) => {
    subs.push(rt.nc.subscribe(rt.subjects.event("sessions", why), {
      callback: (_err, msg) => {
        let sessionKey: string;
        try {
          sessionKey = data.parse(actorEventSchema.parse(safeParseJson(msg.data, rt.limits)).data).sessionKey;
        } catch (err) {
          rt.log.warn({ subject: msg.subject, err: (err as Error).message }, "a malformed sessions event was skipped");
          return;
        }
        forget(sessionKey, why).catch((err) => rt.log.warn({ err, sessionKey }, "could not forget a session's canvas"));
      },
    }));
  };
  on("reset", sessionsResetDataSchema);
  on("delete", sessionsDeleteDataSchema);
  return { stop: () => subs.forEach((s) => s.unsubscribe()) };
}
