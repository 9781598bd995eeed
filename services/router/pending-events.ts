/**
 * Pending system events of a session, recorded never while a run holds its lane: system injects
 * that do not wake the agent (term.ts) and users' reactions (reactions.ts). A record appended
 * during a run could land between an assistant tool call and its result, and the next run would
 * then see the call as interrupted and its result dropped (agent-runner transcript.ts). Rules:
 *  - while a run holds the session's lane, the event waits for that run's end; its inbound message
 *    stays unacked (the consumer keeps it alive), so it is acked only once recorded, and a crash
 *    loses nothing;
 *  - the next run's start (`beforeRun`, in the dispatch, before its request is stored in RUNS)
 *    records the session's events queued by then first, and shows them: an event waits for one
 *    run at most, even in a session that is never idle (the lane passes from run to run);
 *  - a session's events are recorded one at a time, in the order they came (the transcript tail
 *    read for the de-duplication and the count, then the append: system-events.ts); sessions in
 *    parallel, so a waiting event holds up no other session;
 *  - the lane check and the start of the write are one synchronous step, as are the dispatch's
 *    last check for a write and its leaving the gate: a record never lands inside a run;
 *  - the session is ensured (a due daily or idle reset applied) in that same write, after the wait,
 *    so an event never resets a transcript under a running run;
 *  - `close()` (the term ended: its consumer handed the waiting messages back) fails the waits.
 * The dispatch of a session with no event queued pays one Map lookup, no await.
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
  /** events per session not yet recorded (waiting or being written) */
  private readonly queued = new Map<string, number>();
  /** the write under way per session (at most one: `order` runs them one at a time) */
  private readonly writing = new Map<string, Promise<void>>();
  /** per session, the run at its start (holding the lane, not yet in RUNS): events may be written */
  private readonly opening = new Map<string, string>();
  /** per session, the wake-ups of events waiting for a run */
  private readonly wakers = new Map<string, Set<() => void>>();
  private closed = false;

  constructor(private readonly deps: PendingEventsDeps) {}

  /** Records the event in the session once no run holds its lane (see the file comment). */
  record(session: SessionRef, event: Omit<PendingEvent, "sessionKey">): Promise<Recorded> {
    const { rt, lanes } = this.deps;
    const key = session.sessionKey;
    this.queued.set(key, (this.queued.get(key) ?? 0) + 1);
    const recorded = this.order.run(key, async () => {
      for (;;) {
        if (this.closed) throw new LurkError("UNAVAILABLE", "this router term ended; the system event is recorded by the next");
        const active = lanes.activeRun(key);
        if (!active || this.opening.get(key) === active) return this.write(session, { ...event, sessionKey: key });
        rt.emit("system_event_waits", { sessionKey: key, source: event.source, runId: active }, "debug");
        await this.wait(key, active);
      }
    });
    void recorded.finally(() => {
      const left = (this.queued.get(key) ?? 1) - 1;
      if (left > 0) this.queued.set(key, left);
      else this.queued.delete(key);
    }).catch(() => undefined);
    return recorded;
  }

  /**
   * The dispatch of a run holding the session's lane, before its request is stored in RUNS: the
   * session's events queued by now are recorded first. Undefined (nothing to await) when none is.
   */
  beforeRun(sessionKey: string, runId: string): Promise<void> | undefined {
    return this.queued.has(sessionKey) ? this.open(sessionKey, runId) : undefined;
  }

  /** The term ended: waiting events fail (their messages were handed back), writes under way finish. */
  close(): void {
    this.closed = true;
    for (const key of [...this.wakers.keys()]) this.wakeAll(key);
  }

  private async open(key: string, runId: string): Promise<void> {
    this.opening.set(key, runId);
    try {
      this.wakeAll(key);
      await this.order.run(key, async () => undefined); // the events queued before this point are done
      // an event queued after that point may have begun its write before this resumed
      for (let write = this.writing.get(key); write; write = this.writing.get(key)) await write;
    } finally {
      // synchronous with the last check above: no write starts after the run passed
      if (this.opening.get(key) === runId) this.opening.delete(key);
    }
  }

  /** Until the run ends, its session's next run is at its start, or the term ends. */
  private wait(key: string, runId: string): Promise<void> {
    return new Promise((resolve) => {
      let wakers = this.wakers.get(key);
      if (!wakers) this.wakers.set(key, (wakers = new Set()));
      const set = wakers;
      const wake = () => {
        set.delete(wake);
        if (set.size === 0 && this.wakers.get(key) === set) this.wakers.delete(key);
        resolve();
      };
      set.add(wake);
      void this.deps.ended(runId).then(wake);
    });
  }

  private wakeAll(key: string): void {
    const wakers = this.wakers.get(key);
    if (wakers) for (const wake of [...wakers]) wake();
  }

  /** Called with the lane free (or its run at its start): `writing` is set before anything is awaited. */
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
