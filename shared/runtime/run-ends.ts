/**
 * The terminal run events (`lurk.run.evt.<runId>.done|error`) for actors that follow runs they
 * started or dispatched (router, heartbeat, cron, subagents). The run id and the kind come from
 * the subject, so a handler can drop other runs' ends without parsing them; `read()` parses the
 * payload (capped, validated, its runId checked against the subject) and returns undefined for a
 * malformed one, after logging it. An actor that missed the event reads the same end from the
 * run's transcript (`sessions.run`) with `runEndFromRecords`.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import {
  addUsage, assistantText, attachmentSchema, emptyUsage, runEventSchema, type Attachment, safeParseJson, type RunEvent, type SafeParseLimits, type Subjects, type TranscriptRecord, type Usage, usageSchema,
} from "../contract/index.js";
import type { Logger } from "./logger.js";

export type TerminalRunEvent = Extract<RunEvent["event"], { kind: "done" | "error" }>;

export type RunEndHandler = (runId: string, kind: "done" | "error", read: () => TerminalRunEvent | undefined) => void;

/**
 * Follows run events on `subjectList` (each `lurk.run.evt.<runId>.<kind>`-shaped): the handler
 * gets the run id from the subject and `read()`, which parses the payload (capped, validated, its
 * runId checked against the subject) and returns the event when `accept` takes it, else logs
 * "malformed <what>" and returns undefined. A throwing handler is logged; the subscription goes on.
 */
export function followRunEvents<E>(
  nc: NatsConnection, subjects: Subjects, subjectList: readonly string[], limits: SafeParseLimits, log: Logger, what: string,
  accept: (event: RunEvent) => E | undefined, handler: (runId: string, subject: string, read: () => E | undefined) => void,
): { stop(): void } {
  const runIdIndex = subjects.prefix.split(".").length + 2;
  const subs = subjectList.map((subject) => nc.subscribe(subject, {
    callback: (_err, msg) => {
      const runId = msg.subject.split(".")[runIdIndex];
      if (!runId) return;
      const read = (): E | undefined => {
        let accepted: E | undefined;
        try {
          const parsed = runEventSchema.safeParse(safeParseJson(msg.data, limits));
          if (parsed.success && parsed.data.runId === runId) accepted = accept(parsed.data);
        } catch {
          // not JSON, too large or too deep: malformed
        }
        if (accepted === undefined) log.warn({ runId, subject: msg.subject }, `malformed ${what}`);
        return accepted;
      };
      try {
        handler(runId, msg.subject, read);
      } catch (err) {
        log.warn({ err, runId }, `a ${what} could not be handled`);
      }
    },
  }));
  return { stop: () => subs.forEach((s) => s.unsubscribe()) };
}

export function subscribeRunEnds(nc: NatsConnection, subjects: Subjects, limits: SafeParseLimits, log: Logger, handler: RunEndHandler): { stop(): void } {
  return followRunEvents(nc, subjects, subjects.runTerminalAll, limits, log, "terminal run event",
    ({ event }) => (event.kind === "done" || event.kind === "error" ? event : undefined),
    (runId, subject, read) => handler(runId, subject.endsWith(".done") ? "done" : "error", read));
}

/** A run's end as its transcript records hold it (the records `sessions.run` returns). */
export interface RecordedRunEnd {
  status: "done" | "error" | "aborted";
  /** the end marker's text: the reply, or the error message */
  text: string | undefined;
  errorCode: string | undefined;
  silent: boolean;
  /** what the run spent: its end marker's `meta.usage` (the whole run's), else the sum its assistant messages among the records carry */
  usage: Usage;
  /** the text of the run's last assistant message that has any */
  lastAssistantText: string;
  /** the attachments the end marker kept (a voice reply's audio), validated; [] when none */
  attachments: Attachment[];
}

/** The run's terminal end marker (the last one, as the sessions actor's run status) read with its usage; null while there is none. */
export function runEndFromRecords(records: readonly TranscriptRecord[]): RecordedRunEnd | null {
  const marker = records.findLast((r) => r.kind === "run_marker" && r.runStatus !== undefined && r.runStatus !== "started");
  if (!marker) return null;
  let usage = emptyUsage();
  let lastAssistantText = "";
  for (const r of records) {
    const m = r.message;
    if (m?.role !== "assistant") continue;
    if (m.usage) usage = addUsage(usage, m.usage);
    const text = assistantText(m);
    if (text.trim()) lastAssistantText = text;
  }
  // the marker's total holds when `sessions.run` left the run's oldest records out (truncated)
  const total = usageSchema.safeParse(marker.meta?.usage);
  if (total.success && marker.meta?.usage !== undefined) usage = total.data;
  const errorCode = typeof marker.meta?.errorCode === "string" ? marker.meta.errorCode : undefined;
  const attachments = attachmentSchema.array().max(32).safeParse(marker.meta?.attachments ?? []);
  return { status: marker.runStatus as RecordedRunEnd["status"], text: marker.text, errorCode, silent: marker.meta?.silent === true, usage, lastAssistantText, attachments: attachments.success ? attachments.data : [] };
}
