/**
 * `lurkbot sessions list|show|reset|delete|export` (export: sessions-export.ts): the sessions actor's entries and transcripts, over
 * `lurk.sessions.<op>` as the `cli` user. Unknown keys are exit 1, a stopped bus exit 2.
 */
import { createInterface } from "node:readline/promises";
import {
  LurkError, sessionKeySchema, sessionTypeSchema,
  type SessionEntry, type TranscriptRecord,
} from "../../shared/contract/index.js";
import type { BusClient } from "../../shared/runtime/client.js";
import { loadConfig, type Env } from "../../shared/runtime/config.js";
import { readHistory } from "../../shared/runtime/session-history.js";
import type { ParsedCommand } from "./args.js";
import { withCliBus } from "./bus.js";
import { CliError, EXIT, UsageError } from "./errors.js";
import { formatTime, oneLine, table } from "./format.js";
import { checkSubcommand, type SubcommandSpec } from "./subcommands.js";
import { exportFormat, exportSession, writeStdout } from "./sessions-export.js";

export interface SessionsIo {
  out(line: string): void;
  err(line: string): void;
  /** asks a yes/no question; null when there is no terminal to ask on */
  confirm?(question: string): Promise<boolean | null>;
  /** raw text of `export` without --out (default: stdout, waiting while the pipe is full) */
  write?(text: string): Promise<void>;
}

const SUBCOMMANDS: Record<string, SubcommandSpec> = {
  list: { arg: "none", options: ["agent", "type", "json", "limit"] },
  show: { arg: "required", options: ["limit", "json"] },
  reset: { arg: "required", options: ["json"] },
  delete: { arg: "required", options: ["yes", "json"] },
  export: { arg: "required", options: ["format", "out", "session-id"] },
};

const DEFAULT_SHOW_LIMIT = 20;
const PREVIEW_CHARS = 160;

/** Checks the subcommand, its key and which options it takes (the parser knows them all). */
export function checkSessionsArgs(p: ParsedCommand): { sub: string; key?: string } {
  const { sub, arg: key } = checkSubcommand(p, "sessions", SUBCOMMANDS, "a session KEY");
  if (key !== undefined && !sessionKeySchema.safeParse(key).success) {
    throw new UsageError(`"${key}" is not a session key (agent:<agentId>:<rest> or global; see \`lurkbot sessions list\`).`, "sessions");
  }
  if (typeof p.options.type === "string" && !sessionTypeSchema.safeParse(p.options.type).success) {
    throw new UsageError(`--type must be one of ${sessionTypeSchema.options.join(", ")}, not "${p.options.type}".`, "sessions");
  }
  if (typeof p.options.limit === "number" && !Number.isInteger(p.options.limit)) throw new UsageError("--limit must be a whole number.", "sessions");
  if (sub === "export") exportFormat(p);
  return { sub, ...(key !== undefined ? { key } : {}) };
}

export async function cmdSessions(p: ParsedCommand, env: Env, io: SessionsIo): Promise<number> {
  const { sub, key } = checkSessionsArgs(p);
  const cfg = loadConfig(env);
  return withCliBus(cfg, env, async (bus) => {
    switch (sub) {
      case "list":
        return await list(bus, p, io);
      case "show":
        return await show(bus, key!, p, io);
      case "reset":
        return await reset(bus, key!, p, io);
      case "export":
        return await exportSession(bus, key!, p, { err: io.err, write: io.write ?? writeStdout });
      default:
        return await remove(bus, key!, p, io);
    }
  });
}

function notFound(key: string): LurkError {
  return new LurkError("NOT_FOUND", `no session ${key} (see \`lurkbot sessions list\`)`);
}

async function list(bus: BusClient, p: ParsedCommand, io: SessionsIo): Promise<number> {
  const { sessions } = await bus.call("sessions", "list", {
    ...(typeof p.options.agent === "string" ? { agentId: p.options.agent } : {}),
    ...(typeof p.options.type === "string" ? { sessionType: p.options.type as SessionEntry["sessionType"] } : {}),
    limit: Math.min(1000, (p.options.limit as number | undefined) ?? 100),
  });
  if (p.options.json) io.out(JSON.stringify(sessions, null, 2));
  else io.out(formatSessionList(sessions).trimEnd());
  return EXIT.ok;
}

async function show(bus: BusClient, key: string, p: ParsedCommand, io: SessionsIo): Promise<number> {
  const limit = Math.min(1000, (p.options.limit as number | undefined) ?? DEFAULT_SHOW_LIMIT);
  const { session, records } = await readHistory(bus, { sessionKey: key, limit });
  if (!session) throw notFound(key);
  if (p.options.json) io.out(JSON.stringify({ session, records }, null, 2));
  else io.out(formatSessionShow(session, records).trimEnd());
  return EXIT.ok;
}

async function reset(bus: BusClient, key: string, p: ParsedCommand, io: SessionsIo): Promise<number> {
  const { session } = await bus.call("sessions", "get", { sessionKey: key });
  if (!session) throw notFound(key);
  const result = await bus.call("sessions", "reset", { sessionKey: key, reason: "cli" });
  if (p.options.json) io.out(JSON.stringify(result, null, 2));
  else io.out(`reset ${key}: new transcript ${result.session.sessionId} (the previous one, ${result.previousSessionId}, stays on disk)`);
  return EXIT.ok;
}

