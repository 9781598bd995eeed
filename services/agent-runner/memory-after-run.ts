/**
 * Starts a memory consolidation (consolidation.ts) after a run's reply went out, without
 * delaying the run: a cheap count on the transcript the run already has decides whether to
 * fetch the session's history and consolidate. At most one consolidation per session runs in
 * this process; failures are logged and tried again after a later run.
 */
import type { SessionType, TranscriptRecord } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { consolidate, CONSOLIDATION_SESSION_TYPES, messagesSinceConsolidation, type ConsolidationResult } from "./consolidation.js";
import type { Complete } from "./model-complete.js";

const running = new Set<string>();

export interface AfterRunInput {
  rt: ActorRuntime;
  sessionKey: string;
  sessionType: SessionType;
  workspace: string;
  /** the transcript known at the run's start */
  history: readonly TranscriptRecord[];
  /** messages the run added (at least its turns) */
  added: number;
  complete: Complete;
  log: Logger;
}

export function scheduleConsolidation(input: AfterRunInput): Promise<ConsolidationResult | "skipped" | "failed"> {
  const { rt, sessionKey, log } = input;
  const cfg = rt.config.memory;
  if (!cfg.enabled || !CONSOLIDATION_SESSION_TYPES.has(input.sessionType)) return Promise.resolve("skipped");
  if (messagesSinceConsolidation(input.history) + input.added < cfg.window || running.has(sessionKey)) return Promise.resolve("skipped");
  running.add(sessionKey);
  return (async () => {
    const { records } = await rt.client.call("sessions", "history", { sessionKey, limit: rt.config.runs.historyLimit });
    return consolidate({
      workspace: input.workspace, window: cfg.window, records, complete: input.complete, log,
      append: (marker) => rt.client.call("sessions", "append", { sessionKey, records: marker }).then(() => undefined),
    });
  })()
    .catch((err: unknown) => {
      log.warn({ err }, "memory consolidation failed; it is tried again after a later run");
      return "failed" as const;
    })
    .finally(() => running.delete(sessionKey));
}
