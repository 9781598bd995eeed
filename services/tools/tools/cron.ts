/**
 * The `cron` tool (seeds 001 §3.4 group:automation, §3.8): the agent schedules its own jobs
 * through the cron actor (`lurk.cron.add|list|rm|run|runs`). Jobs belong to the calling agent.
 *   add   {name, every|cron(+tz)|at, message, systemEvent?, wake?, model?, thinking?, deliver?, deleteAfterRun?}
 *         without systemEvent: an agent turn in the job's own cron session, its reply delivered
 *         to this conversation (deliver "here", default), the main session's last one ("last"),
 *         CHANNEL:TO, or nowhere ("none"); with systemEvent: a note in the main session
 *   list  the agent's jobs;  rm / run {jobId};  runs {jobId?, limit?}
 * When no cron actor answers, the tool says so (UNAVAILABLE) instead of pretending.
 * The default "coding" tool profile does not include it: allow "cron" or "group:automation".
 */
import { z } from "zod";
import { CHANNELS, LurkError, parseSessionKey, type CronJob, type EndpointOp, type ReplyOf, type RequestOf } from "../../../shared/contract/index.js";
import type { ActorRuntime } from "../../../shared/runtime/actor.js";
import { describeSchedule, formatDuration, parseDuration } from "../../../shared/runtime/cron-text.js";
import { defineTool, type ToolCallInfo } from "../tool.js";
import { busOf } from "./bus.js";

const parameters = z.object({
  action: z.enum(["add", "list", "rm", "run", "runs"]).describe("add a job, list jobs, rm (remove) or run one now, runs: the run log"),
  name: z.string().min(1).max(200).optional().describe("add: a short name"),
  every: z.string().max(40).optional().describe("add: repeat interval, e.g. 30m, 1h, 1d"),
  cron: z.string().max(200).optional().describe("add: cron expression (5 fields), e.g. '0 9 * * 1-5'"),
  tz: z.string().max(100).optional().describe("add: IANA time zone of the cron expression (default UTC), e.g. Europe/Berlin"),
  at: z.string().max(60).optional().describe("add: run once, at an ISO 8601 time with offset (2026-12-01T09:00:00+01:00) or +DURATION from now (+20m)"),
  message: z.string().min(1).max(20_000).optional().describe("add: the task for the agent turn, or the note text with systemEvent"),
  systemEvent: z.boolean().optional().describe("add: inject the message as a note into the main session instead of running an agent turn"),
  wake: z.enum(["now", "next-heartbeat"]).optional().describe("add, systemEvent: start a run at once (now) or let the next heartbeat see it (default)"),
  model: z.string().max(200).optional().describe("add: the model of the agent turn"),
  thinking: z.enum(["off", "low", "medium", "high"]).optional().describe("add: thinking level of the agent turn"),
  deliver: z.string().max(240).optional().describe("add: where the agent turn's reply goes: here (default), last, none, or CHANNEL:TO"),
  deleteAfterRun: z.boolean().optional().describe("add: remove the job after its first successful run"),
  jobId: z.string().min(1).max(200).optional().describe("rm, run, runs: the job id (from list)"),
  limit: z.number().int().min(1).max(100).optional().describe("list/runs: how many at most (default 20)"),
});
type Args = z.output<typeof parameters>;

const text = (body: string) => ({ content: [{ type: "text" as const, text: body }] });
const when = (ms: number | undefined) => (ms === undefined ? "none" : new Date(ms).toISOString());
const invalid = (message: string) => new LurkError("TOOL_INVALID_ARGS", message);

/** Calls the cron actor; its absence is a clear UNAVAILABLE. */
async function cron<O extends EndpointOp<"cron">>(rt: ActorRuntime, op: O, body: RequestOf<"cron", O>): Promise<ReplyOf<"cron", O>> {
  try {
    return await rt.client.call("cron", op, body);
  } catch (err) {
    const e = LurkError.from(err);
    if (e.code === "UNAVAILABLE" || e.code === "TIMEOUT") {
      throw new LurkError("UNAVAILABLE", `the cron actor is not running (no answer on ${rt.subjects.prefix}.cron.${op}), so no job can be scheduled now; tell the user to start it (\`npx lurkbot start\` runs it)`);
    }
    throw e;
  }
}

