/**
 * The usage ledger's retention (`sessions.usage.retentionDays`): the writing instance removes the
 * days before the window at start, when it becomes the active one, and every hour. The prune is a
 * write like any other (replicated as a `pruneUsage` change set); standbys never prune on their own.
 */
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { SessionStore } from "./store.js";

const EVERY_MS = 60 * 60_000;

export interface UsagePrune {
  /** prunes now (when this instance writes) */
  run(): void;
  stop(): void;
}

export function startUsagePrune(rt: ActorRuntime, store: SessionStore, writes: () => boolean): UsagePrune {
  const retentionDays = rt.config.sessions.usage.retentionDays;
  const run = () => {
    if (!writes()) return;
    try {
      const removed = store.pruneUsage(retentionDays);
      if (removed > 0) rt.log.info({ removed, retentionDays }, "sessions: usage ledger days past sessions.usage.retentionDays pruned");
    } catch (err) {
      rt.log.warn({ err }, "sessions: pruning the usage ledger failed; the next hourly prune retries");
    }
  };
  const timer = setInterval(run, EVERY_MS);
  timer.unref();
  return { run, stop: () => clearInterval(timer) };
}
