/**
 * `lurkbot usage [--days N | --since DAY [--until DAY]] [--by day,model,agent,channel,type,purpose]
 * [--agent ID] [--json]`: what the assistant spent, from the sessions actor's usage ledger
 * (`lurk.sessions.usage_report` as the `cli` user): tokens and USD per group, a totals row, the
 * tokens without a known price, and a note when the range reaches before the ledger's first day.
 * Speech and transcription (billed by characters and audio seconds, not tokens) add CHARS and
 * AUDIO columns when the range has any, with notes for units without a price and transcriptions
 * of unknown duration.
 * `--providers`: the providers' rate-limit windows per auth profile instead (usage-providers.ts).
 * Days are UTC. Exit codes: 1 an error reply (a report too large: narrow it), 2 the bus is down,
 * 64 a bad command line (dates, keys).
 */
import {
  addDays, agentIdSchema, usageDaySchema, usageTokens, utcDay,
  type RequestOf, type UsageGroupKey, type UsageReport, type UsageReportRow, type UsageSums,
} from "../../shared/contract/index.js";
import { loadConfig, type Env } from "../../shared/runtime/config.js";
import { formatUsd } from "../../shared/runtime/format-usd.js";
import type { ParsedCommand } from "./args.js";
import { withCliBus } from "./bus.js";
import { EXIT, UsageError } from "./errors.js";
import { table } from "./format.js";
import { cmdUsageProviders } from "./usage-providers.js";

export interface UsageIo {
  out(line: string): void;
}

const DEFAULT_DAYS = 30;
const MAX_DAYS = 36_600;

/** `--by` names -> the report's group keys */
const BY: Record<string, UsageGroupKey> = { day: "day", model: "model", agent: "agent", channel: "channel", type: "sessionType", purpose: "purpose" };
const HEADERS: Record<UsageGroupKey, { head: string; field: keyof UsageReportRow }> = {
  day: { head: "DAY", field: "day" },
  agent: { head: "AGENT", field: "agentId" },
  model: { head: "MODEL", field: "model" },
  channel: { head: "CHANNEL", field: "channel" },
  sessionType: { head: "TYPE", field: "sessionType" },
  purpose: { head: "PURPOSE", field: "purpose" },
};

const use = (message: string) => new UsageError(message, "usage");

function day(option: string, value: unknown): string {
  const text = String(value);
  const parsed = usageDaySchema.safeParse(text);
  if (parsed.success) return parsed.data;
  const why = /^\d{4}-\d{2}-\d{2}$/.test(text) ? "is not a day of the calendar" : "is not a day: write YYYY-MM-DD (UTC), e.g. 2026-11-01";
  throw use(`--${option} "${text}" ${why}.`);
}

/** The report request of a command line; `now` is the clock (days are UTC). */
export function usageRequest(p: ParsedCommand, now = Date.now()): RequestOf<"sessions", "usage_report"> {
  const o = p.options;
  if (o.days !== undefined && o.since !== undefined) throw use("--days and --since both set the first day; give one of them.");
  if (o.until !== undefined && o.since === undefined) throw use("--until needs --since (e.g. --since 2026-11-01 --until 2026-11-15), or use --days N.");
  let from: string;
  let to: string | undefined;
  if (o.since !== undefined) {
    from = day("since", o.since);
    if (o.until !== undefined) {
      to = day("until", o.until);
      if (from > to) throw use(`--since ${from} is after --until ${to}.`);
    }
  } else {
    const days = (o.days as number | undefined) ?? DEFAULT_DAYS;
    if (!Number.isInteger(days) || days > MAX_DAYS) throw use(`--days must be a whole number of days from 1 to ${MAX_DAYS}, not ${days}.`);
    from = addDays(utcDay(now), -(days - 1));
  }
  const names = typeof o.by === "string" ? o.by.split(",").map((n) => n.trim()) : ["day"];
  const groupBy: UsageGroupKey[] = [];
  for (const name of names) {
    const key = BY[name];
    if (!key) throw use(`--by takes ${Object.keys(BY).join(", ")} (comma-separated), not "${name}".`);
    if (groupBy.includes(key)) throw use(`--by names "${name}" twice.`);
    groupBy.push(key);
  }
  const agent = o.agent;
  if (agent !== undefined && !agentIdSchema.safeParse(agent).success) throw use(`--agent "${String(agent)}" is not an agent id (lower-case letters, digits, '-' or '_').`);
  return { from, ...(to !== undefined ? { to } : {}), groupBy, ...(typeof agent === "string" ? { agentId: agent } : {}) };
}

export async function cmdUsage(p: ParsedCommand, env: Env, io: UsageIo): Promise<number> {
  // --providers: the providers' rate-limit windows instead (usage-providers.ts)
  if (p.options.providers) return cmdUsageProviders(p, loadConfig(env), env, io.out);
  const request = usageRequest(p);
  const cfg = loadConfig(env);
  return withCliBus(cfg, env, async (bus) => {
    const report = await bus.call("sessions", "usage_report", request);
    if (p.options.json) io.out(JSON.stringify(report, null, 2));
    else io.out(formatUsageReport(report, request.agentId).trimEnd());
    return EXIT.ok;
  });
}

// --- rendering --------------------------------------------------------------------------------


