/**
 * A transcript a reset ended goes into memory: after /new and /reset (the router's "consolidate"
 * run command, with `options.previousSessionId`), and after a daily or idle reset that a run's
 * `sessions.begin` made (the run goes on meanwhile). The ended transcript goes into MEMORY.md and HISTORY.md, every message
 * since its last consolidation (consolidation.ts, the final plan), through the housekeeping model
 * chain (`compaction.model` first when set, then the agent's models). Only with memory.enabled and
 * for private sessions (main, dm); nothing is delivered and no marker is appended (the transcript
 * is closed): a redelivered command finds its HISTORY.md entry tagged and appends nothing again.
 * The model call's usage is booked to the session (purpose `consolidation`, usage-booking.ts).
 * Never throws: a failure is logged, the session has started afresh anyway.
 */
import type { RunRequest } from "../../shared/contract/index.js";
import { agentWorkspace, defaultAgent } from "../../shared/runtime/config.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { readHistory } from "../../shared/runtime/session-history.js";
import { consolidate, CONSOLIDATION_SESSION_TYPES, type ConsolidationResult } from "./consolidation.js";
import { ModelChain } from "./failover.js";
import { housekeepingComplete } from "./model-complete.js";
import type { RunnerDeps } from "./run.js";
import { booked, usageBooker } from "./usage-booking.js";

export async function consolidateEnded(deps: RunnerDeps, req: Pick<RunRequest, "sessionKey" | "agentId" | "sessionType">, previous: string | undefined, log: Logger): Promise<ConsolidationResult | "skipped" | "failed"> {
  const { rt } = deps;
  if (!rt.config.memory.enabled || !previous || !CONSOLIDATION_SESSION_TYPES.has(req.sessionType)) return "skipped";
  const agent = rt.config.agents.find((a) => a.id === req.agentId) ?? defaultAgent(rt.config);
  const ref = deps.registry.pick(undefined, agent.model);
  if (!ref) return "skipped";
  try {
    const base = { registry: deps.registry, config: rt.config, log, ...(deps.authState ? { store: deps.authState } : {}) };
    const complete = housekeepingComplete(base, new ModelChain({ ...base, refs: [ref, ...agent.fallbacks], sessionKey: req.sessionKey }), req.sessionKey, log);
    const { records } = await readHistory(rt.client, { sessionKey: req.sessionKey, sessionId: previous, limit: rt.config.runs.historyLimit });
    const result = await consolidate({
      workspace: agentWorkspace(rt.config, agent), window: rt.config.memory.window, records, final: true, log,
      complete: booked(complete(rt.signal), usageBooker({ client: rt.client, signal: rt.signal, log }), { sessionKey: req.sessionKey, agentId: req.agentId }, "consolidation"),
      append: async () => undefined,
    });
    log.info({ previousSessionId: previous, result }, "the ended session's memory consolidation finished");
    return result;
  } catch (err) {
    log.warn({ err, previousSessionId: previous }, "could not consolidate the ended session into memory");
    return "failed";
  }
}
