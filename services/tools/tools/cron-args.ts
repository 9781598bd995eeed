/**
 * The `cron` tool's arguments and what they become: a job's schedule, its delivery, the patch of
 * `update` (only what the call names; the same rules as `add`), and the one-line job summary.
 * Every mistake is TOOL_INVALID_ARGS saying what to give instead.
 */
import { z } from "zod";
import { CHANNELS, LurkError, thinkLevelSchema, type CronJob, type RequestOf } from "../../../shared/contract/index.js";
import { describeSchedule, parseDuration } from "../../../shared/runtime/cron-text.js";

export const cronParameters = z.object({
  action: z.enum(["add", "list", "update", "rm", "run", "runs", "status", "wake"])
    .describe("add a job, list jobs, update one (only the fields you give change), rm (remove) or run one now, runs: the run log, status: the scheduler and your jobs, wake: a system event to your main session now or at the next heartbeat"),
  name: z.string().min(1).max(200).optional().describe("add/update: a short name"),
  every: z.string().max(40).optional().describe("add/update: repeat interval, e.g. 30m, 1h, 1d"),
  cron: z.string().max(200).optional().describe("add/update: cron expression (5 fields), e.g. '0 9 * * 1-5'"),
  tz: z.string().max(100).optional().describe("add/update: IANA time zone of the cron expression (default UTC), e.g. Europe/Berlin"),
  at: z.string().max(60).optional().describe("add/update: run once, at an ISO 8601 time with offset (2026-12-01T09:00:00+01:00) or +DURATION from now (+20m)"),
  message: z.string().min(1).max(20_000).optional().describe("add/update: the task for the agent turn, or the note text with systemEvent; wake: the event's text"),
  systemEvent: z.boolean().optional().describe("add/update: inject the message as a note into the main session instead of running an agent turn"),
  wake: z.enum(["now", "next-heartbeat"]).optional().describe("add/update with systemEvent: start a run at once (now) or let the next heartbeat see it (default); wake: the same for the event (default next-heartbeat)"),
  model: z.string().max(200).optional().describe("add/update: the model of the agent turn"),
  thinking: thinkLevelSchema.optional().describe("add/update: thinking level of the agent turn"),
  deliver: z.string().max(240).optional().describe("add/update: where the agent turn's reply goes: here (default), last, none, or CHANNEL:TO"),
  deleteAfterRun: z.boolean().optional().describe("add/update: remove the job after its first successful run"),
  enabled: z.boolean().optional().describe("update: false pauses the job (it keeps its definition), true resumes it"),
  jobId: z.string().min(1).max(200).optional().describe("update, rm, run, runs: the job id (from list)"),
  limit: z.number().int().min(1).max(100).optional().describe("list/runs: how many at most (default 20)"),
});
export type CronArgs = z.output<typeof cronParameters>;
export type CronPatch = RequestOf<"cron", "edit">["patch"];
type Origin = { channel: string; conversation: string } | undefined;
type AgentTurn = Extract<CronJob["payload"], { kind: "agentTurn" }>;

export const invalid = (message: string) => new LurkError("TOOL_INVALID_ARGS", message);
export const when = (ms: number | undefined) => (ms === undefined ? "none" : new Date(ms).toISOString());

const SCHEDULE_KEYS = ["every", "cron", "at"] as const;

export function scheduleOf(args: CronArgs, now: number): CronJob["schedule"] {
  const given = SCHEDULE_KEYS.filter((k) => args[k] !== undefined);
  if (given.length !== 1) throw invalid(`give exactly one schedule: every, cron or at (got ${given.length ? given.join(" and ") : "none"})`);
  if (args.every !== undefined) {
    const everyMs = parseDuration(args.every);
    if (everyMs === undefined || everyMs < 1000) throw invalid(`every "${args.every}" is not a duration of at least 1s (e.g. 30m, 1h, 1d)`);
    return { kind: "every", everyMs };
  }
  if (args.cron !== undefined) return { kind: "cron", expr: args.cron, tz: args.tz ?? "UTC" };
  const at = args.at!;
  const rel = at.startsWith("+") ? parseDuration(at.slice(1)) : undefined;
  const atMs = rel !== undefined ? now + rel : /[zZ]|[+-]\d\d:?\d\d$/.test(at) ? Date.parse(at) : NaN;
  if (Number.isNaN(atMs)) throw invalid(`at "${at}" is not an ISO 8601 time with an offset (2026-12-01T09:00:00Z) or +DURATION (+20m)`);
  return { kind: "at", atMs };
}