/** A row's cost: "unpriced" when none of its tokens, characters or seconds had a price, "*" when some had none. */
function costCell(s: UsageSums): string {
  const unpriced = s.unpricedTokens > 0 || s.unpricedChars > 0 || s.unpricedAudioSeconds > 0 || s.unknownDurations > 0;
  const priced = usageTokens(s) > s.unpricedTokens || s.chars > s.unpricedChars || s.audioSeconds > s.unpricedAudioSeconds;
  if (unpriced && !priced) return "unpriced";
  return `${formatUsd(s.costUsd)}${unpriced ? "*" : ""}`;
}

/** Seconds of audio for people: 42.5s, 3m 07s, 2h 05m. */
export function formatAudio(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds * 10) / 10}s`;
  const whole = Math.round(seconds);
  if (whole < 3600) return `${Math.floor(whole / 60)}m ${String(whole % 60).padStart(2, "0")}s`;
  return `${Math.floor(whole / 3600)}h ${String(Math.floor((whole % 3600) / 60)).padStart(2, "0")}m`;
}

/** The AUDIO cell: the seconds transcribed, and how many transcriptions had no known duration. */
const audioCell = (s: UsageSums) => `${formatAudio(s.audioSeconds)}${s.unknownDurations > 0 ? ` +${s.unknownDurations} unknown` : ""}`;

const hasMedia = (s: UsageSums) => s.chars > 0 || s.audioSeconds > 0 || s.unknownDurations > 0;

const sums = (s: UsageSums, media: boolean) => [s.runs, s.input, s.output, s.cacheRead, s.cacheWrite, s.total].map(String)
  .concat(media ? [String(s.chars), audioCell(s)] : [], costCell(s));

export function formatUsageReport(r: UsageReport, agentId?: string): string {
  const keys = r.groupBy;
  const lines = [`usage ${r.from} to ${r.to} (UTC days)${agentId ? `, agent ${agentId}` : ""}${keys.length ? `, by ${keys.map((k) => HEADERS[k].head.toLowerCase()).join(", ")}` : ""}`, ""];
  if (r.rows.length === 0) lines.push("no usage recorded in this range");
  else {
    // speech (characters) and transcription (audio) columns only when the range has any
    const media = hasMedia(r.totals);
    const head = [...(keys.length ? keys.map((k) => HEADERS[k].head) : [""]), "RUNS", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "TOTAL", ...(media ? ["CHARS", "AUDIO"] : []), "COST (USD)"];
    const keyCells = (row: UsageReportRow) => (keys.length ? keys.map((k) => String(row[HEADERS[k].field] ?? "-")) : [""]);
    const rows = r.rows.map((row) => [...keyCells(row), ...sums(row, media)]);
    const width = keys.length || 1;
    rows.push(["TOTAL", ...Array<string>(width - 1).fill(""), ...sums(r.totals, media)]);
    const numeric = Array.from({ length: media ? 9 : 7 }, (_, i) => width + i);
    lines.push(table(head, rows, numeric).trimEnd());
  }
  /** " (model, …)" of the rows `has` picks, or "" */
  const modelsWith = (has: (row: UsageReportRow) => boolean) => {
    const models = [...new Set(r.rows.filter((row) => has(row) && row.model).map((row) => row.model!))];
    return models.length ? ` (${models.join(", ")})` : "";
  };
  if (r.totals.unpricedTokens > 0) {
    lines.push("", `* ${r.totals.unpricedTokens} tokens without a known price are not in the cost${modelsWith((row) => row.unpricedTokens > 0)}: set models.entries["<provider/model>"].cost in config.json (USD per million tokens) for usage from now on.`);
  }
  if (r.totals.unpricedChars > 0) {
    lines.push("", `* ${r.totals.unpricedChars} characters of speech without a known price are not in the cost${modelsWith((row) => row.unpricedChars > 0)}: set models.entries["<provider/model>"].cost.perMChars (USD per million characters) for usage from now on.`);
  }
  if (r.totals.unpricedAudioSeconds > 0) {
    lines.push("", `* ${formatAudio(r.totals.unpricedAudioSeconds)} of transcribed audio without a known price are not in the cost${modelsWith((row) => row.unpricedAudioSeconds > 0)}: set models.entries["<provider/model>"].cost.perAudioMinute (USD per minute) for usage from now on.`);
  }
  if (r.totals.unknownDurations > 0) {
    const n = r.totals.unknownDurations;
    lines.push("", `* ${n} transcription${n === 1 ? "" : "s"} of unknown duration (the provider did not say and the file's format is not one LurkBot reads): not in AUDIO nor in the cost${modelsWith((row) => row.unknownDurations > 0)}.`);
  }
  if (hasMedia(r.totals)) {
    lines.push("", "Speech is counted in characters synthesized, transcription in seconds of audio; gpt-4o-mini-tts and ElevenLabs prices are estimates (models.entries[\"<provider/model>\"].cost.perMChars sets yours).");
  }
  if (r.ledgerSince === null || r.ledgerSince > r.from) {
    lines.push("", `${r.ledgerSince === null ? "The usage ledger is empty" : `The usage ledger holds usage since ${r.ledgerSince}`}: it starts with this version of LurkBot, so earlier usage is not in it`
      + " (nor days past sessions.usage.retentionDays); each session's own totals are in `lurkbot sessions list`.");
  }
  return lines.join("\n") + "\n";
}
