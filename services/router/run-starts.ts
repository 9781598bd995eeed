/**
 * Every run's start (`lurk.run.evt.<runId>.run_start`, core NATS): the router holds the session's
 * lane for runs it did not dispatch (term.ts `runStarted`). The run id comes from the subject;
 * the payload (its session key) is parsed only when asked, so the start of a run the router
 * dispatched costs no parse. A malformed start is logged and ignored.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { runEventSchema, safeParseJson, type SafeParseLimits, type Subjects } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";

export type RunStartHandler = (runId: string, sessionKey: () => string | undefined) => void;

export function subscribeRunStarts(nc: NatsConnection, subjects: Subjects, limits: SafeParseLimits, log: Logger, handler: RunStartHandler): { stop(): void } {
  const runIdIndex = subjects.prefix.split(".").length + 2;
  const sub = nc.subscribe(subjects.runStartAll, {
    callback: (_err, msg) => {
      const runId = msg.subject.split(".")[runIdIndex];
      if (!runId) return;
      const sessionKey = (): string | undefined => {
        try {
          const parsed = runEventSchema.safeParse(safeParseJson(msg.data, limits));
          if (parsed.success && parsed.data.runId === runId && parsed.data.event.kind === "run_start") return parsed.data.sessionKey;
        } catch {
          // not JSON, too large or too deep: malformed
        }
        log.warn({ runId, subject: msg.subject }, "malformed run_start event");
        return undefined;
      };
      try {
        handler(runId, sessionKey);
      } catch (err) {
        log.warn({ err, runId }, "a run_start event could not be handled");
      }
    },
  });
  return { stop: () => sub.unsubscribe() };
}
