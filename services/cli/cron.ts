/**
 * `lurkbot cron add|list|edit|rm|run|runs|status`: the cron actor's jobs over `lurk.cron.<op>`
 * as the `cli` user. Friendly flags become the contract's job fields:
 *   --every 10m [--anchor TIME] | --cron "0 9 * * *" [--tz Europe/Berlin] | --at TIME|+DURATION
 *   --message TEXT  an agent turn in the job's own session (default), or with --system-event a
 *                   note injected into the agent's main session (--wake now starts a run at once)
 *   --deliver last|none|CHANNEL:TO  where an agent turn's reply goes (default: last)
 * TIME is ISO 8601; without an offset it is read in --tz (else the host's time zone).
 */
import { CHANNELS, type CronJob } from "../../shared/contract/index.js";
import { loadConfig, type Env } from "../../shared/runtime/config.js";
import { describeSchedule, formatDuration, parseDuration } from "../../shared/runtime/cron-text.js";
import { isValidTimeZone, zonedTimeToInstant } from "../../shared/runtime/time-zone.js";
import type { ParsedCommand } from "./args.js";
import { withCliBus } from "./bus.js";
import { EXIT, UsageError } from "./errors.js";
import { table } from "./format.js";
import { checkSubcommand, type SubcommandSpec } from "./subcommands.js";

export interface CronIo {
  out(line: string): void;
}

type Job = CronJob;
type Patch = Partial<Pick<Job, "name" | "description" | "agentId" | "enabled" | "deleteAfterRun" | "schedule" | "sessionTarget" | "wakeMode" | "payload" | "isolation">>;

/** `--post-to-main summary|full`: the seeds' isolation settings (prefix "Cron", 8000 characters). */
function isolationFrom(p: ParsedCommand): Job["isolation"] | undefined {
  const mode = str(p, "post-to-main");
  if (mode === undefined) return undefined;
  if (mode !== "summary" && mode !== "full") throw use(`--post-to-main "${mode}": use summary (the reply's first paragraph) or full.`);
  return { postToMainPrefix: "Cron", postToMainMode: mode, postToMainMaxChars: 8000 };
}

const JOB_FLAGS = ["name", "description", "every", "anchor", "cron", "tz", "at", "message", "system-event", "agent", "wake", "model", "thinking", "timeout", "deliver", "best-effort", "post-to-main", "delete-after-run"];
const SUBCOMMANDS: Record<string, SubcommandSpec> = {
  add: { arg: "none", options: [...JOB_FLAGS, "disabled", "json"] },
  list: { arg: "none", options: ["agent", "json"] },
  edit: { arg: "required", options: [...JOB_FLAGS, "enable", "disable", "json"] },
  rm: { arg: "required", options: ["json"] },
  run: { arg: "required", options: ["due", "json"] },
  runs: { arg: "optional", options: ["limit", "json"] },
  status: { arg: "none", options: ["json"] },
};

const use = (message: string) => new UsageError(message, "cron");
const str = (p: ParsedCommand, name: string) => p.options[name] as string | undefined;

export function checkCronArgs(p: ParsedCommand): { sub: string; id?: string } {
  const { sub, arg: id } = checkSubcommand(p, "cron", SUBCOMMANDS, "a job ID");
  return { sub, ...(id !== undefined ? { id } : {}) };
}

/** The UTC time of an ISO date-time; one without an offset is local to `tz` (else the host's zone). */
export function parseTime(text: string, tz: string | undefined, nowMs: number): number {
  const relative = parseDuration(text.replace(/^\+/, ""));
  if (relative !== undefined && text.startsWith("+")) return nowMs + relative;
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(text.trim());
  if (!m) {
    const ms = Date.parse(text);
    if (Number.isNaN(ms) || !/\d{4}-\d{2}-\d{2}/.test(text)) throw use(`"${text}" is not a time: use ISO 8601 (2026-12-01T09:00, 2026-12-01T09:00:00Z) or +DURATION (+10m).`);
    return ms;
  }
  const [, y, mo, d, h = "00", mi = "00", s = "00"] = m;
  if (!tz) return new Date(+y!, +mo! - 1, +d!, +h, +mi, +s).getTime();
  if (!isValidTimeZone(tz)) throw use(`unknown time zone "${tz}": use an IANA name such as UTC or Europe/Berlin.`);
  // a time skipped by a DST jump moves forward by the jump; a repeated one is its first occurrence
  return zonedTimeToInstant(Date.UTC(+y!, +mo! - 1, +d!, +h, +mi, +s), tz);
}

