/**
 * `lurkbot sessions export KEY [--format jsonl|md] [--out FILE] [--session-id ID]`: a session's
 * whole transcript, every transcript of it (oldest first: those earlier resets ended, then the
 * current one) or only `--session-id`. Records are read in windows of PAGE seqs through
 * `sessions.history` (`beforeSeq`; a reply too large for one bus message comes back `truncated`
 * and the rest of the window is asked for again), and written as they arrive: JSON Lines (one
 * record per line, as stored) or Markdown. `--out` writes FILE (mode 0600) through a temporary
 * file renamed at the end, so a failed export leaves no partial file.
 */
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync, fchmodSync } from "node:fs";
import { LurkError, type SessionEntry, type TranscriptInfo, type TranscriptRecord } from "../../shared/contract/index.js";
import type { BusClient } from "../../shared/runtime/client.js";
import type { ParsedCommand } from "./args.js";
import { CliError, EXIT, UsageError } from "./errors.js";
import { oneLine, utcTime } from "./format.js";

/** seqs asked for per window (the bus reply may hold fewer: then the window is asked again for the rest) */
export const EXPORT_PAGE = 500;

export interface ExportIo {
  /** progress and notes (stderr) */
  err(line: string): void;
  /** the export's text when there is no --out (stdout) */
  write(text: string): Promise<void>;
}

/** Writes to stdout, waiting while the pipe is full (a large export into `| gzip`). */
export function writeStdout(text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (process.stdout.write(text)) resolve();
    else {
      const onError = (err: Error) => reject(err);
      process.stdout.once("error", onError);
      process.stdout.once("drain", () => {
        process.stdout.off("error", onError);
        resolve();
      });
    }
  });
}

type Format = "jsonl" | "md";

export function exportFormat(p: ParsedCommand): Format {
  const format = (p.options.format as string | undefined) ?? "jsonl";
  if (format !== "jsonl" && format !== "md") throw new UsageError(`--format must be jsonl or md, not "${format}".`, "sessions");
  return format;
}

export async function exportSession(bus: BusClient, key: string, p: ParsedCommand, io: ExportIo): Promise<number> {
  const format = exportFormat(p);
  const only = p.options["session-id"] as string | undefined;
  const { session, transcripts: all } = await bus.call("sessions", "transcripts", { sessionKey: key });
  if (!session) throw new LurkError("NOT_FOUND", `no session ${key} (see \`lurkbot sessions list\`)`);
  let transcripts = all;
  if (only !== undefined) {
    transcripts = all.filter((t) => t.sessionId === only);
    if (transcripts.length === 0) {
      throw new LurkError("NOT_FOUND", `${key} has no transcript ${only}; its transcripts: ${all.map((t) => t.sessionId).join(", ") || "none"}`);
    }
  }
  const total = transcripts.reduce((n, t) => n + t.records, 0);
  const sink = openSink(p.options.out as string | undefined, io);
  let done = 0;
  try {
    if (format === "md") await sink.write(markdownHead(session, transcripts, total));
    for (const t of transcripts) {
      if (format === "md") await sink.write(markdownTranscriptHead(t, transcripts.length));
      for (let next = 0; next < t.records; next += EXPORT_PAGE) {
        const records = await readWindow(bus, key, t.sessionId, next, Math.min(t.records, next + EXPORT_PAGE));
        await sink.write(format === "jsonl" ? records.map((r) => JSON.stringify(r) + "\n").join("") : records.map(markdownRecord).join(""));
        done += records.length;
        if (total > EXPORT_PAGE) io.err(`exported ${done} of ${total} records`);
      }
    }
    const path = sink.finish();
    if (path) io.err(`wrote ${done} records of ${key} (${transcripts.length} transcript${transcripts.length === 1 ? "" : "s"}) to ${path} (mode 600)`);
  } catch (err) {
    sink.abandon();
    throw err;
  }
  return EXIT.ok;
}

/**
 * Records [from, to) of one transcript, oldest first. sessions.history answers the newest `limit`
 * before `beforeSeq`; a truncated reply keeps the newest that fit, so the older rest of the
 * window is asked for again until the window is complete or the transcript ends.
 */
