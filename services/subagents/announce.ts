/**
 * The announce of a finished child (seed 001 §3.6, MoltBot's runSubagentAnnounceFlow): a
 * system event for the requester's session with the child's findings and a stats line, asking
 * the requester's agent to tell the user. It goes to `lurk.inject.<agentId>` (stream INBOUND)
 * with `Nats-Msg-Id` = `announce:<childRunId>`, so a repeated publish lands once; the router
 * starts a run on it in the requester's session and delivers the reply to the session's last
 * origin.
 */
import {
  envelope, parseSessionKey, systemInjectSchema, type SubagentRecord,
} from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { ChildRecord } from "./store.js";

const STATUS_LABEL: Record<NonNullable<SubagentRecord["outcome"]>, string> = {
  ok: "completed",
  error: "failed",
  timeout: "timed out",
  unknown: "ended",
};
const MAX_FINDINGS_CHARS = 100_000;

export const announceId = (childRunId: string) => `announce:${childRunId}`;

/** `[Stats: status=completed | duration=12.3s | tokens in=1200 out=340]` */
export function statsLine(record: Pick<ChildRecord, "startedAt" | "endedAt" | "usage" | "outcome">, now = Date.now()): string {
  const seconds = ((record.endedAt ?? now) - record.startedAt) / 1000;
  const parts = [
    `status=${STATUS_LABEL[record.outcome ?? "unknown"]}`,
    `duration=${seconds.toFixed(1)}s`,
    `tokens in=${record.usage?.input ?? 0} out=${record.usage?.output ?? 0}`,
  ];
  return `[Stats: ${parts.join(" | ")}]`;
}

export function announceText(record: ChildRecord): string {
  const task = record.task.length > 50 ? `${record.task.slice(0, 50)}...` : record.task;
  const label = record.label ? ` (${record.label})` : "";
  let findings = record.reply?.trim() || "(no output)";
  if (findings.length > MAX_FINDINGS_CHARS) findings = `${findings.slice(0, MAX_FINDINGS_CHARS)}\n[findings truncated; the whole reply is in session ${record.childSessionKey}]`;
  return [
    `A background task "${task}"${label} just ${STATUS_LABEL[record.outcome ?? "unknown"]}.`,
    "",
    "Findings:",
    findings,
    "",
    statsLine(record),
    "",
    "Summarize this naturally for the user. Keep it brief (1-2 sentences).",
  ].join("\n");
}

/** Publishes the announce (JetStream, deduplicated by id); throws when the stream did not take it. */
export async function publishAnnounce(rt: ActorRuntime, record: ChildRecord): Promise<void> {
  const agentId = parseSessionKey(record.requesterSessionKey)?.agentId ?? record.agentId;
  const id = announceId(record.runId);
  const inject = systemInjectSchema.parse(envelope("lurk.inject.v1", {
    id,
    sessionKey: record.requesterSessionKey,
    causationId: record.runId,
    agentId,
    source: "subagent" as const,
    text: announceText(record),
    wake: "now" as const,
    trigger: "announce" as const,
    deliverTo: "last" as const,
  }));
  await rt.js.publish(rt.subjects.inject(agentId), JSON.stringify(inject), { msgID: id });
}
