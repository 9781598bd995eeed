/**
 * `process`: background jobs. `start` runs a shell command like exec (same bubblewrap sandbox,
 * limits and clean environment) but returns at once with a job id; the job keeps running in the
 * tools actor process until it ends, is killed, reaches its deadline (timeoutSeconds, at most
 * config.tools.jobs.maxRuntimeMs) or the actor stops. Its output (stdout and stderr interleaved)
 * is kept whole in the workspace (`.lurkbot/jobs/<jobId>.log`, up to tools.jobs.maxOutputMb).
 *   poll   status, exit code and the output since the last poll (waitSeconds: wait for the end)
 *   log    page through the whole output by lines (offset, limit)
 *   write  send text to the job's stdin (eof: close it afterwards)
 *   kill   kill the job and everything it started
 *   list   this session's jobs (on every tools instance)
 * A job belongs to the session that started it. With several tools instances, a call about a
 * job is forwarded to the instance that owns it (jobs/route.ts). `start` asks for approval
 * under the same rule as exec (tools.exec.ask).
 */
import { z } from "zod";
import { LurkError, type ToolJobSummary } from "../../../shared/contract/index.js";
import { unavailableMessage } from "../exec/sandbox.js";
import type { Job } from "../jobs/job.js";
import type { JobHost } from "../jobs/route.js";
import { jobInstance } from "../jobs/table.js";
import { defineTool, type ToolContext, type ToolResult } from "../tool.js";

const DEFAULT_LOG_LINES = 200;
const NOTE_RESERVE = 400;
const MAX_WAIT_SECONDS = 30;

const parameters = z.object({
  action: z.enum(["start", "poll", "log", "write", "kill", "list"]).describe("What to do"),
  command: z.string().min(1).max(100_000).optional().describe("start: the shell command (bash) to run in the background"),
  timeoutSeconds: z.number().int().min(1).max(24 * 3600).optional().describe("start: kill the job after this many seconds (capped by the configured maximum)"),
  jobId: z.string().min(1).max(200).optional().describe("poll, log, write, kill: the job id that start returned"),
  waitSeconds: z.number().int().min(0).max(MAX_WAIT_SECONDS).optional().describe(`poll: wait up to this many seconds (max ${MAX_WAIT_SECONDS}) for the job to end first`),
  offset: z.number().int().min(1).optional().describe("log: the 1-based line to start at (default 1)"),
  limit: z.number().int().min(1).max(100_000).optional().describe(`log: how many lines at most (default ${DEFAULT_LOG_LINES})`),
  data: z.string().max(1_000_000).optional().describe("write: the text to send to the job's standard input (add \\n for a line)"),
  eof: z.boolean().optional().describe("write: close the job's standard input after writing"),
});
type Args = z.output<typeof parameters>;

