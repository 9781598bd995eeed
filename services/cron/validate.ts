/**
 * The seeds' validation rules of a job (001 §3.8 `_validate_job`) and the checks a schema
 * cannot make (time zone, cron expression, agent, delivery target, an `at` in the past).
 * Every failure is a LurkError VALIDATION_FAILED whose message says what to change.
 */
import { LurkError, type CronJob } from "../../shared/contract/index.js";
import { cronPattern } from "./schedule.js";
import { isValidTimeZone } from "../../shared/runtime/time-zone.js";

export type CronJobSpec = Pick<CronJob, "name" | "agentId" | "enabled" | "deleteAfterRun" | "schedule" | "sessionTarget" | "wakeMode" | "payload" | "isolation"> & { description?: string | undefined };

export interface ValidationContext {
  nowMs: number;
  /** the configured agent ids */
  agentIds: readonly string[];
  /** check that an `at` time is not in the past (new jobs and changed schedules) */
  checkAtInPast: boolean;
}

/** An `at` time this far in the past is still accepted (and fires at once). */
export const AT_PAST_GRACE_MS = 60_000;

const fail = (message: string): never => {
  throw new LurkError("VALIDATION_FAILED", message);
};


/** Throws VALIDATION_FAILED for the first broken rule. */
export function validateJob(job: CronJobSpec, ctx: ValidationContext): void {
  if (job.sessionTarget === "main" && job.payload.kind !== "systemEvent") {
    fail(`sessionTarget "main" takes a systemEvent payload only (a text injected into the agent's main session); an agentTurn needs sessionTarget "isolated"`);
  }
  if (job.sessionTarget === "isolated" && job.payload.kind !== "agentTurn") {
    fail(`sessionTarget "isolated" takes an agentTurn payload only (a run in its own cron session); a systemEvent needs sessionTarget "main"`);
  }
  if (job.isolation && job.sessionTarget !== "isolated") {
    fail(`isolation (posting a run's reply into the main session) is for sessionTarget "isolated" jobs; a main-session job already runs there`);
  }
  if (!ctx.agentIds.includes(job.agentId)) {
    fail(`no agent "${job.agentId}" is configured (agents: ${ctx.agentIds.join(", ")})`);
  }
  validateSchedule(job.schedule, ctx);
  if (job.payload.kind === "agentTurn") {
    const p = job.payload;
    if (p.to !== undefined && p.channel === "last") fail(`payload.to ("${p.to}") needs payload.channel: name the channel of that conversation, e.g. telegram`);
    if (p.channel !== "last" && p.to === undefined) fail(`payload.channel "${p.channel}" needs payload.to: the conversation to deliver to (e.g. a chat id)`);
    if (!p.deliver && (p.to !== undefined || p.channel !== "last")) fail("payload.deliver is false but a delivery target is set: drop the target or set deliver true");
  }
}

export function validateSchedule(schedule: CronJob["schedule"], ctx: Pick<ValidationContext, "nowMs" | "checkAtInPast">): void {
  switch (schedule.kind) {
    case "at":
      if (ctx.checkAtInPast && schedule.atMs < ctx.nowMs - AT_PAST_GRACE_MS) {
        fail(`the at time ${new Date(schedule.atMs).toISOString()} is in the past; choose a future time`);
      }
      return;
    case "every":
      if (schedule.everyMs > 366 * 86_400_000) fail("an every interval longer than a year is not supported; use an at or cron schedule");
      return;
    case "cron": {
      if (!isValidTimeZone(schedule.tz)) fail(`unknown time zone "${schedule.tz}"; use an IANA name such as UTC or Europe/Berlin`);
      let next: Date | null;
      try {
        next = cronPattern(schedule.expr, schedule.tz).nextRun(new Date(ctx.nowMs));
      } catch (err) {
        return fail(`the cron expression "${schedule.expr}" is invalid (${(err as Error).message}); use 5 fields "min hour day month weekday", e.g. "0 9 * * 1-5"`);
      }
      if (!next) fail(`the cron expression "${schedule.expr}" never matches a future time`);
      return;
    }
  }
}
