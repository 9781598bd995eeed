/**
 * Pending system events of a session, recorded never while a run holds its lane: system injects
 * that do not wake the agent (term.ts) and users' reactions (reactions.ts). A record appended
 * during a run could land between an assistant tool call and its result, and the next run would
 * then see the call as interrupted and its result dropped (agent-runner transcript.ts). Rules:
 *  - while the session's lane is held, the event waits for that run's end, and again for each run
 *    that takes the lane meanwhile; its inbound message stays unacked (the consumer keeps it
 *    alive), so it is acked only once recorded, and a crash loses nothing;
 *  - a session's events are recorded one at a time, in the order they came (the transcript tail
 *    read for the de-duplication and the count, then the append: system-events.ts); sessions in
 *    parallel, so a waiting event holds up no other session;
 *  - the lane check and the start of the write are one synchronous step, and the dispatch of a
 *    run waits for a write under way in its session (`settled`): a record never lands inside a
 *    run, and a run given the lane meanwhile starts after it (and shows the event);
 *  - the session is ensured (a due daily or idle reset applied) in that same write, after the wait,
 *    so an event never resets a transcript under a running run;
 *  - `close()` (the term ended: its consumer handed the waiting messages back) fails the waits.
 */
import { LurkError } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { KeyedSerial } from "../../shared/runtime/keyed-serial.js";
import { ensureSession, type SessionRef } from "./ended-sessions.js";
import type { Lanes } from "./lanes.js";
import { recordPendingEvent, type PendingEvent, type Recorded } from "./system-events.js";

export interface PendingEventsDeps {
  rt: ActorRuntime;
  lanes: Pick<Lanes, "activeRun">;
  /** resolves when the run no longer holds its lane */
  ended(runId: string): Promise<void>;
}

export class PendingEvents {
  private readonly order = new KeyedSerial();
  /** the write under way per session (at most one: `order` runs them one at a time) */
  private readonly writing = new Map<string, Promise<void>>();
  private closed = false;
  private wake!: () => void;
  private readonly closing = new Promise<void>((resolve) => (this.wake = resolve));

  constructor(private readonly deps: PendingEventsDeps) {}

  /** Records the event in the session once no run holds its lane (see the file comment). */
  record(session: SessionRef, event: Omit<PendingEvent, "sessionKey">): Promise<Recorded> {
    const { rt, lanes } = this.deps;
    const key = session.sessionKey;
    return this.order.run(key, async () => {
      for (;;) {
        if (this.closed) throw new LurkError("UNAVAILABLE", "this router term ended; the system event is recorded by the next");
        const active = lanes.activeRun(key);
        if (!active) return this.write(session, { ...event, sessionKey: key });
        rt.emit("system_event_waits", { sessionKey: key, source: event.source, runId: active }, "debug");
        await Promise.race([this.deps.ended(active), this.closing]);
      }
    });
  }

  /** Resolves when no pending event of the session is being written (at once when none is). */
  settled(sessionKey: string): Promise<void> {
    return this.writing.get(sessionKey) ?? Promise.resolve();
  }

  /** The term ended: waiting events fail (their messages were handed back), writes under way finish. */
  close(): void {
    this.closed = true;
    this.wake();
  }

  /** Called with the lane free: `writing` is set before anything is awaited. */
  private write(session: SessionRef, event: PendingEvent): Promise<Recorded> {
    const { rt } = this.deps;
    const written = (async () => {
      await ensureSession(rt, session);
      const recorded = await recordPendingEvent(rt, event);
      rt.emit("system_event_recorded", { sessionKey: event.sessionKey, source: event.source, recorded }, "debug");
      return recorded;
    })();
    const done = written.then(() => undefined, () => undefined);
    this.writing.set(event.sessionKey, done);
    void done.then(() => {
      if (this.writing.get(event.sessionKey) === done) this.writing.delete(event.sessionKey);
    });
    return written;
  }
}
