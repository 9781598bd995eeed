/**
 * Per-run publisher of RunEvents on `lurk.run.evt.<runId>` (core publish: fire and forget).
 * Fills the envelope, numbers events with an increasing `seq`, and lets exactly one terminal
 * event (`done` or `error`) out; later events of the run are dropped.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import type { z } from "zod";
import { TERMINAL_RUN_EVENTS, type runEventBodySchema, type Subjects } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";

export type RunEventInput = z.input<typeof runEventBodySchema>;

export class RunEvents {
  private seq = 0;
  private terminal = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects,
    readonly runId: string,
    readonly sessionKey: string,
    private readonly causationId: string,
    private readonly log: Logger,
  ) {}

  get ended(): boolean {
    return this.terminal;
  }

  emit(event: RunEventInput): void {
    if (this.terminal) return;
    if ((TERMINAL_RUN_EVENTS as readonly string[]).includes(event.kind)) this.terminal = true;
    const seq = this.seq++;
    const message = {
      type: "lurk.run.event.v1",
      id: `${this.runId}:evt:${seq}:${Date.now().toString(36)}`,
      ts: Date.now(),
      runId: this.runId,
      sessionKey: this.sessionKey,
      causationId: this.causationId,
      seq,
      event,
    };
    try {
      this.nc.publish(this.subjects.runEvent(this.runId), JSON.stringify(message));
    } catch (err) {
      this.log.warn({ err, kind: event.kind }, "could not publish run event");
    }
  }
}