function scheduleOf(args: Args, now: number): CronJob["schedule"] {
  const given = (["every", "cron", "at"] as const).filter((k) => args[k] !== undefined);
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

function deliveryOf(spec: string | undefined, origin: { channel: string; conversation: string } | undefined) {
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

function describeJob(j: CronJob): string {
  const last = j.state.runningAtMs !== undefined ? "running" : j.state.lastStatus ? `last ${j.state.lastStatus}${j.state.lastError ? ` (${j.state.lastError.slice(0, 120)})` : ""}` : "not run yet";
  return `${j.id}  "${j.name}"  ${describeSchedule(j.schedule)}  ${j.payload.kind}  ${j.enabled ? `next ${when(j.state.nextRunAtMs)}` : "disabled"}  ${last}`;
}

export const cronTool = defineTool({
  name: "cron",
  description: "Schedule jobs for yourself: reminders (systemEvent: a note in your main session) or agent turns that run on a schedule (every 30m, a cron expression with time zone, or once at a time) and deliver their reply. Actions: add, list, rm, run (now), runs (the log).",
  parameters,
  sideEffects: true,
  parallelSafe: false,
  groups: ["group:automation"],
  runsIn: "process",
  async execute(args, ctx) {
    const { rt, call } = busOf(ctx);
    const needId = () => {
      if (!args.jobId) throw invalid(`${args.action} needs jobId (see action list)`);
      return args.jobId;
    };
    const own = async (jobId: string) => {
      const { job } = await cron(rt, "get", { jobId });
      if (job.agentId !== call.agentId) throw new LurkError("FORBIDDEN", `job ${jobId} belongs to agent ${job.agentId}, not to you`);
      return job;
    };
    switch (args.action) {
      case "add": {
        if (!args.name) throw invalid("add needs name");
        if (!args.message) throw invalid("add needs message: the task of the agent turn, or the note with systemEvent");
        const schedule = scheduleOf(args, Date.now());
        const origin = await currentOrigin(rt, call);
        const payload = args.systemEvent
          ? { kind: "systemEvent" as const, text: args.message }
          : { kind: "agentTurn" as const, message: args.message, ...(args.model ? { model: args.model } : {}), ...(args.thinking ? { thinking: args.thinking } : {}), ...deliveryOf(args.deliver, origin) };
        const { job } = await cron(rt, "add", {
          name: args.name,
          agentId: call.agentId,
          schedule,
          sessionTarget: args.systemEvent ? "main" : "isolated",
          wakeMode: args.wake ?? (args.systemEvent ? "next-heartbeat" : "now"),
          deleteAfterRun: args.deleteAfterRun ?? schedule.kind === "at",
          payload,
        });
        return text(`added ${describeJob(job)}`);
      }
      case "list": {
        const { jobs } = await cron(rt, "list", { agentId: call.agentId });
        if (jobs.length === 0) return text("no cron jobs");
        return text(jobs.slice(0, args.limit ?? 20).map(describeJob).join("\n"));
      }
      case "rm": {
        const jobId = needId();
        await own(jobId);
        const { removed } = await cron(rt, "rm", { jobId });
        return text(removed ? `removed ${jobId}` : `no job ${jobId}`);
      }
      case "run": {
        const jobId = needId();
        await own(jobId);
        const r = await cron(rt, "run", { jobId, mode: "force" });
        return text(r.status === "fired" ? `fired ${jobId} (${r.fireId})` : `skipped ${jobId}: ${r.reason ?? ""}`);
      }
      case "runs": {
        if (args.jobId) await own(args.jobId);
        // without a job id: the calling agent's runs only
        const { runs } = await cron(rt, "runs", { ...(args.jobId ? { jobId: args.jobId } : {}), agentId: call.agentId, limit: args.limit ?? 20 });
        if (runs.length === 0) return text("no runs yet");
        return text(runs.map((r) => `${r.fireId}  ${r.status}  ${when(r.startedAtMs)}${r.endedAtMs !== undefined ? `  ${formatDuration(r.endedAtMs - r.startedAtMs)}` : ""}${r.error ? `  ${r.error.slice(0, 200)}` : ""}`).join("\n"));
      }
    }
  },
});

/** The conversation of the calling session, if it has one (a cron or subagent session has none). */
async function currentOrigin(rt: ActorRuntime, call: ToolCallInfo): Promise<{ channel: string; conversation: string } | undefined> {
  const type = parseSessionKey(call.sessionKey)?.type;
  if (type === "cron" || type === "subagent") return undefined;
  try {
    const { session } = await rt.client.call("sessions", "get", { sessionKey: call.sessionKey });
    return session?.lastOrigin;
  } catch {
    return undefined;
  }
}
