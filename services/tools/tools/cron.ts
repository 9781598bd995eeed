/**
 * The `cron` tool (seeds 001 §3.4 group:automation, §3.8): the agent schedules its own jobs
 * through the cron actor (`lurk.cron.add|list|get|edit|rm|run|runs|status`). Jobs belong to the
 * calling agent: update, rm, run and runs on another agent's job are FORBIDDEN.
 *   add     {name, every|cron(+tz)|at, message, systemEvent?, wake?, model?, thinking?, deliver?, deleteAfterRun?}
 *           without systemEvent: an agent turn in the job's own cron session, its reply delivered
 *           to this conversation (deliver "here", default), the main session's last one ("last"),
 *           CHANNEL:TO, or nowhere ("none"); with systemEvent: a note in the main session
 *   update  {jobId, + any field of add, enabled?}: only what is given changes (cron-args.ts
 *           patchOf), validated by the cron actor as an add is; a new schedule plans the next fire from now
 *   list    the agent's jobs;  rm / run {jobId};  runs {jobId?, limit?}
 *   status  the scheduler (firing or not, whether the answering instance holds the lease, all
 *           jobs) and the agent's own jobs: counts, next fire, running ones, last errors
 *   wake    {message, wake?}: a system event for the agent's main session on `lurk.inject.<agentId>`
 *           (id from the tool call id, so a repeated call lands once): "next-heartbeat" (default,
 *           as the seeds' wake) records it for the next run there, "now" starts a run with it
 * When no cron actor answers, the tool says so (UNAVAILABLE) instead of pretending (wake needs none).
 * The default "coding" tool profile does not include it: allow "cron" or "group:automation".
 */
import { buildSessionKey, LurkError, parseSessionKey, type CronJob, type EndpointOp, type ReplyOf, type RequestOf } from "../../../shared/contract/index.js";
import type { ActorRuntime } from "../../../shared/runtime/actor.js";
import { formatDuration } from "../../../shared/runtime/cron-text.js";
import { defineTool, type ToolCallInfo } from "../tool.js";
import { busOf, queueSystemEvent } from "./bus.js";
import { cronParameters, deliveryOf, describeJob, invalid, patchOf, scheduleOf, when } from "./cron-args.js";

const text = (body: string) => ({ content: [{ type: "text" as const, text: body }] });

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

export const cronTool = defineTool({
  name: "cron",
  description: "Schedule jobs for yourself: reminders (systemEvent: a note in your main session) or agent turns that run on a schedule (every 30m, a cron expression with time zone, or once at a time) and deliver their reply. Actions: add, list, update (change a job: only the fields given), rm, run (now), runs (the log), status (the scheduler and your jobs), wake (a note to your main session now or at the next heartbeat).",
  parameters: cronParameters,
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
      case "update": {
        const job = await own(needId());
        const origin = await currentOrigin(rt, call);
        const { job: updated } = await cron(rt, "edit", { jobId: job.id, patch: patchOf(args, job, origin, Date.now()) });
        return text(`updated ${describeJob(updated)}`);
      }
      case "status":
        return text(await statusText(rt, call.agentId));
      case "wake": {
        if (!args.message) throw invalid("wake needs message: the text of the system event");
        const mode = args.wake ?? "next-heartbeat";
        const sessionKey = buildSessionKey({ type: "main", agentId: call.agentId });
        const id = `wake-${call.toolCallId}`.slice(0, 200);
        const ack = await queueSystemEvent(rt, call, id, {
          agentId: call.agentId, sessionKey, source: "cron", trigger: "cron", text: args.message, wake: mode, deliverTo: "last",
        }, "the system event");
        const what = mode === "now"
          ? `a run of your main session starts with it${call.sessionKey === sessionKey ? " once this run has ended" : ""}`
          : "it waits in your main session for its next run (the next heartbeat or message)";
        return text(`${ack.duplicate ? "already queued" : "queued"} the system event: ${what}`);
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

/** `status`: the scheduler as the cron actor that answered sees it, and the agent's own jobs. */
async function statusText(rt: ActorRuntime, agentId: string): Promise<string> {
  const [st, { jobs }] = await Promise.all([cron(rt, "status", {}), cron(rt, "list", { agentId })]);
  const enabled = jobs.filter((j) => j.enabled);
  const next = enabled.filter((j) => j.state.nextRunAtMs !== undefined).sort((a, b) => a.state.nextRunAtMs! - b.state.nextRunAtMs!)[0];
  const running = jobs.filter((j) => j.state.runningAtMs !== undefined);
  const failed = jobs.filter((j) => j.state.lastStatus === "error");
  const name = (j: CronJob) => `${j.id} "${j.name}"`;
  return [
    `scheduler: ${st.running ? "firing jobs" : "not firing (cron.enabled is false)"}; the instance that answered ${st.active ? "holds the lease and schedules" : "stands by (another instance holds the lease)"}; ${st.jobs} job(s) of all agents`,
    `your jobs: ${jobs.length} (${enabled.length} enabled, ${jobs.length - enabled.length} disabled${running.length ? `, ${running.length} running: ${running.map(name).join(", ")}` : ""})`,
    `your next fire: ${next ? `${when(next.state.nextRunAtMs)} ${name(next)}` : "none scheduled"}`,
    ...(failed.length
      ? [`last runs that failed:`, ...failed.map((j) => `  ${name(j)} at ${when(j.state.lastRunAtMs)}: ${(j.state.lastError ?? "error").slice(0, 200)}`)]
      : ["no job's last run failed"]),
  ].join("\n");
}

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