function scheduleFrom(p: ParsedCommand, nowMs: number): Job["schedule"] | undefined {
  const given = ["every", "cron", "at"].filter((k) => p.options[k] !== undefined);
  if (given.length > 1) throw use(`choose one schedule: --${given.join(" or --")} were both given.`);
  const tz = str(p, "tz");
  if (p.options.anchor !== undefined && given[0] !== "every") throw use("--anchor goes with --every (the time the interval counts from).");
  if (tz !== undefined && given.length === 0) throw use("--tz goes with --cron (or --at/--anchor given without an offset).");
  if (given[0] === "every") {
    const everyMs = parseDuration(str(p, "every") ?? "");
    if (everyMs === undefined) throw use(`--every "${str(p, "every")}" is not a duration: use e.g. 30s, 10m, 1h30m, 2d.`);
    if (everyMs < 1000) throw use("--every must be at least 1s.");
    const anchor = str(p, "anchor");
    return { kind: "every", everyMs, ...(anchor !== undefined ? { anchorMs: parseTime(anchor, tz, nowMs) } : {}) };
  }
  if (given[0] === "cron") return { kind: "cron", expr: str(p, "cron")!, tz: tz ?? "UTC" };
  if (given[0] === "at") return { kind: "at", atMs: parseTime(str(p, "at")!, tz, nowMs) };
  return undefined;
}

function deliveryFrom(p: ParsedCommand): { deliver: boolean; channel: "last" | (typeof CHANNELS)[number]; to?: string } | undefined {
  const text = str(p, "deliver");
  if (text === undefined) return undefined;
  if (text === "last") return { deliver: true, channel: "last" };
  if (text === "none") return { deliver: false, channel: "last" };
  const [channel, ...rest] = text.split(":");
  const to = rest.join(":");
  if (!CHANNELS.includes(channel as never) || !to) throw use(`--deliver "${text}": use last, none, or CHANNEL:TO with a channel of ${CHANNELS.join(", ")} (e.g. telegram:123456).`);
  return { deliver: true, channel: channel as (typeof CHANNELS)[number], to };
}

type Payload = Job["payload"];
type AgentTurnPayload = Extract<Payload, { kind: "agentTurn" }>;

/** The payload from the flags, on top of `base` (edit) or from nothing (add). */
function payloadFrom(p: ParsedCommand, base: Payload | undefined): Payload | undefined {
  const systemEvent = p.options["system-event"] === true || (base?.kind === "systemEvent" && p.options["system-event"] === undefined);
  const message = str(p, "message");
  const turnFlags = ["model", "thinking", "timeout", "deliver", "best-effort"].filter((k) => p.options[k] !== undefined);
  if (systemEvent) {
    if (turnFlags.length) throw use(`--${turnFlags.join(", --")} apply to agent turns, not to a --system-event.`);
    if (message === undefined) return base?.kind === "systemEvent" ? undefined : failNeedsMessage();
    return { kind: "systemEvent", text: message };
  }
  if (message === undefined && turnFlags.length === 0) return undefined;
  const prev: Partial<AgentTurnPayload> = base?.kind === "agentTurn" ? base : {};
  const text = message ?? prev.message;
  if (text === undefined) return failNeedsMessage();
  const thinking = str(p, "thinking");
  if (thinking !== undefined && !["off", "low", "medium", "high"].includes(thinking)) throw use(`--thinking "${thinking}": use off, low, medium or high.`);
  const timeout = p.options.timeout as number | undefined;
  if (timeout !== undefined && (!Number.isInteger(timeout) || timeout <= 0)) throw use("--timeout is whole seconds above 0.");
  const delivery = deliveryFrom(p);
  const merged: Record<string, unknown> = { ...prev, kind: "agentTurn", message: text };
  if (str(p, "model") !== undefined) merged.model = str(p, "model");
  if (thinking !== undefined) merged.thinking = thinking;
  if (timeout !== undefined) merged.timeoutSeconds = timeout;
  if (delivery) {
    delete merged.to;
    Object.assign(merged, delivery);
  }
  if (p.options["best-effort"] === true) merged.bestEffortDeliver = true;
  return merged as AgentTurnPayload;
}