export const processTool = defineTool({
  name: "process",
  description: "Run and manage background jobs: long-running shell commands (servers, watchers, builds) in the same sandbox as exec. "
    + "action \"start\" (command) returns a job id at once; \"poll\" (jobId) gives the status, exit code and the output since the last poll "
    + "(waitSeconds waits for the end); \"log\" (jobId, offset, limit) pages through the whole output by lines; \"write\" (jobId, data, eof) "
    + "sends input; \"kill\" (jobId) stops it and everything it started; \"list\" shows this session's jobs. Jobs are killed at their "
    + "deadline (timeoutSeconds) and when the tools service stops.",
  parameters,
  sideEffects: true,
  parallelSafe: false,
  groups: ["group:runtime"],
  runsIn: "process",
  async execute(args, ctx) {
    const host = ctx.host;
    const jobs = host?.jobs;
    const call = ctx.call;
    if (!host || !jobs) throw new LurkError("TOOL_FAILED", "process runs in the tools actor process only, not in a pool worker");
    if (!call) throw new LurkError("TOOL_FAILED", "process needs the calling session");
    const owner = { agentId: call.agentId, sessionKey: call.sessionKey };

    if (args.action === "list") return listJobs(jobs, owner);
    if (args.action === "start") {
      if (!args.command) throw new LurkError("TOOL_INVALID_ARGS", "start needs a command");
      if (host.exec.mode === "unavailable") throw new LurkError("SANDBOX_UNAVAILABLE", unavailableMessage(host.exec));
      const job = await jobs.table.start(owner, args.command, host.workspace, args.timeoutSeconds === undefined ? undefined : args.timeoutSeconds * 1000);
      return text(`started background job ${job.jobId}${host.exec.mode === "none" ? " (WITHOUT a sandbox: tools.exec.allowUnsandboxed)" : ""}.\n`
        + `Its output is kept in ${job.log.path}. Use process with action "poll" and jobId "${job.jobId}" to see new output and whether it has ended.`);
    }
    if (!args.jobId) throw new LurkError("TOOL_INVALID_ARGS", `${args.action} needs a jobId (see action "list")`);
    const instance = jobInstance(args.jobId);
    if (!instance) throw new LurkError("NOT_FOUND", `"${args.jobId}" is not a job id (they look like job-t0123456789-1; see action "list")`);
    if (instance !== jobs.table.instanceId) return jobs.forward(instance, call, args);
    const job = jobs.table.get(args.jobId, owner);
    switch (args.action) {
      case "poll": return poll(job, args, ctx);
      case "log": return log(job, args, ctx);
      case "write": {
        if (args.data === undefined && !args.eof) throw new LurkError("TOOL_INVALID_ARGS", "write needs data (or eof: true)");
        const bytes = await job.write(args.data ?? "", args.eof ?? false);
        return text(`wrote ${bytes} bytes to job ${job.jobId}${args.eof ? " and closed its input" : ""}`);
      }
      case "kill": {
        const wasRunning = job.running;
        job.stop("killed");
        await job.waitEnded(5_000);
        return text(wasRunning ? `job ${job.jobId} was killed (with everything it started)` : `job ${job.jobId} had already ended: ${statusLine(job)}`);
      }
    }
  },
});

function text(body: string, extra: Partial<ToolResult> = {}): ToolResult {
  return { content: [{ type: "text", text: body }], ...extra };
}

function statusLine(job: Job): string {
  switch (job.status) {
    case "running": return "running";
    case "exited": return job.exitSignal ? `ended (killed by ${job.exitSignal})` : `exited with code ${job.exitCode}`;
    case "killed": return "killed";
    case "timed_out": return "killed at its deadline";
    case "failed": return "failed to start";
  }
}

/** `length` bytes from `offset`, cut back so no UTF-8 character is split. */
async function readWhole(job: Job, offset: number, length: number): Promise<Buffer> {
  const data = await job.log.read(offset, length);
  let end = data.length;
  // drop a trailing incomplete character (the rest is read next time)
  let i = end - 1;
  while (i >= 0 && i >= end - 4 && (data[i]! & 0xc0) === 0x80) i--;
  if (i >= 0) {
    const lead = data[i]!;
    const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    if (end - i < need) end = i;
  }
  return data.subarray(0, end);
}

async function poll(job: Job, args: Args, ctx: ToolContext): Promise<ToolResult> {
  if (args.waitSeconds && job.running) {
    const wait = Math.min(args.waitSeconds * 1000, Math.max(0, (ctx.host?.timeoutMs ?? 60_000) - 2_000));
    await Promise.race([job.waitEnded(wait), new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }))]);
  }
  const ended = !job.running;
  if (ended) await job.log.flush();
  const budget = Math.max(256, ctx.limits.outputCapBytes - NOTE_RESERVE);
  const from = job.polledTo;
  const chunk = await readWhole(job, from, budget);
  job.polledTo = from + chunk.length;
  const more = job.log.size - job.polledTo;
  const lines = [`job ${job.jobId}: ${statusLine(job)}`];
  if (job.sandboxMessages && ended) lines.push(`sandbox: ${job.sandboxMessages.slice(0, 400)}`);
  lines.push(chunk.length > 0 ? `--- new output (${chunk.length} bytes) ---\n${chunk.toString("utf8")}${chunk.at(-1) === 0x0a ? "" : "\n"}---` : "(no new output)");
  if (more > 0) lines.push(`[${more} more bytes of output: poll again, or page with action "log"]`);
  if (job.droppedBytes > 0) lines.push(`[${job.droppedBytes} bytes were dropped: the job's output is over the tools.jobs.maxOutputMb cap]`);
  const failed = ended && (job.status !== "exited" || job.exitCode !== 0);
  return text(lines.join("\n"), failed ? { isError: true, errorCode: job.status === "timed_out" ? "TIMEOUT" : "TOOL_FAILED" } : {});
}

