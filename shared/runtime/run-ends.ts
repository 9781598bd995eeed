/**
 * The terminal run events (`lurk.run.evt.<runId>.done|error`) for actors that follow runs they
 * started or dispatched (router, heartbeat, cron, subagents). The run id and the kind come from
 * the subject, so a handler can drop other runs' ends without parsing them; `read()` parses the
 * payload (capped, validated, its runId checked against the subject) and returns undefined for a
 * malformed one, after logging it.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { runEventSchema, safeParseJson, type RunEvent, type SafeParseLimits, type Subjects } from "../contract/index.js";
import type { Logger } from "./logger.js";

export type TerminalRunEvent = Extract<RunEvent["event"], { kind: "done" | "error" }>;

export type RunEndHandler = (runId: string, kind: "done" | "error", read: () => TerminalRunEvent | undefined) => void;

export function subscribeRunEnds(nc: NatsConnection, subjects: Subjects, limits: SafeParseLimits, log: Logger, handler: RunEndHandler): { stop(): void } {
  const runIdIndex = subjects.prefix.split(".").length + 2;
  const subs = subjects.runTerminalAll.map((subject) => nc.subscribe(subject, {
    callback: (_err, msg) => {
      const runId = msg.subject.split(".")[runIdIndex];
      if (!runId) return;
      const kind = msg.subject.endsWith(".done") ? "done" : "error";
      const read = (): TerminalRunEvent | undefined => {
        let event: RunEvent["event"] | undefined;
        try {
          const parsed = runEventSchema.safeParse(safeParseJson(msg.data, limits));
          if (parsed.success && parsed.data.runId === runId) event = parsed.data.event;
        } catch {
          // not JSON, too large or too deep: malformed
        }
        if (event?.kind === "done" || event?.kind === "error") return event;
        log.warn({ runId, subject: msg.subject }, "malformed terminal run event");
        return undefined;
      };
      try {
        handler(runId, kind, read);
      } catch (err) {
        log.warn({ err, runId }, "a terminal run event could not be handled");
      }
    },
  }));
  return { stop: () => subs.forEach((s) => s.unsubscribe()) };
}