const failNeedsMessage = (): never => {
  throw use("--message is needed: the text of the reminder (--system-event) or the agent's task.");
};

function addRequest(p: ParsedCommand, nowMs: number): Omit<Job, "id" | "createdAtMs" | "updatedAtMs" | "state"> {
  const name = str(p, "name");
  if (!name) throw use("--name is needed: a short name for the job, e.g. --name \"morning brief\".");
  const schedule = scheduleFrom(p, nowMs);
  if (!schedule) throw use("a schedule is needed: --every 10m, --cron \"0 9 * * *\" [--tz Europe/Berlin] or --at 2026-12-01T09:00.");
  const payload = payloadFrom(p, undefined) ?? failNeedsMessage();
  const wake = str(p, "wake");
  if (wake !== undefined && wake !== "now" && wake !== "next-heartbeat") throw use(`--wake "${wake}": use now or next-heartbeat.`);
  const isolation = isolationFrom(p);
  return {
    name,
    ...(str(p, "description") !== undefined ? { description: str(p, "description")! } : {}),
    agentId: str(p, "agent") ?? "main",
    enabled: p.options.disabled !== true,
    deleteAfterRun: p.options["delete-after-run"] === true,
    schedule,
    sessionTarget: payload.kind === "systemEvent" ? "main" : "isolated",
    wakeMode: (wake as Job["wakeMode"] | undefined) ?? (payload.kind === "systemEvent" ? "next-heartbeat" : "now"),
    payload,
    ...(isolation ? { isolation } : {}),
  };
}

function editPatch(p: ParsedCommand, job: Job, nowMs: number): Patch {
  if (p.options.enable === true && p.options.disable === true) throw use("--enable and --disable contradict each other; give one.");
  const patch: Patch = {};
  const name = str(p, "name");
  if (name !== undefined) patch.name = name;
  if (str(p, "description") !== undefined) patch.description = str(p, "description")!;
  if (str(p, "agent") !== undefined) patch.agentId = str(p, "agent")!;
  if (p.options.enable === true) patch.enabled = true;
  if (p.options.disable === true) patch.enabled = false;
  if (p.options["delete-after-run"] === true) patch.deleteAfterRun = true;
  const wake = str(p, "wake");
  if (wake !== undefined) {
    if (wake !== "now" && wake !== "next-heartbeat") throw use(`--wake "${wake}": use now or next-heartbeat.`);
    patch.wakeMode = wake;
  }
  const isolation = isolationFrom(p);
  if (isolation) patch.isolation = isolation;
  const schedule = scheduleFrom(p, nowMs);
  if (schedule) patch.schedule = schedule;
  else if (str(p, "tz") !== undefined && job.schedule.kind === "cron") patch.schedule = { ...job.schedule, tz: str(p, "tz")! };
  const payload = payloadFrom(p, job.payload);
  if (payload) {
    patch.payload = payload;
    patch.sessionTarget = payload.kind === "systemEvent" ? "main" : "isolated";
  }
  if (Object.keys(patch).length === 0) throw use("nothing to change: give the flags to change (e.g. --every 1h, --message TEXT, --disable).");
  return patch;
}