export async function readWindow(bus: BusClient, sessionKey: string, sessionId: string, from: number, to: number): Promise<TranscriptRecord[]> {
  const pages: TranscriptRecord[][] = [];
  let before = to;
  while (before > from) {
    const page = await bus.call("sessions", "history", { sessionKey, sessionId, limit: before - from, beforeSeq: before });
    if (page.records.length === 0) break;
    pages.unshift(page.records);
    const oldest = page.records[0]!.seq;
    if (!page.truncated || oldest === undefined) break;
    before = oldest;
  }
  return pages.flat();
}

interface Sink {
  write(text: string): Promise<void>;
  /** the file's path once renamed into place (undefined for stdout) */
  finish(): string | undefined;
  abandon(): void;
}

function openSink(out: string | undefined, io: ExportIo): Sink {
  if (out === undefined) return { write: (text) => io.write(text), finish: () => undefined, abandon: () => undefined };
  const tmp = `${out}.tmp-${process.pid}`;
  let fd: number;
  try {
    fd = openSync(tmp, "w", 0o600);
  } catch (err) {
    throw new CliError(`cannot write ${out}: ${(err as Error).message.split(",")[0]}. Choose a writable path with --out.`);
  }
  fchmodSync(fd, 0o600);
  let closed = false;
  const close = () => {
    if (!closed) closeSync(fd);
    closed = true;
  };
  return {
    write: async (text) => {
      writeSync(fd, text);
    },
    finish: () => {
      fsyncSync(fd);
      close();
      renameSync(tmp, out);
      return out;
    },
    abandon: () => {
      close();
      rmSync(tmp, { force: true });
    },
  };
}

// --- Markdown -----------------------------------------------------------------------------------

function markdownHead(s: SessionEntry, transcripts: TranscriptInfo[], total: number): string {
  return [
    `# Session ${s.sessionKey}`,
    "",
    `- agent: ${s.agentId} (${s.sessionType})${s.channel ? `, channel ${s.channel}` : ""}`,
    `- created: ${utcTime(s.createdAt)}, updated ${utcTime(s.updatedAt)}`,
    `- transcripts: ${transcripts.length}, ${total} records`,
    `- exported: ${utcTime(Date.now())}`,
    "",
    "",
  ].join("\n");
}

function markdownTranscriptHead(t: TranscriptInfo, count: number): string {
  const span = t.firstTs !== undefined ? `, ${utcTime(t.firstTs)} to ${utcTime(t.lastTs ?? t.firstTs)}` : "";
  return `## Transcript ${t.sessionId}${t.current ? " (current)" : ""}\n\n_${t.records} records${span}${count > 1 && !t.current ? "; ended by a reset" : ""}_\n\n`;
}

function blocksText(content: ReadonlyArray<{ type: string; text?: string }>): string {
  return content.map((b) => (b.type === "text" ? b.text ?? "" : b.type === "image" ? "[image]" : b.type === "document" ? "[PDF]" : "")).filter(Boolean).join("\n\n");
}

/** One record as Markdown: user and assistant text in full, tool calls and results as short lines. */
export function markdownRecord(r: TranscriptRecord): string {
  const m = r.message;
  if (r.kind === "message" && m) {
    if (m.role === "user") return `**User** · ${utcTime(r.ts)}\n\n${blocksText(m.content)}\n\n`;
    if (m.role === "tool_result") return `- ← \`${m.toolName}\`${m.isError ? " (error)" : ""}: ${oneLine(blocksText(m.content), 160)}\n\n`;
    const text = blocksText(m.content.filter((b) => b.type === "text"));
    const calls = m.content.filter((b) => b.type === "tool_call").map((b) => `- → \`${b.name}\` ${oneLine(JSON.stringify(b.args), 160)}\n`);
    return `**Assistant** · ${utcTime(r.ts)}${m.model ? ` · ${m.model}` : ""}\n\n${text ? `${text}\n\n` : ""}${calls.length ? `${calls.join("")}\n` : ""}`;
  }
  if (r.kind === "run_marker") return r.runStatus === "error" || r.runStatus === "aborted" ? `_run ${r.runStatus} · ${utcTime(r.ts)}_\n\n` : "";
  if (r.kind === "compaction_summary") return `> **Summary of earlier turns** · ${utcTime(r.ts)}\n>\n${(r.text ?? "").split("\n").map((l) => `> ${l}`).join("\n")}\n\n`;
  return `_${r.kind.replace("_", " ")} · ${utcTime(r.ts)}_: ${oneLine(r.text ?? "", 400)}\n\n`;
}