async function log(job: Job, args: Args, ctx: ToolContext): Promise<ToolResult> {
  await job.log.flush();
  const offset = args.offset ?? 1;
  const limit = args.limit ?? DEFAULT_LOG_LINES;
  const budget = Math.max(256, ctx.limits.outputCapBytes - NOTE_RESERVE);
  const size = job.log.size;
  const out: string[] = [];
  let used = 0;
  let lineNo = 1;
  let position = 0;
  let carry = Buffer.alloc(0);
  let stop: "eof" | "limit" | "cap" = "eof";
  outer: while (position < size) {
    if (ctx.signal.aborted) throw new LurkError("ABORTED", "the log read was stopped");
    const chunk = await job.log.read(position, 64 * 1024);
    if (chunk.length === 0) break;
    position += chunk.length;
    let data: Buffer<ArrayBufferLike> = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
    let start = 0;
    for (;;) {
      const nl = data.indexOf(0x0a, start);
      if (nl === -1) break;
      if (lineNo >= offset) {
        if (out.length === limit) {
          stop = "limit";
          break outer;
        }
        const line = `${String(lineNo).padStart(6)}\t${data.subarray(start, Math.min(nl, start + 2000)).toString("utf8")}\n`;
        if (used + Buffer.byteLength(line) > budget && out.length > 0) {
          stop = "cap";
          break outer;
        }
        out.push(line);
        used += Buffer.byteLength(line);
      }
      lineNo++;
      start = nl + 1;
    }
    data = data.subarray(start);
    carry = Buffer.from(data.length > 64 * 1024 ? data.subarray(0, 64 * 1024) : data);
  }
  if (stop === "eof" && carry.length > 0 && lineNo >= offset && out.length < limit) {
    out.push(`${String(lineNo).padStart(6)}\t${carry.subarray(0, 2000).toString("utf8")}\n`);
    lineNo++;
  }
  const header = `job ${job.jobId}: ${statusLine(job)}; output in ${job.log.path} (${size} bytes)\n`;
  if (out.length === 0) return text(`${header}${size === 0 ? "(no output yet)" : `(no lines from line ${offset}; the output has ${lineNo - 1} lines)`}`);
  const last = offset + out.length - 1;
  const note = stop === "eof" ? "" : `[showed lines ${offset}-${last}; read on with offset=${last + 1}]`;
  return text(header + out.join("") + note, stop === "eof" ? {} : { truncated: { fullOutputPath: job.log.path, totalBytes: size } });
}

async function listJobs(jobs: JobHost, owner: { agentId: string; sessionKey: string }): Promise<ToolResult> {
  const all: ToolJobSummary[] = [...jobs.table.list(owner).map((j) => j.summary()), ...(await jobs.listElsewhere(owner))];
  if (all.length === 0) return text("no background jobs in this session");
  all.sort((a, b) => a.startedAt - b.startedAt);
  const lines = all.map((j) => {
    const status = j.status === "exited" ? `exited ${j.exitCode}` : j.status;
    return `${j.jobId}  ${status}  ${j.outputBytes} bytes  started ${new Date(j.startedAt).toISOString()}  ${j.command.split("\n")[0]!.slice(0, 120)}`;
  });
  return text(lines.join("\n"));
}
