/**
 * Recording a pending system event (a system inject that does not wake the agent, `wake:
 * "next-heartbeat"`, or a user's reaction) in its session's transcript (the contract:
 * shared/runtime/system-events.ts). The session's transcript tail says what is pending: an event
 * repeating the last pending event's text is dropped (debug log); otherwise it is appended with
 * `meta.pending`, and once more than MAX_PENDING_SYSTEM_EVENTS wait, an info log says how many the
 * next prompt leaves out. Callers go through PendingEvents (pending-events.ts): one session's
 * events one at a time, in order, and never while a run holds the session's lane.
 */
import type { SystemInject } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { MAX_PENDING_SYSTEM_EVENTS, pendingTail } from "../../shared/runtime/system-events.js";

/** records read from the tail: enough to step over a few context notes to the last pending event */
const TAIL_RECORDS = 8;

export type Recorded = "recorded" | "repeat";

/** A pending event to record: its transcript record id (the same for a redelivery), session, time, text and source. */
export interface PendingEvent {
  recordId: string;
  sessionKey: string;
  ts: number;
  text: string;
  source: string;
}

export const injectEvent = (msg: SystemInject): Omit<PendingEvent, "sessionKey"> => ({ recordId: `inject:${msg.id}`, ts: msg.ts, text: msg.text, source: msg.source });

export async function recordPendingEvent(rt: ActorRuntime, msg: PendingEvent): Promise<Recorded> {
  const id = msg.recordId;
  const { records } = await rt.client.call("sessions", "history", { sessionKey: msg.sessionKey, limit: TAIL_RECORDS });
  const tail = pendingTail(records);
  // a redelivery finds its own record: appending again is a no-op (same id)
  if (tail.last && tail.last.id !== id && tail.last.text === msg.text) {
    rt.log.debug({ sessionKey: msg.sessionKey, source: msg.source }, "a system event repeating the last pending one was dropped");
    return "repeat";
  }
  const pending = tail.last?.id === id ? tail.count : tail.count + 1;
  await rt.client.call("sessions", "append", {
    sessionKey: msg.sessionKey,
    records: [{ id, ts: msg.ts, kind: "system_event", text: msg.text, meta: { source: msg.source, pending } }],
  });
  if (pending > MAX_PENDING_SYSTEM_EVENTS) {
    rt.log.info({ sessionKey: msg.sessionKey, pending, dropped: pending - MAX_PENDING_SYSTEM_EVENTS },
      `more than ${MAX_PENDING_SYSTEM_EVENTS} system events wait for the session's next run: its prompt leaves out the oldest`);
  }
  return "recorded";
}
