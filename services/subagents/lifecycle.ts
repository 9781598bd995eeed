/**
 * What happens to a child after its spawn: wait for its terminal run event (or its timeout),
 * keep the outcome in the store, publish the announce, clean up. Every step is a store
 * transition first, so a crash at any point leaves a record that `reconcile` finishes:
 *  - a running child whose run already ended (asked from `sessions.run`) is announced;
 *  - a running child still under way is watched again (its timeout counts from its start);
 *  - an announcing child is announced again (the INBOUND stream drops the repeat by its id).
 * Timeouts fire TIMEOUT_GRACE_MS after the child's own run deadline (the runner gets the same
 * deadline as `options.timeoutMs`), then the run is aborted over `lurk.run.ctl.<runId>`.
 */
import {
  envelope, LurkError, runControlSchema, type RunEventBody, type Usage,
} from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { runEndFromRecords, type RecordedRunEnd } from "../../shared/runtime/run-ends.js";
import { publishAnnounce } from "./announce.js";
import type { ChildRecord, ChildStore } from "./store.js";

/** the seeds' "+5 s buffer" over the child's own deadline */
export const TIMEOUT_GRACE_MS = 5_000;

interface Ending {
  outcome: NonNullable<ChildRecord["outcome"]>;
  reply: string;
  usage?: Usage;
}

/** A child's findings: its end marker's text, else its last words. */
const replyOf = (end: RecordedRunEnd): string => end.text ?? end.lastAssistantText;

export class ChildLifecycle {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly inFlight = new Set<string>();

  constructor(private readonly rt: ActorRuntime, private readonly store: ChildStore) {}

  /** Arms the child's timeout (from its start, so a restart does not extend it). */
  watch(record: ChildRecord): void {
    this.clearTimer(record.runId);
    const due = record.startedAt + record.timeoutSeconds * 1000 + TIMEOUT_GRACE_MS;
    const timer = setTimeout(() => void this.timeout(record.runId).catch((err) => this.log(record).warn({ err }, "child timeout handling failed")), Math.max(0, due - Date.now()));
    timer.unref();
    this.timers.set(record.runId, timer);
  }

  /** A terminal event (`done` / `error`) of some run; only running children react. */
  async onTerminal(runId: string, event: RunEventBody): Promise<void> {
    const record = this.store.get(runId);
    if (!record || record.status !== "running") return;
    if (event.kind === "done") await this.finish(runId, { outcome: "ok", reply: event.text, usage: event.usage });
    else if (event.kind === "error") await this.finish(runId, { outcome: event.code === "TIMEOUT" ? "timeout" : "error", reply: event.message });
  }

  /** The child's run is asked for its status; a finished one is announced, a live one watched. */
  async reconcile(record: ChildRecord): Promise<void> {
    if (record.status === "announcing") return this.announce(record);
    if (record.status !== "running") return;
    if (!this.timers.has(record.runId)) this.watch(record);
    const run = await this.rt.client.call("sessions", "run", { sessionKey: record.childSessionKey, runId: record.runId });
    const ended = runEndFromRecords(run.records);
    if (ended) {
      const outcome = ended.status === "done" ? "ok" : ended.errorCode === "TIMEOUT" ? "timeout" : "error";
      await this.finish(record.runId, { outcome, reply: replyOf(ended), usage: ended.usage });
    }
  }

  /** Stops a running (or not yet announced) child; true when it was stopped now. */
  async stop(runId: string, reason: string): Promise<boolean> {
    const stopped = await this.store.transition(runId, ["running", "announcing"], (r) => ({ ...r, status: "stopped", endedAt: r.endedAt ?? Date.now(), outcome: r.outcome ?? "unknown" }));
    if (!stopped) return false;
    this.clearTimer(runId);
    this.abortRun(runId, reason);
    this.rt.emit("stopped", { runId, sessionKey: stopped.childSessionKey, requesterSessionKey: stopped.requesterSessionKey });
    this.log(stopped).info({ reason }, "child stopped");
    if (stopped.cleanup === "delete") await this.deleteSession(stopped);
    return true;
  }

  /** Announces children whose announce failed before (bus trouble); asks about quiet running ones. */
  async sweep(): Promise<void> {
    for (const record of this.store.inStatus("announcing", "running")) {
      await this.reconcile(record).catch((err) => this.log(record).debug({ err }, "reconcile failed; will retry"));
    }
  }

  clearAll(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  private async timeout(runId: string): Promise<void> {
    this.timers.delete(runId);
    const record = this.store.get(runId);
    if (!record || record.status !== "running") return;
    this.abortRun(runId, `the subagent ran longer than ${record.timeoutSeconds} s`);
    // what the child said so far, if anything
    let reply = "";
    let usage: Usage | undefined;
    try {
      const run = await this.rt.client.call("sessions", "run", { sessionKey: record.childSessionKey, runId });
      const ended = runEndFromRecords(run.records);
      if (ended?.status === "done") return this.finish(runId, { outcome: "ok", reply: replyOf(ended), usage: ended.usage });
      reply = ended ? replyOf(ended) : "";
      usage = ended?.usage;
    } catch (err) {
      this.log(record).debug({ err }, "could not read the timed-out child's transcript");
    }
    await this.finish(runId, { outcome: "timeout", reply: reply || `(the subagent did not finish within ${record.timeoutSeconds} s and was stopped)`, ...(usage ? { usage } : {}) });
  }

  private async finish(runId: string, ending: Ending): Promise<void> {
    const record = await this.store.transition(runId, ["running"], (r) => ({
      ...r, status: "announcing", outcome: ending.outcome, reply: ending.reply, endedAt: Date.now(), ...(ending.usage ? { usage: ending.usage } : {}),
    }));
    if (!record) return;
    this.clearTimer(runId);
    this.log(record).info({ outcome: ending.outcome }, "child ended");
    await this.announce(record);
  }

  private async announce(record: ChildRecord): Promise<void> {
    if (this.inFlight.has(record.runId)) return;
    this.inFlight.add(record.runId);
    try {
      await publishAnnounce(this.rt, record);
      const done = await this.store.transition(record.runId, ["announcing"], (r) => {
        const { reply: _reply, ...rest } = r;
        return { ...rest, status: "done", announcedAt: Date.now() };
      });
      if (!done) return;
      this.rt.emit("announced", { runId: done.runId, sessionKey: done.childSessionKey, requesterSessionKey: done.requesterSessionKey, outcome: done.outcome });
      this.log(done).info({ outcome: done.outcome }, "child announced");
      if (done.cleanup === "delete") await this.deleteSession(done);
    } catch (err) {
      this.log(record).warn({ err: LurkError.from(err) }, "announce failed; it is retried");
    } finally {
      this.inFlight.delete(record.runId);
    }
  }

  private async deleteSession(record: ChildRecord): Promise<void> {
    await this.rt.client.call("sessions", "delete", { sessionKey: record.childSessionKey })
      .catch((err) => this.log(record).warn({ err }, "could not delete the child's session"));
  }

  private abortRun(runId: string, reason: string): void {
    const ctl = runControlSchema.parse(envelope("lurk.run.control.v1", { runId, action: "abort" as const, reason: reason.slice(0, 500) }));
    this.rt.nc.publish(this.rt.subjects.runControl(runId), JSON.stringify(ctl));
  }

  private clearTimer(runId: string): void {
    const timer = this.timers.get(runId);
    if (timer) clearTimeout(timer);
    this.timers.delete(runId);
  }

  private log(record: Pick<ChildRecord, "runId" | "childSessionKey">) {
    return this.rt.log.child({ runId: record.runId, sessionKey: record.childSessionKey });
  }
}
