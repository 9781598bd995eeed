/**
 * Queue modes (seeds 001 §5.4): what a message does when its session already has an active run.
 *   queue          each message its own run, FIFO (the lane waits)
 *   collect        messages waiting for the lane become one run (several inputs)
 *   steer          handed to the active run (`run.ctl` steer: the remaining tool calls are skipped,
 *                  the message is the next turn); if no runner takes it, it waits like `queue`
 *   followup       handed to the active run as a follow-up turn when its loop ends; else waits
 *   steer-backlog  steered into the active run and also kept as a run of its own afterwards
 *   interrupt      the active run is aborted, waiting messages are dropped, this one runs next
 * Waiting runs per session are capped; over the cap the drop policy removes the oldest ("old"),
 * the new one ("new"), or the oldest with a one-line digest prepended to the next run
 * ("summarize"). `debounceMs` holds a run that got the lane until its inputs were quiet that long.
 *
 * Every message's handler awaits its Work's outcome: it is acked once the run request is stored
 * (dispatch), the run it was handed to (steer/followup) ended with it in its transcript, or it was
 * dropped; a failure rejects and the message is redelivered.
 *
 * A hand-off is kept until the run took it: a runner holds an accepted input in memory until its
 * loop takes it (and stores it under `recordIds.mailboxInput(runId, controlId)`), so a run that
 * ends otherwise (an error, an abort, a timeout, its iteration limit, a `/compact` run, a runner
 * restart that resumes it) accepted it and never took it. The handed Work therefore waits beside
 * the run (`Lanes.acquireAfter`: not queued nor dropped; at most `cap` per session) and heads the queue at
 * its end; granted the lane, it asks whether the run stored it (`stored`): if so it frees the lane
 * ("handed"), else it goes on as ordinary queued work, a run of its own ahead of the later
 * arrivals. `/stop`, `/new` and an interrupt drop it as they drop the waiting works. A redelivered
 * message the run refuses (a new router: the run may have taken it from the previous one) is checked
 * the same way. Each hand-off is replicated before it is asked (`handOffs.noted`, the run it goes
 * to): a router instance that took over from one that died holding a handed message unacked
 * checks that run the same way when the message comes again, even if the run ended meanwhile (it
 * may have answered the message in its reply), instead of giving it a run of its own.
 */
import type { RunInput, RunRequest } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { DropPolicy, QueueMode } from "./commands.js";
import type { Lanes } from "./lanes.js";

export interface QueueSettings {
  mode: QueueMode;
  debounceMs: number;
  cap: number;
  drop: DropPolicy;
}

export interface DeliveryLike {
  redelivered: boolean;
  deliveryCount: number;
}

/** dispatched: its own run stored in RUNS; merged: part of another message's run; handed: taken (and stored) by the active run */
export type WorkOutcome = "dispatched" | "merged" | "handed" | "dropped" | "duplicate";

const MAX_INPUTS = 1000;
const DIGEST_ITEM_CHARS = 60;
const DIGEST_MAX_CHARS = 500;

/** One future run: the first message's request plus the inputs of messages merged into it. */
export class Work {
  readonly delivery: DeliveryLike;
  lastArrival: number;
  /** the lane was granted: no more merging */
  started = false;
  done!: Promise<WorkOutcome>;

  constructor(readonly request: RunRequest, delivery: DeliveryLike, readonly settings: QueueSettings, now: number) {
    this.delivery = { ...delivery };
    this.lastArrival = now;
  }

  get runId(): string {
    return this.request.runId;
  }

  get sessionKey(): string {
    return this.request.sessionKey;
  }

  canAbsorb(other: Work): boolean {
    return !this.started && this.request.inputs.length + other.request.inputs.length <= MAX_INPUTS;
  }

  /** Takes the other work's inputs; the other's outcome becomes "merged" once this one is dispatched. */
  absorb(other: Work, now: number): void {
    this.request.inputs.push(...other.request.inputs);
    if (this.request.origin && other.request.origin) this.request.origin.messageIds.push(...other.request.origin.messageIds);
    this.delivery.redelivered ||= other.delivery.redelivered;
    this.delivery.deliveryCount = Math.max(this.delivery.deliveryCount, other.delivery.deliveryCount);
    this.lastArrival = now;
  }

  /** The user text of all inputs (steering sends one input). */
  combinedInput(): RunInput {
    const users = this.request.inputs.filter((i) => i.kind === "user");
    // one input shows one platform id: the newest message's
    const newest = users.findLast((i) => i.messageId)?.messageId;
    return {
      kind: "user",
      text: users.map((i) => i.text).join("\n"),
      attachments: users.flatMap((i) => i.attachments).slice(0, 32),
      ...(users[0]?.sourceId ? { sourceId: users[0].sourceId } : {}),
      ...(newest ? { messageId: newest } : {}),
    };
  }

  /** What a hand-off gives the active run: an inject's system event as it is, else the user text of all inputs. */
  handedInput(): RunInput {
    const [only, ...rest] = this.request.inputs;
    return only && rest.length === 0 && only.kind === "system_event" ? only : this.combinedInput();
  }

