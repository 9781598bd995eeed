/**
 * When a job runs next: pure functions of the schedule and explicit times (no clock inside).
 *   at     once at `atMs`
 *   every  at anchor + k * everyMs (k >= 0); the anchor defaults to the job's creation time, so
 *          a restart or a late fire never shifts the grid
 *   cron   the next match of a cron expression (croner: 5 fields, or 6 with seconds) in an IANA
 *          time zone; DST gaps run at the first valid time after, repeated times run once
 * Catch-up rule: a job whose nextRunAtMs lies in the past fires ONCE (for that slot) and its next
 * run is computed from now, so any number of missed slots collapse into one fire.
 */
import { Cron } from "croner";
import type { CronJob } from "../../shared/contract/index.js";

export type Schedule = CronJob["schedule"];

/**
 * A croner job for the expression (never started); throws croner's error on a bad one.
 * Not cached: a used croner job holds ~80 KB, and parsing costs about what one nextRun costs
 * (test/bench/cron.ts measured both), so a cache would trade much memory for little time.
 */
export function cronPattern(expr: string, tz: string): Cron {
  return new Cron(expr, { timezone: tz, paused: true, mode: "5-or-6-parts" });
}

/**
 * The first run strictly after `afterMs`, or undefined when there is none.
 * `createdAtMs` is the default anchor of an `every` schedule.
 */
export function nextRunAfter(schedule: Schedule, afterMs: number, createdAtMs: number): number | undefined {
  switch (schedule.kind) {
    case "at":
      return schedule.atMs > afterMs ? schedule.atMs : undefined;
    case "every": {
      const anchor = schedule.anchorMs ?? createdAtMs;
      if (afterMs < anchor) return anchor;
      const k = Math.floor((afterMs - anchor) / schedule.everyMs) + 1;
      return anchor + k * schedule.everyMs;
    }
    case "cron": {
      const next = cronPattern(schedule.expr, schedule.tz).nextRun(new Date(afterMs));
      return next ? next.getTime() : undefined;
    }
  }
}

/**
 * The first run of a new (or re-enabled, or rescheduled) job at `nowMs`: an `at` job keeps its
 * time even when it is a moment ago (it fires at once); the others take their next slot after
 * now (an explicit `every` anchor exactly now counts).
 */
export function firstRun(schedule: Schedule, nowMs: number, createdAtMs: number): number | undefined {
  if (schedule.kind === "at") return schedule.atMs;
  // an explicit `every` anchor exactly now fires now; the default anchor (creation) one interval later
  if (schedule.kind === "every" && schedule.anchorMs !== undefined) return nextRunAfter(schedule, nowMs - 1, createdAtMs);
  return nextRunAfter(schedule, nowMs, createdAtMs);
}

export interface DuePlan {
  /** the slot that fires now (its time is part of the fire id) */
  scheduledAtMs: number;
  /** the next slot after now; undefined when the job is done (`at`) */
  nextRunAtMs: number | undefined;
}

/** One fire for a due job, however many slots it missed; null when it is not due. */
export function planDue(job: Pick<CronJob, "enabled" | "schedule" | "createdAtMs" | "state">, nowMs: number): DuePlan | null {
  const due = job.state.nextRunAtMs;
  if (!job.enabled || due === undefined || due > nowMs) return null;
  return { scheduledAtMs: due, nextRunAtMs: job.schedule.kind === "at" ? undefined : nextRunAfter(job.schedule, nowMs, job.createdAtMs) };
}

/** The fire id (and `Nats-Msg-Id` of the inject or run request): one per job and slot. */
export function fireIdFor(jobId: string, scheduledAtMs: number): string {
  return `${jobId}:${scheduledAtMs}`;
}
