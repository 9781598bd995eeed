/**
 * Starts a memory consolidation (consolidation.ts) after a run's reply went out, without
 * delaying the run: a cheap count on the transcript the run already has decides whether to
 * fetch the session's history and consolidate. At most one consolidation per session runs in
 * this process. A failed or malformed consolidation is logged and tried again once the session has
 * grown by another half window of messages, twice that after each further failure in a row (at
 * most four windows), so a model that cannot answer the JSON does not cost a call after every run.
 */
import type { SessionType, TranscriptRecord } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { readHistory } from "../../shared/runtime/session-history.js";
import { consolidate, CONSOLIDATION_SESSION_TYPES, messagesSinceConsolidation, type ConsolidationResult } from "./consolidation.js";
import type { Complete } from "./model-complete.js";

const running = new Set<string>();
const MAX_TRACKED_SESSIONS = 10_000;

/** Per-session backoff after failed consolidations (see the file comment). */
export class ConsolidationBackoff {
  private readonly failed = new Map<string, { atPending: number; failures: number }>();

  /** whether a session with `pending` unconsolidated messages may try now */
  due(sessionKey: string, pending: number, window: number): boolean {
    if (pending < window) return false;
    const last = this.failed.get(sessionKey);
    if (!last) return true;
    const step = Math.min(4 * window, Math.ceil(window / 2) * 2 ** (last.failures - 1));
    return pending >= last.atPending + step;
  }

  record(sessionKey: string, pending: number, ok: boolean): void {
    const failures = this.failed.get(sessionKey)?.failures ?? 0;
    this.failed.delete(sessionKey);
    if (ok) return;
    if (this.failed.size >= MAX_TRACKED_SESSIONS) this.failed.delete(this.failed.keys().next().value!);
    this.failed.set(sessionKey, { atPending: pending, failures: failures + 1 });
  }
}

const backoff = new ConsolidationBackoff();

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
  const pending = messagesSinceConsolidation(input.history) + input.added;
  if (running.has(sessionKey) || !backoff.due(sessionKey, pending, cfg.window)) return Promise.resolve("skipped");
  running.add(sessionKey);
  return (async () => {
    const { records } = await readHistory(rt.client, { sessionKey, limit: rt.config.runs.historyLimit });
    return consolidate({
      workspace: input.workspace, window: cfg.window, records, complete: input.complete, log,
      append: (marker) => rt.client.call("sessions", "append", { sessionKey, records: marker }).then(() => undefined),
    });
  })()
    .catch((err: unknown) => {
      log.warn({ err }, "memory consolidation failed; it is tried again after the session has grown");
      return "failed" as const;
    })
    .then((result) => {
      // memory-changed is the agent editing MEMORY.md meanwhile: try again after the next run
      backoff.record(sessionKey, pending, result === "done" || result === "below-window" || result === "memory-changed");
      return result;
    })
    .finally(() => running.delete(sessionKey));
}
