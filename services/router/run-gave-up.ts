/**
 * Run requests that gave up: the agent-runners' RUNS consumer dead-letters a request whose handler
 * failed on its last delivery (`bus.maxDeliver`), or failed permanently, publishing the request as
 * it was to `lurk.dlq.LURK_RUNS.<consumer>` (shared/runtime/consumer.ts). No runner will take it
 * again, and it may never have recorded its end: the router frees its lane (term.ts `runGaveUp`).
 * Core subscription to the dead-letter subject (the stream keeps a copy for operators); a malformed
 * payload is logged and ignored.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { CONSUMERS, runRequestSchema, safeParseJson, STREAMS, type SafeParseLimits, type Subjects } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";

export type RunGaveUpHandler = (runId: string, sessionKey: string, error: string) => void;

export function subscribeRunsGivenUp(nc: NatsConnection, subjects: Subjects, limits: SafeParseLimits, log: Logger, handler: RunGaveUpHandler): { stop(): void } {
  const sub = nc.subscribe(subjects.deadLetter(STREAMS.runs, CONSUMERS.agentRunner), {
    callback: (_err, msg) => {
      let parsed;
      try {
        parsed = runRequestSchema.safeParse(safeParseJson(msg.data, limits));
      } catch {
        // not JSON, too large or too deep
      }
      if (!parsed?.success) return log.warn({ subject: msg.subject }, "malformed dead-lettered run request");
      try {
        handler(parsed.data.runId, parsed.data.sessionKey, msg.headers?.get("Lurk-Dlq-Error") ?? "");
      } catch (err) {
        log.warn({ err, runId: parsed.data.runId }, "a dead-lettered run request could not be handled");
      }
    },
  });
  return { stop: () => sub.unsubscribe() };
}
