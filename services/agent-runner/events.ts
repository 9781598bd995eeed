/**
 * Per-run publisher of RunEvents on `lurk.run.evt.<runId>.<kind>` (core publish: fire and
 * forget). Fills the envelope, numbers events with an increasing `seq`, and lets exactly one
 * terminal event (`done` or `error`) out; later events of the run are dropped.
 * Text deltas are coalesced: consecutive message (or thinking) deltas of a turn go out as one
 * event after DELTA_WINDOW_MS, at DELTA_MAX_CHARS, or before any other event, so a fast stream
 * costs a few bus messages, not one per token. Order and the concatenated text are unchanged.
 * Other events wait in an outbox for the run's next bus request, which takes them along first
 * in the same socket write (`flushNow`), for at most HOLD_MS (then they go on their own), or for
 * the run's end: a terminal event goes at once with everything before it. A tool turn thus costs
 * the run no socket write of its own for its events. They are observations: nothing orders them
 * against the run's requests.
 * The model's voice directives ([[tts…]], tts-directives.ts) never leave in a message delta or a
 * message_end: a delta that may hold the start of one is held until it is known (the turn's next
 * delta, or any other event), so channels stream exactly the reply's visible text.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import type { z } from "zod";
import { TERMINAL_RUN_EVENTS, type runEventBodySchema, type Subjects } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { parseTtsReply, TtsDirectiveFilter } from "./tts-directives.js";

export type RunEventInput = z.input<typeof runEventBodySchema>;

const DELTA_WINDOW_MS = 30;
const DELTA_MAX_CHARS = 2_000;
/** the longest an event waits for a bus request to go along with (a delta: after its window) */
const HOLD_MS = 30;

type DeltaKind = "message_delta" | "thinking_delta";

/** Something that follows a run's events as they are emitted (run-notes.ts); `settle` is awaited before the run's reply. */
export interface RunEventObserver {
  observe(event: RunEventInput): void;
  settle(): Promise<void>;
}

export class RunEvents {
  private seq = 0;
  private readonly observers: RunEventObserver[] = [];
  private terminal = false;
  private pending: { kind: DeltaKind; turn: number; text: string } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private holdTimer: NodeJS.Timeout | undefined;
  /** the directive filter of the turn whose text streams now (created at its first "[") */
  private directives: { turn: number; filter: TtsDirectiveFilter } | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects,
    readonly runId: string,
    readonly sessionKey: string,
    private readonly causationId: string,
    private readonly log: Logger,
    /** the longest a non-terminal event waits for a bus request to go along with */
    private readonly holdMs = HOLD_MS,
  ) {}

  emit(event: RunEventInput): void {
    if (this.terminal) return;
    if (event.kind === "message_delta") {
      if (this.directives && this.directives.turn !== event.turn) this.releaseHeld();
      if (!this.directives && !event.text.includes("[")) return this.emitVisible(event);
      this.directives ??= { turn: event.turn, filter: new TtsDirectiveFilter() };
      const text = this.directives.filter.push(event.text);
      if (text) this.emitVisible({ ...event, text });
      return;
    }
    // a thinking delta inside a turn's text (rare) leaves the filter's state alone
    if (event.kind !== "thinking_delta" || event.turn !== this.directives?.turn) this.releaseHeld();
    if (event.kind === "message_end" && event.text.includes("[")) event = { ...event, text: parseTtsReply(event.text).visible };
    this.emitVisible(event);
  }

  /** The text a turn's filter still holds (an unfinished "[[…" that is text after all), as its delta. */
  private releaseHeld(): void {
    const held = this.directives;
    if (!held) return;
    this.directives = undefined;
    const text = held.filter.end();
    if (text) this.emitVisible({ kind: "message_delta", turn: held.turn, text });
  }

  private emitVisible(event: RunEventInput): void {
    for (const observer of this.observers) observer.observe(event);
    if (event.kind === "message_delta" || event.kind === "thinking_delta") {
      if (this.pending && (this.pending.kind !== event.kind || this.pending.turn !== event.turn)) this.queueDelta();
      if (this.pending) this.pending.text += event.text;
      else this.pending = { kind: event.kind, turn: event.turn, text: event.text };
      if (this.pending.text.length >= DELTA_MAX_CHARS) this.queueDelta();
      else this.timer ??= setTimeout(() => this.flushNow(), DELTA_WINDOW_MS);
      return;
    }
    this.queueDelta();
    this.publish(event);
  }

  /** Adds an observer: it sees every later event as emitted (before deltas are coalesced). */
  addObserver(observer: RunEventObserver): void {
    this.observers.push(observer);
  }

  /** Resolves once every observer settled (never rejects: observers handle their own failures). */
  settleObservers(): Promise<void> {
    return Promise.all(this.observers.map((o) => o.settle())).then(() => undefined);
  }

  /** Queues the coalesced delta, if any, as an event (in order, before whatever comes next). */
  private queueDelta(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const pending = this.pending;
    this.pending = undefined;
    if (pending && !this.terminal) this.publish(pending);
  }

  /** the envelope's fields that every event of the run shares, serialized once */
  private envelopeStart: string | undefined;

  private publish(event: RunEventInput): void {
    if ((TERMINAL_RUN_EVENTS as readonly string[]).includes(event.kind)) this.terminal = true;
    const seq = this.seq++;
    const ts = Date.now();
    this.envelopeStart ??= JSON.stringify({ type: "lurk.run.event.v1", runId: this.runId, sessionKey: this.sessionKey, causationId: this.causationId }).slice(0, -1);
    // the lurk.run.event.v1 envelope: the shared fields, then id, ts, seq and the event
    const data = `${this.envelopeStart},"id":${JSON.stringify(`${this.runId}:evt:${seq}:${ts.toString(36)}`)},"ts":${ts},"seq":${seq},"event":${JSON.stringify(event)}}`;
    this.outbox.push({ subject: this.subjectOf(event.kind), data, kind: event.kind });
    if (this.terminal) this.send();
    else this.holdTimer ??= setTimeout(() => this.send(), this.holdMs);
  }

  private readonly outbox: { subject: string; data: string; kind: string }[] = [];
  /** subjects by event kind, built (and their tokens checked) once per run */
  private readonly subjectsByKind = new Map<string, string>();

  private subjectOf(kind: string): string {
    let subject = this.subjectsByKind.get(kind);
    if (subject === undefined) this.subjectsByKind.set(kind, (subject = this.subjects.runEvent(this.runId, kind)));
    return subject;
  }

  private send(): void {
    if (this.holdTimer) clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    for (const { subject, data, kind } of this.outbox.splice(0)) {
      try {
        this.nc.publish(subject, data);
      } catch (err) {
        this.log.warn({ err, kind }, "could not publish run event");
      }
    }
  }

  /**
   * Hands every event emitted so far (a coalescing delta included) to the connection now: called
   * right before the run sends a bus request, so both leave in the connection's one socket write.
   */
  flushNow(): void {
    this.queueDelta();
    if (this.outbox.length > 0) this.send();
  }
}