async function remove(bus: BusClient, key: string, p: ParsedCommand, io: SessionsIo): Promise<number> {
  const { session } = await bus.call("sessions", "get", { sessionKey: key });
  if (!session) throw notFound(key);
  if (p.options.yes !== true) {
    const answer = io.confirm ? await io.confirm(`delete ${key} and its transcript (${session.records} records)? [y/N] `) : null;
    if (answer === null) throw new CliError(`refusing to delete ${key} without confirmation: not on a terminal. Add --yes to delete it.`, EXIT.failed);
    if (!answer) {
      io.err("not deleted.");
      return EXIT.failed;
    }
  }
  const { deleted } = await bus.call("sessions", "delete", { sessionKey: key });
  if (!deleted) throw notFound(key);
  if (p.options.json) io.out(JSON.stringify({ deleted: true, sessionKey: key }));
  else io.out(`deleted ${key}`);
  return EXIT.ok;
}

/** A y/N question on the terminal; null when stdin or stderr is not a TTY. */
export async function ttyConfirm(question: string): Promise<boolean | null> {
  if (!process.stdin.isTTY || !process.stderr.isTTY) return null;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(question);
    return /^\s*y(es)?\s*$/i.test(answer);
  } finally {
    rl.close();
  }
}

// --- rendering --------------------------------------------------------------------------------

export function formatSessionList(sessions: SessionEntry[]): string {
  if (sessions.length === 0) return "no sessions\n";
  const rows = sessions.map((s) => [s.sessionKey, s.sessionType, s.channel ?? "-", String(s.records), String(s.usage.total), s.model ?? "-", formatTime(s.updatedAt)]);
  return table(["KEY", "TYPE", "CHANNEL", "RECORDS", "TOKENS", "MODEL", "UPDATED (UTC)"], rows, [3, 4]);
}

const preview = (text: string, max = PREVIEW_CHARS) => oneLine(text, max);

function textOf(content: Array<{ type: string; text?: string }>): string {
  return content.map((b) => (b.type === "text" ? b.text ?? "" : b.type === "image" ? "[image]" : b.type === "document" ? "[PDF]" : "")).filter(Boolean).join(" ");
}

/** One transcript record as readable lines: role or kind, a text preview, tool calls and results. */
export function formatRecord(r: TranscriptRecord): string[] {
  const head = `#${r.seq ?? "?"} ${formatTime(r.ts).slice(11)}`;
  const m = r.message;
  if (r.kind === "message" && m) {
    if (m.role === "user") return [`${head} user: ${preview(textOf(m.content))}`];
    if (m.role === "tool_result") return [`${head} tool_result ${m.toolName}${m.isError ? " (error)" : ""}: ${preview(textOf(m.content))}`];
    const lines: string[] = [];
    const text = m.content.filter((b) => b.type === "text").map((b) => b.text).join(" ");
    lines.push(`${head} assistant${text ? `: ${preview(text)}` : ""}${m.stopReason !== "end_turn" && m.stopReason !== "tool_use" ? ` [${m.stopReason}]` : ""}`);
    if (m.content.some((b) => b.type === "thinking")) lines.push("    (thinking)");
    for (const b of m.content) if (b.type === "tool_call") lines.push(`    → ${b.name}(${preview(JSON.stringify(b.args), 120)})`);
    return lines;
  }
  if (r.kind === "run_marker") return [`${head} run ${r.runStatus ?? "?"}${r.runId ? ` ${r.runId}` : ""}`];
  return [`${head} ${r.kind}${r.text ? `: ${preview(r.text)}` : ""}`];
}

export function formatSessionShow(s: SessionEntry, records: TranscriptRecord[]): string {
  const u = s.usage;
  const lines = [
    `session  ${s.sessionKey}`,
    `id       ${s.sessionId}`,
    `agent    ${s.agentId} (${s.sessionType})${s.channel ? ` on ${s.channel}` : ""}`,
    `model    ${s.model ?? "-"}${s.thinking ? ` thinking ${s.thinking}` : ""}`,
    `tokens   ${u.total} (in ${u.input}, out ${u.output}, cache ${u.cacheRead}/${u.cacheWrite})${u.costUsd !== undefined ? ` $${u.costUsd.toFixed(4)}` : ""}`,
    `records  ${s.records}`,
    `created  ${formatTime(s.createdAt)} UTC, updated ${formatTime(s.updatedAt)} UTC`,
  ];
  if (s.label) lines.push(`label    ${s.label}`);
  if (s.parentSessionKey) lines.push(`parent   ${s.parentSessionKey}`);
  if (s.activeRunId) lines.push(`running  ${s.activeRunId}`);
  lines.push("");
  if (records.length === 0) lines.push("(empty transcript)");
  else {
    lines.push(records.length < s.records ? `newest ${records.length} of ${s.records} records:` : `${records.length} record${records.length === 1 ? "" : "s"}:`);
    for (const r of records) lines.push(...formatRecord(r));
  }
  return lines.join("\n") + "\n";
}