export async function cmdCron(p: ParsedCommand, env: Env, io: CronIo): Promise<number> {
  const { sub, id } = checkCronArgs(p);
  const now = Date.now();
  // flag mistakes are reported before touching the bus
  const add = sub === "add" ? addRequest(p, now) : undefined;
  const limit = p.options.limit as number | undefined;
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 1000)) throw use("--limit is a whole number from 1 to 1000.");
  const cfg = loadConfig(env);
  const json = p.options.json === true;
  const print = (value: unknown, text: string) => io.out(json ? JSON.stringify(value, null, 2) : text);
  return withCliBus(cfg, env, async (bus) => {
    switch (sub) {
      case "add": {
        const { job } = await bus.call("cron", "add", add!);
        print(job, `added ${job.id} "${job.name}": ${describeSchedule(job.schedule)}, next run ${when(job.state.nextRunAtMs)}`);
        return EXIT.ok;
      }
      case "list": {
        const agent = str(p, "agent");
        const { jobs } = await bus.call("cron", "list", { ...(agent ? { agentId: agent } : {}), includeDisabled: true });
        print(jobs, formatJobList(jobs).trimEnd());
        return EXIT.ok;
      }
      case "edit": {
        const { job } = await bus.call("cron", "get", { jobId: id! });
        const { job: updated } = await bus.call("cron", "edit", { jobId: id!, patch: editPatch(p, job, now) });
        print(updated, `changed ${updated.id} "${updated.name}": ${describeSchedule(updated.schedule)}${updated.enabled ? `, next run ${when(updated.state.nextRunAtMs)}` : ", disabled"}`);
        return EXIT.ok;
      }
      case "rm": {
        const { removed } = await bus.call("cron", "rm", { jobId: id! });
        print({ removed }, removed ? `removed ${id}` : `no job ${id} (nothing removed; see \`lurkbot cron list\`)`);
        return removed ? EXIT.ok : EXIT.failed;
      }
      case "run": {
        const result = await bus.call("cron", "run", { jobId: id!, mode: p.options.due === true ? "due" : "force" });
        print(result, result.status === "fired" ? `fired ${id} (fire ${result.fireId}); see \`lurkbot cron runs ${id}\`` : `skipped ${id}: ${result.reason ?? "not due"}`);
        return EXIT.ok;
      }
      case "runs": {
        const { runs } = await bus.call("cron", "runs", { ...(id ? { jobId: id } : {}), limit: limit ?? 20 });
        print(runs, formatRuns(runs).trimEnd());
        return EXIT.ok;
      }
      default: {
        const status = await bus.call("cron", "status", {});
        print(status, `cron: ${status.jobs} job(s), ${status.active ? "this instance schedules" : "standing by (another instance holds the lease)"}${status.running ? "" : ", firing disabled (cron.enabled false)"}; next run ${when(status.nextRunAtMs)}`);
        return EXIT.ok;
      }
    }
  });
}

const when = (ms: number | undefined) => (ms === undefined ? "none" : new Date(ms).toISOString().replace(".000Z", "Z"));

export function formatJobList(jobs: Job[]): string {
  if (jobs.length === 0) return "no cron jobs (add one: lurkbot cron add --name NAME --every 1h --message TEXT)\n";
  return table(["ID", "NAME", "SCHEDULE", "PAYLOAD", "NEXT RUN", "LAST"], jobs.map((j) => [
    j.id, j.name, describeSchedule(j.schedule), `${j.payload.kind}${j.agentId !== "main" ? ` (${j.agentId})` : ""}`,
    j.enabled ? when(j.state.nextRunAtMs) : "disabled",
    j.state.runningAtMs !== undefined ? "running" : j.state.lastStatus ? `${j.state.lastStatus}${j.state.lastDurationMs !== undefined ? ` ${formatDuration(j.state.lastDurationMs)}` : ""}${j.state.lastError ? `: ${j.state.lastError.slice(0, 60)}` : ""}` : "-",
  ]));
}

export function formatRuns(runs: Array<{ fireId: string; status: string; scheduledAtMs: number; startedAtMs: number; endedAtMs?: number | undefined; error?: string | undefined; runId?: string | undefined }>): string {
  if (runs.length === 0) return "no runs yet\n";
  return table(["FIRE", "STATUS", "SCHEDULED", "DURATION", "RUN", "ERROR"], runs.map((r) => [
    r.fireId, r.status, when(r.scheduledAtMs), r.endedAtMs !== undefined ? formatDuration(r.endedAtMs - r.startedAtMs) : "-", r.runId ?? "-", r.error?.slice(0, 80) ?? "",
  ]));
}