  digestLine(): string {
    const text = this.request.inputs.filter((i) => i.kind === "user").map((i) => i.text).join(" / ").replace(/\s+/g, " ").trim();
    return text.length > DIGEST_ITEM_CHARS ? `${text.slice(0, DIGEST_ITEM_CHARS - 1)}…` : text;
  }
}

export interface QueueDeps {
  lanes: Lanes;
  log: Logger;
  /** the lane is held by the request's run: store the request in RUNS (the reliability contract) */
  dispatch(request: RunRequest, delivery: DeliveryLike): Promise<"dispatched" | "duplicate">;
  /** `run.ctl` as a request; true when the runner holding the run took the input */
  control(runId: string, action: "steer" | "followup", input: RunInput, controlId: string): Promise<boolean>;
  abort(runId: string, reason: string): void;
  /** asked once the run a work was handed to ended: whether it stored the input (never throws: a failed look-up is false) */
  stored(sessionKey: string, handed: HandedTo): Promise<boolean>;
  /** frees the lane a work holds without a run of its own (its input is in the run it was handed to) */
  release(runId: string): void;
  /** the replicated hand-offs (term.ts): `noted` resolves once the entry is replicated; `handedTo` the run a work's was */
  handOffs?: { noted(runId: string, handedTo: string): Promise<void>; handedTo(runId: string): string | undefined };
  now?: () => number;
}

export class SessionQueues {
  private readonly works = new Map<string, Work>();
  private readonly collecting = new Map<string, Work>();
  private readonly digests = new Map<string, string[]>();
  /** per session: hand-offs whose control request is under way (with the parked ones, at most `cap`) */
  private readonly handing = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly deps: QueueDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Queues a work by its settings' mode; resolves with what became of it. */
  submit(work: Work): Promise<WorkOutcome> {
    const { lanes } = this.deps;
    const key = work.sessionKey;
    // a redelivered message handed to a run before (by an instance that died): checked against that run
    const handedBefore = work.delivery.redelivered && !this.works.has(work.runId) && !lanes.isHeld(work.runId) ? this.deps.handOffs?.handedTo(work.runId) : undefined;
    if (handedBefore) return (work.done = this.afterHandOff(work, handedBefore));
    // idle session, or a redelivered message whose run already holds the lane
    if (lanes.isActive(work.runId) || !lanes.busy(key)) return (work.done = this.run(work));
    const active = lanes.activeRun(key);
    switch (work.settings.mode) {
      case "queue":
        return (work.done = this.enqueue(work));
      case "collect": {
        const open = this.collecting.get(key);
        if (open && open.canAbsorb(work)) {
          open.absorb(work, this.now());
          return (work.done = open.done.then(merged));
        }
        this.collecting.set(key, work);
        return (work.done = this.enqueue(work));
      }
      case "steer":
      case "followup": {
        // each hand-off holds its message unacked until the run's end (a slot of the router's
        // consumer, shared by all sessions): at most `cap` per session, past that it queues
        if ((this.handing.get(key) ?? 0) + lanes.parkedRuns(key).length >= work.settings.cap) return (work.done = this.enqueue(work));
        // refused (or no runner answered): a redelivered message (a new active router) may have
        // been handed to that run by the previous one, which took and stored it and then stopped
        // taking inputs: it is checked at the run's end like a hand-off, so it is not answered twice
        return (work.done = this.hand(work, work.settings.mode, active).then((taken) =>
          (active && (taken || work.delivery.redelivered) ? this.afterHandOff(work, active) : this.enqueue(work))));
      }
      case "steer-backlog":
        // not noted: the message has a run of its own anyway
        return (work.done = this.hand(work, "steer", active, false).then(() => this.enqueue(work)));
      case "interrupt":
        this.dropWaiting(key);
        if (active) this.deps.abort(active, "interrupted by a new message");
        return (work.done = this.enqueue(work));
    }
  }

  /** /stop: drops the waiting works (and those handed to the active run, not checked yet) and aborts the active run. */
  stop(sessionKey: string, reason: string): { activeRunId?: string; dropped: number } {
    const dropped = this.dropWaiting(sessionKey);
    this.digests.delete(sessionKey);
    const active = this.deps.lanes.activeRun(sessionKey);
    if (active) this.deps.abort(active, reason);
    return { ...(active ? { activeRunId: active } : {}), dropped };
  }

  private async hand(work: Work, action: "steer" | "followup", runId: string | undefined, note = true): Promise<boolean> {
    if (!runId) return false;
    const key = work.sessionKey;
    this.handing.set(key, (this.handing.get(key) ?? 0) + 1);
    try {
      const noted = note ? this.deps.handOffs?.noted(work.runId, runId) : undefined;
      if (noted) await noted;
      return await this.deps.control(runId, action, work.handedInput(), controlIdFor(work));
    } catch (err) {
      this.deps.log.warn({ err, runId, action }, "run control failed; the message waits for its own run");
      return false;
    } finally {
      const left = this.handing.get(key)! - 1;
      if (left > 0) this.handing.set(key, left);
      else this.handing.delete(key);
    }
  }

