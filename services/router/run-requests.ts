/**
 * Every run request stored in RUNS (`lurk.run.req.<agentId>`, seen as core NATS messages): a run
 * another actor stored (a subagent's child run, a cron agentTurn) holds its session's lane from
 * its storing, not only from its start (run-starts.ts), so a wake-now message in the moment before
 * a runner picks it up waits too (term.ts `runStored`). The router's own requests are recognised
 * by their `Nats-Msg-Id` (the run id) without a parse; memory consolidations (`command:
 * "consolidate"`: no events, no lane) are ignored; a malformed request is logged and ignored.
 * Subscribed from a takeover (before RUNS is read) until the term ends (actor.ts): a standby is
 * not sent every request. A request seen here that RUNS did not store (a failed publish, a duplicate of a run that never began) has no
 * run to end it: the status check frees it once RUNS does not hold it past the idle time
 * (term.ts `check`, stored-runs.ts).
 */
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { runRequestSchema, safeParseJson, type SafeParseLimits, type Subjects } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";

export interface RunRequestWatch {
  /** the run holds (or waits at) a lane already: nothing to parse */
  known(runId: string): boolean;
  stored(runId: string, sessionKey: string): void;
}

export function subscribeRunRequests(nc: NatsConnection, subjects: Subjects, limits: SafeParseLimits, log: Logger, watch: RunRequestWatch): { stop(): void } {
  const sub = nc.subscribe(subjects.runRequestAll, {
    callback: (err, msg: Msg) => {
      if (err) return log.warn({ err }, "run request subscription failed");
      const msgId = msg.headers?.get("Nats-Msg-Id");
      if (msgId && watch.known(msgId)) return;
      try {
        const parsed = runRequestSchema.safeParse(safeParseJson(msg.data, limits));
        if (!parsed.success) return log.debug({ subject: msg.subject }, "malformed run request seen; ignored");
        const req = parsed.data;
        if (req.options.command === "consolidate" || watch.known(req.runId)) return;
        watch.stored(req.runId, req.sessionKey);
      } catch (e) {
        log.debug({ err: e, subject: msg.subject }, "unreadable run request seen; ignored");
      }
    },
  });
  return { stop: () => sub.unsubscribe() };
}
