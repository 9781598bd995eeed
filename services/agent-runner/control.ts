/**
 * Run control: one subscription on `lurk.run.ctl.>` per actor, dispatched by runId to the
 * active run's AbortController. An abort that arrives before its run started is remembered for
 * a while, so the run ends as soon as it starts. Steering and follow-ups go to the active run's
 * mailbox (mailbox.ts); a control sent as a request is answered only by the instance holding the
 * run (runControlReplySchema: `accepted: false` at once when its mailbox is closed), so a sender
 * that hears nothing knows no runner took it. Also
 * serializes work on one runId in this process (a redelivery waits for the running attempt
 * instead of racing it).
 */
import type { Subscription } from "@nats-io/transport-node";
import { LurkError, runControlSchema, safeParseJson, type RunControl, type RunControlReply } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { RunMailbox } from "./mailbox.js";

const EARLY_ABORT_TTL_MS = 10 * 60_000;

/** The abort reason of a run interrupted by shutdown (not an end of the run). */
export const SHUTDOWN = new LurkError("UNAVAILABLE", "the agent-runner is stopping; the run will be resumed", { details: { shutdown: true } });

export class RunControls {
  private readonly active = new Map<string, AbortController>();
  private readonly mailboxes = new Map<string, RunMailbox>();
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
          const accepted = this.handle(ctl);
          if (accepted !== undefined && msg.reply) {
            const reply: RunControlReply = { runId: ctl.runId, action: ctl.action, accepted };
            msg.respond(JSON.stringify(reply));
          }
        } catch (e) {
          this.rt.log.warn({ err: e, subject: msg.subject }, "ignoring a malformed run control message");
        }
      },
    });
  }

  /**
   * Applies a control; true when this instance holds the run and took it, false when it holds the
   * run and its mailbox is closed (answered at once, so the sender queues the input without
   * waiting), undefined when another instance may hold it (no answer).
   */
  private handle(ctl: RunControl): boolean | undefined {
    const { runId, action, reason } = ctl;
    const controller = this.active.get(runId);
    if (action !== "abort") {
      const mailbox = this.mailboxes.get(runId);
      if (!mailbox || !ctl.input) {
        this.rt.log.debug({ runId, action, active: !!mailbox }, "run control for a run this instance does not hold");
        return undefined;
      }
      const queued = mailbox.push({ id: ctl.id, action, input: ctl.input });
      this.rt.log.info({ runId, action, queued }, queued ? "input queued in the active run" : "the run no longer takes inputs");
      return queued;
    }
    this.rt.log.info({ runId, reason, active: !!controller }, "abort requested");
    if (controller) {
      controller.abort(new LurkError("ABORTED", reason ? `the run was aborted: ${reason}` : "the run was aborted"));
      return true;
    }
    this.earlyAborts.set(runId, Date.now());
    for (const [id, at] of this.earlyAborts) if (Date.now() - at > EARLY_ABORT_TTL_MS) this.earlyAborts.delete(id);
    return undefined;
  }

  /**
   * The run's AbortController (already aborted when an abort came first). `inputs: false`: a run
   * that takes no steering or follow-ups (a command run such as `/compact`): its mailbox is closed
   * from the start, so a hand-off is refused at once and queues.
   */
  register(runId: string, opts: { inputs?: boolean } = {}): AbortController {
    const controller = new AbortController();
    if (this.rt.signal.aborted) controller.abort(SHUTDOWN);
    else if (this.earlyAborts.delete(runId)) controller.abort(new LurkError("ABORTED", "the run was aborted before it started"));
    this.active.set(runId, controller);
    this.mailboxes.set(runId, new RunMailbox({ closed: opts.inputs === false }));
    return controller;
  }

  /** The mailbox of a run registered here. */
  mailbox(runId: string): RunMailbox | undefined {
    return this.mailboxes.get(runId);
  }

  unregister(runId: string, controller: AbortController): void {
    if (this.active.get(runId) === controller) {
      this.active.delete(runId);
      this.mailboxes.delete(runId);
    }
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