export function deliveryOf(spec: string | undefined, origin: Origin) {
  if (spec === undefined || spec === "here") {
    if (origin) return { deliver: true, channel: origin.channel as (typeof CHANNELS)[number], to: origin.conversation };
    return { deliver: true, channel: "last" as const, bestEffortDeliver: true };
  }
  if (spec === "last") return { deliver: true, channel: "last" as const };
  if (spec === "none") return { deliver: false, channel: "last" as const };
  const [channel, ...rest] = spec.split(":");
  if (!CHANNELS.includes(channel as never) || rest.length === 0) throw invalid(`deliver "${spec}": use here, last, none or CHANNEL:TO (channels: ${CHANNELS.join(", ")})`);
  return { deliver: true, channel: channel as (typeof CHANNELS)[number], to: rest.join(":") };
}

/**
 * The patch `update` sends for `job`: only what the call names. A schedule replaces the old one
 * (tz alone changes a cron job's zone); message, model, thinking and deliver change the payload
 * in place; systemEvent true/false turns the job into a note for the main session or an agent
 * turn (with its target and wake mode). The agent stays the job's (never patched).
 */
export function patchOf(args: CronArgs, job: CronJob, origin: Origin, now: number): CronPatch {
  const patch: CronPatch = {};
  if (args.name !== undefined) patch.name = args.name;
  if (args.enabled !== undefined) patch.enabled = args.enabled;
  if (args.deleteAfterRun !== undefined) patch.deleteAfterRun = args.deleteAfterRun;
  if (SCHEDULE_KEYS.some((k) => args[k] !== undefined)) {
    patch.schedule = scheduleOf({ ...args, tz: args.tz ?? (job.schedule.kind === "cron" ? job.schedule.tz : undefined) }, now);
  } else if (args.tz !== undefined) {
    if (job.schedule.kind !== "cron") throw invalid(`tz is the time zone of a cron expression; job ${job.id} runs ${describeSchedule(job.schedule)}`);
    patch.schedule = { ...job.schedule, tz: args.tz };
  }
  const wasEvent = job.payload.kind === "systemEvent";
  const toEvent = args.systemEvent ?? wasEvent;
  if (toEvent) {
    const turnOnly = (["model", "thinking", "deliver"] as const).filter((k) => args[k] !== undefined);
    if (turnOnly.length > 0) throw invalid(`${turnOnly.join(", ")}: only for agent-turn jobs; job ${job.id} is a systemEvent note (give systemEvent false to make it an agent turn)`);
    if (!wasEvent || args.message !== undefined) {
      patch.payload = { kind: "systemEvent", text: args.message ?? (job.payload as AgentTurn).message };
    }
    if (!wasEvent) patch.sessionTarget = "main";
    if (args.wake !== undefined || !wasEvent) patch.wakeMode = args.wake ?? "next-heartbeat";
  } else {
    if (args.wake !== undefined) throw invalid(`wake is for systemEvent jobs; job ${job.id} ${wasEvent ? "would become" : "is"} an agent turn, which always starts a run`);
    const base: AgentTurn = job.payload.kind === "agentTurn"
      ? job.payload
      : { kind: "agentTurn", message: job.payload.text, timeoutSeconds: 3600, ...deliveryOf(undefined, origin), bestEffortDeliver: origin === undefined };
    if (wasEvent || args.message !== undefined || args.model !== undefined || args.thinking !== undefined || args.deliver !== undefined) {
      const { deliver: _d, channel: _c, to: _t, bestEffortDeliver: _b, ...rest } = base;
      const delivery = args.deliver !== undefined ? { bestEffortDeliver: false, ...deliveryOf(args.deliver, origin) } : { deliver: base.deliver, channel: base.channel, bestEffortDeliver: base.bestEffortDeliver, ...(base.to !== undefined ? { to: base.to } : {}) };
      patch.payload = {
        ...rest, ...delivery,
        ...(args.message !== undefined ? { message: args.message } : {}),
        ...(args.model !== undefined ? { model: args.model } : {}),
        ...(args.thinking !== undefined ? { thinking: args.thinking } : {}),
      };
    }
    if (wasEvent) {
      patch.sessionTarget = "isolated";
      patch.wakeMode = "now";
    }
  }
  if (Object.keys(patch).length === 0) {
    throw invalid("update needs something to change: name, every/cron/at (or tz), message, systemEvent, wake, model, thinking, deliver, deleteAfterRun or enabled");
  }
  return patch;
}

export function describeJob(j: CronJob): string {
  const last = j.state.runningAtMs !== undefined ? "running" : j.state.lastStatus ? `last ${j.state.lastStatus}${j.state.lastError ? ` (${j.state.lastError.slice(0, 120)})` : ""}` : "not run yet";
  return `${j.id}  "${j.name}"  ${describeSchedule(j.schedule)}  ${j.payload.kind}  ${j.enabled ? `next ${when(j.state.nextRunAtMs)}` : "disabled"}  ${last}`;
}