  private enqueue(work: Work): Promise<WorkOutcome> {
    const { lanes } = this.deps;
    const key = work.sessionKey;
    const waiting = lanes.waitingRuns(key);
    if (waiting.length >= work.settings.cap) {
      if (work.settings.drop === "new") {
        this.deps.log.info({ sessionKey: key, runId: work.runId }, "queue full: dropping the new message");
        return Promise.resolve("dropped");
      }
      const victim = this.works.get(waiting[0]!);
      if (victim && work.settings.drop === "summarize") this.addDigest(key, victim.digestLine());
      this.deps.log.info({ sessionKey: key, dropped: waiting[0] }, "queue full: dropping the oldest waiting message");
      lanes.withdraw(key, waiting[0]!);
    }
    return this.run(work);
  }

  private run(work: Work): Promise<WorkOutcome> {
    const { lanes } = this.deps;
    if (lanes.isDispatched(work.runId)) return Promise.resolve("duplicate"); // a redelivery of a message whose run is under way
    return this.tracked(work, async () => ((await lanes.acquire(work.sessionKey, work.runId)) ? this.start(work) : "dropped"));
  }

  /**
   * A work the active run `handedTo` accepted (steer, followup): it waits beside that run and heads the
   * queue at its end; then "handed" if the run stored its input, else its own run. Withdrawn
   * meanwhile (/stop, /new, an interrupt): dropped.
   */
  private afterHandOff(work: Work, handedTo: string): Promise<WorkOutcome> {
    const { lanes } = this.deps;
    const handed: HandedTo = { runId: handedTo, controlId: controlIdFor(work) };
    return this.tracked(work, async () => {
      if (!(await lanes.acquireAfter(work.sessionKey, work.runId, handed.runId))) return "dropped";
      if (await this.deps.stored(work.sessionKey, handed)) {
        this.deps.release(work.runId);
        return "handed";
      }
      this.deps.log.info({ sessionKey: work.sessionKey, runId: work.runId, handedTo: handed.runId }, "the run a message was handed to ended without taking it; it gets a run of its own");
      return this.start(work);
    });
  }

  /** Known by run id while it waits (a summarize drop's digest line) or starts. */
  private async tracked(work: Work, wait: () => Promise<WorkOutcome>): Promise<WorkOutcome> {
    this.works.set(work.runId, work);
    try {
      return await wait();
    } finally {
      if (this.works.get(work.runId) === work) this.works.delete(work.runId);
    }
  }

  /** The work holds the lane: debounce, the digest of dropped messages, then its run request is stored. */
  private async start(work: Work): Promise<WorkOutcome> {
    const key = work.sessionKey;
    // queue debounce: start only after the inputs were quiet for debounceMs
    for (let wait = work.lastArrival + work.settings.debounceMs - this.now(); wait > 0; wait = work.lastArrival + work.settings.debounceMs - this.now()) {
      await new Promise((r) => setTimeout(r, wait));
    }
    work.started = true;
    if (this.collecting.get(key) === work) this.collecting.delete(key);
    const digest = this.digests.get(key);
    if (digest?.length) {
      this.digests.delete(key);
      work.request.inputs.unshift({ kind: "system_event", text: digestText(digest), attachments: [] });
    }
    return this.deps.dispatch(work.request, work.delivery);
  }

  /** A work waits here (for its lane, beside the run it was handed to, or to be dispatched). */
  isOpen(runId: string): boolean {
    return this.works.has(runId);
  }

  /** The waiting works and those handed to the active run and not checked yet. */
  private dropWaiting(sessionKey: string): number {
    const { lanes } = this.deps;
    let dropped = 0;
    for (const runId of [...lanes.parkedRuns(sessionKey), ...lanes.waitingRuns(sessionKey)]) if (lanes.withdraw(sessionKey, runId)) dropped++;
    this.collecting.delete(sessionKey);
    return dropped;
  }

  private addDigest(sessionKey: string, line: string): void {
    const list = this.digests.get(sessionKey) ?? [];
    list.push(line);
    this.digests.set(sessionKey, list);
  }
}

/** The run a work was handed to and the control id that names its input record there. */
export interface HandedTo {
  runId: string;
  controlId: string;
}

/** The control id a work's input is handed under: it names the input's record in the run (the same on a redelivery). */
const controlIdFor = (work: Work) => `ctl-${work.runId}`;

/** The outcome of a work merged into another. */
export function merged(outcome: WorkOutcome): WorkOutcome {
  return outcome === "dispatched" || outcome === "duplicate" ? "merged" : outcome;
}

/** One line: how many messages were dropped and what they began with. */
export function digestText(lines: string[]): string {
  let text = `[${lines.length} earlier message${lines.length === 1 ? " was" : "s were"} dropped while you were busy: ${lines.map((l) => `"${l}"`).join("; ")}]`;
  if (text.length > DIGEST_MAX_CHARS) text = `${text.slice(0, DIGEST_MAX_CHARS - 2)}…]`;
  return text;
}
