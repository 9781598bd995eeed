/**
 * Transcripts a reset ended go into memory (the agent-runner's "consolidate" run command,
 * services/agent-runner/consolidate-ended.ts): after /new and /reset, and after a daily or idle
 * reset that the router's own `sessions.ensure` made (a command, a directive, a system inject).
 * With memory.enabled only; the agent-runner skips shared sessions. The run is stored straight in
 * RUNS (no lane: it reads only the closed transcript), deduplicated by its run id.
 */
import { envelope, runIdFor, runRequestSchema, type SessionEntry, type SessionType } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";

export interface SessionRef {
  sessionKey: string;
  agentId: string;
  sessionType: SessionType;
}

/** Stores the consolidation run of `previousSessionId`; never throws (logged). */
export async function queueConsolidation(rt: ActorRuntime, session: SessionRef, previousSessionId: string): Promise<void> {
  if (!rt.config.memory.enabled) return;
  const id = `consolidate-${previousSessionId}`;
  try {
    const request = runRequestSchema.parse(envelope("lurk.run.request.v1", {
      runId: runIdFor("router", id), sessionKey: session.sessionKey, agentId: session.agentId, sessionType: session.sessionType,
      trigger: "system" as const, causationId: id,
      inputs: [{ kind: "system_event" as const, text: "consolidate the ended session into memory", attachments: [] }],
      deliver: false, options: { command: "consolidate" as const, previousSessionId },
    }));
    await rt.js.publish(rt.subjects.runRequest(session.agentId), JSON.stringify(request), { msgID: request.runId });
  } catch (err) {
    rt.log.warn({ err, sessionKey: session.sessionKey }, "could not queue the ended session's memory consolidation");
  }
}

/** `sessions.ensure`, and the consolidation of the transcript a daily or idle reset ended meanwhile. */
export async function ensureSession(rt: ActorRuntime, session: SessionRef): Promise<SessionEntry> {
  const { session: entry, reset } = await rt.client.call("sessions", "ensure", { sessionKey: session.sessionKey, agentId: session.agentId, sessionType: session.sessionType });
  if (reset) await queueConsolidation(rt, session, reset.previousSessionId);
  return entry;
}
