/**
 * Run control: one subscription on `lurk.run.ctl.>` per actor, dispatched by runId to the
 * active run's AbortController. An abort that arrives before its run started is remembered for
 * a while, so the run ends as soon as it starts. Steering and follow-ups are accepted and logged
 * (a later issue feeds them into the loop). Also serializes work on one runId in this process
 * (a redelivery waits for the running attempt instead of racing it).
 */
import type { Subscription } from "@nats-io/transport-node";
import { LurkError, runControlSchema, safeParseJson } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";

const EARLY_ABORT_TTL_MS = 10 * 60_000;

/** The abort reason of a run interrupted by shutdown (not an end of the run). */
export const SHUTDOWN = new LurkError("UNAVAILABLE", "the agent-runner is stopping; the run will be resumed", { details: { shutdown: true } });

export class RunControls {
  private readonly active = new Map<string, AbortController>();
  private readonly earlyAborts = new Map<string, number>();
  private readonly locks = new Map<string, Promise<unknown>>();
  private sub: Subscription | undefined;

  constructor(private readonly rt: ActorRuntime) {}

  start(): void {
    this.sub = this.rt.nc.subscribe(this.rt.subjects.runControlAll, {
      callback: (err, msg) => {
        if (err) {
          this.rt.log.error({ err }, "run control subscription failed");
          return;
        }
        try {
          const parsed = runControlSchema.safeParse(safeParseJson(msg.data, this.rt.limits));
          if (!parsed.success) throw new LurkError("VALIDATION_FAILED", parsed.error.issues[0]?.message ?? "invalid run control");
          const ctl = parsed.data;
          if (msg.subject !== this.rt.subjects.runControl(ctl.runId)) throw new LurkError("VALIDATION_FAILED", `runId ${ctl.runId} does not match ${msg.subject}`);
          this.handle(ctl.runId, ctl.action, ctl.reason);
        } catch (e) {
          this.rt.log.warn({ err: e, subject: msg.subject }, "ignoring a malformed run control message");
        }
      },
    });
  }

  private handle(runId: string, action: "abort" | "steer" | "followup", reason?: string): void {
    const controller = this.active.get(runId);
    if (action !== "abort") {
      this.rt.log.info({ runId, action, active: !!controller }, "run control accepted (steering and follow-ups are not applied yet)");
      return;
    }
    this.rt.log.info({ runId, reason, active: !!controller }, "abort requested");
    if (controller) controller.abort(new LurkError("ABORTED", reason ? `the run was aborted: ${reason}` : "the run was aborted"));
    else {
      this.earlyAborts.set(runId, Date.now());
      for (const [id, at] of this.earlyAborts) if (Date.now() - at > EARLY_ABORT_TTL_MS) this.earlyAborts.delete(id);
    }
  }

  /** The run's AbortController (already aborted when an abort came first). */
  register(runId: string): AbortController {
    const controller = new AbortController();
    if (this.rt.signal.aborted) controller.abort(SHUTDOWN);
    else if (this.earlyAborts.delete(runId)) controller.abort(new LurkError("ABORTED", "the run was aborted before it started"));
    this.active.set(runId, controller);
    return controller;
  }

  unregister(runId: string, controller: AbortController): void {
    if (this.active.get(runId) === controller) this.active.delete(runId);
  }

  /** Runs `fn` after any earlier work on the same runId finished. */
  async exclusive<T>(runId: string, fn: () => Promise<T>): Promise<T> {
    const before = this.locks.get(runId) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(fn);
    this.locks.set(runId, mine);
    try {
      return await mine;
    } finally {
      if (this.locks.get(runId) === mine) this.locks.delete(runId);
    }
  }

  /** Interrupts active runs without ending them: their messages are redelivered and resumed. */
  stop(): void {
    this.sub?.unsubscribe();
    for (const c of this.active.values()) c.abort(SHUTDOWN);
  }
}
