/**
 * Creating and changing jobs: ids, defaults, validation (validate.ts) and the first or new
 * next run (schedule.ts). Pure apart from the random id; the actor stores the result.
 */
import { randomBytes } from "node:crypto";
import type { CronJob } from "../../shared/contract/index.js";
import { firstRun } from "./schedule.js";
import { validateJob, type CronJobSpec } from "./validate.js";

export const newJobId = () => `cron_${randomBytes(4).toString("hex")}`;

export function createJob(spec: CronJobSpec, id: string, nowMs: number, agentIds: readonly string[]): CronJob {
  validateJob(spec, { nowMs, agentIds, checkAtInPast: true });
  const next = spec.enabled ? firstRun(spec.schedule, nowMs, nowMs) : undefined;
  return {
    id,
    name: spec.name,
    ...(spec.description !== undefined ? { description: spec.description } : {}),
    agentId: spec.agentId,
    enabled: spec.enabled,
    deleteAfterRun: spec.deleteAfterRun,
    schedule: spec.schedule,
    sessionTarget: spec.sessionTarget,
    wakeMode: spec.wakeMode,
    payload: spec.payload,
    ...(spec.isolation ? { isolation: spec.isolation } : {}),
    createdAtMs: nowMs,
    updatedAtMs: nowMs,
    state: next !== undefined ? { nextRunAtMs: next } : {},
  };
}

/**
 * The job after a patch. A new schedule or a re-enable plans the next run from now; a disable
 * drops it. The state of a run under way is kept.
 */
export function applyPatch(job: CronJob, patch: Partial<CronJobSpec>, nowMs: number, agentIds: readonly string[]): CronJob {
  const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as Partial<CronJobSpec>;
  const merged: CronJob = { ...job, ...defined, updatedAtMs: nowMs };
  const scheduleChanged = defined.schedule !== undefined && JSON.stringify(defined.schedule) !== JSON.stringify(job.schedule);
  validateJob(merged, { nowMs, agentIds, checkAtInPast: scheduleChanged });
  const state = { ...job.state };
  if (!merged.enabled) {
    delete state.nextRunAtMs;
  } else if (scheduleChanged || !job.enabled || state.nextRunAtMs === undefined && merged.schedule.kind !== "at") {
    // an `at` job that already ran stays done unless it gets a new time
    const spent = merged.schedule.kind === "at" && !scheduleChanged && state.lastRunAtMs !== undefined;
    const next = spent ? undefined : firstRun(merged.schedule, nowMs, merged.createdAtMs);
    if (next === undefined) delete state.nextRunAtMs;
    else state.nextRunAtMs = next;
  }
  return { ...merged, state };
}
