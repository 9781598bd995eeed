/**
 * Every run's start (`lurk.run.evt.<runId>.run_start`, core NATS): the router holds the session's
 * lane for runs it did not dispatch (term.ts `runStarted`). The run id comes from the subject;
 * the payload (its session key) is parsed only when asked, so the start of a run the router
 * dispatched costs no parse. A malformed start is logged and ignored.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import type { SafeParseLimits, Subjects } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { followRunEvents } from "../../shared/runtime/run-ends.js";

export type RunStartHandler = (runId: string, sessionKey: () => string | undefined) => void;

export function subscribeRunStarts(nc: NatsConnection, subjects: Subjects, limits: SafeParseLimits, log: Logger, handler: RunStartHandler): { stop(): void } {
  return followRunEvents(nc, subjects, [subjects.runStartAll], limits, log, "run_start event",
    (e) => (e.event.kind === "run_start" ? e.sessionKey : undefined),
    (runId, _subject, read) => handler(runId, read));
}
