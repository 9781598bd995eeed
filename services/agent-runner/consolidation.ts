/**
 * Memory consolidation (seed 004, NanoBot's memory window): when a session has `memory.window`
 * messages since its last consolidation, the older ones (all but the newest window/2) are given
 * to the run's model, which answers JSON {history_entry, memory_update}:
 *  - history_entry is appended to `<workspace>/memory/HISTORY.md` (a grep-able, timestamped log
 *    that memory_search indexes), tagged with the consolidation's id so a repeat appends nothing;
 *  - memory_update replaces `<workspace>/MEMORY.md` (written to a temporary file and renamed).
 * Then a `context_note` marker record (meta.consolidation and meta.throughId, never sent to the
 * model) is appended with a stable id: the next window counts the messages after throughId, and
 * a repeated consolidation is a duplicate.
 * Safety: a malformed answer, an empty memory_update for a non-empty MEMORY.md, or a MEMORY.md
 * changed during the call (the agent edited it) changes nothing; it is tried again after a later
 * run. It runs after the reply was delivered (never delays it), one at a time per session, and
 * only in private sessions (main, dm): shared chats never write the private memory.
 */
import { createHash, randomUUID } from "node:crypto";
import { appendFile, mkdir, readFile, rename, writeFile, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { z } from "zod";
import { safeParseJson, type SessionType, type TranscriptRecord } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { Complete } from "./model-complete.js";

export const MEMORY_FILE = "MEMORY.md";
export const HISTORY_FILE = join("memory", "HISTORY.md");
export const CONSOLIDATION_SESSION_TYPES: ReadonlySet<SessionType> = new Set(["main", "dm"]);
const MESSAGE_CHARS = 2_000;
const TOOL_RESULT_CHARS = 500;
const CONVERSATION_CHARS = 200_000;

export const CONSOLIDATION_SYSTEM = "You are a memory consolidation agent. Respond only with valid JSON.";

export const consolidationAnswerSchema = z.object({
  history_entry: z.string().trim().min(1).max(20_000),
  memory_update: z.string().max(1_000_000),
});
export type ConsolidationAnswer = z.infer<typeof consolidationAnswerSchema>;

/** The model's answer as JSON (a code fence or text around the object is tolerated); undefined when malformed. */
export function parseConsolidationAnswer(text: string): ConsolidationAnswer | undefined {
  const start = text.indexOf("{");
  const end = text.lastIndexOf("}");
  if (start < 0 || end <= start) return undefined;
  try {
    const parsed = consolidationAnswerSchema.safeParse(safeParseJson(text.slice(start, end + 1), { maxBytes: 2 * 1024 * 1024 }));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

const isMarker = (r: TranscriptRecord) => r.kind === "context_note" && r.meta?.consolidation === true;
const isMessage = (r: TranscriptRecord) => r.kind === "message" && r.message !== undefined;

/**
 * The records not yet consolidated: after the record the last marker went through (a marker is
 * appended at the end, after the kept half; if its record is no longer in the list, the whole
 * list is newer), markers left out.
 */
function pendingRecords(records: readonly TranscriptRecord[]): TranscriptRecord[] {
  let start = 0;
  for (let i = records.length - 1; i >= 0; i--) {
    if (isMarker(records[i]!)) {
      const through = records.findIndex((r) => r.id === records[i]!.meta?.throughId);
      start = through + 1;
      break;
    }
  }
  return records.slice(start).filter((r) => !isMarker(r));
}

/** Message records not yet consolidated. */
export function messagesSinceConsolidation(records: readonly TranscriptRecord[]): number {
  return pendingRecords(records).filter(isMessage).length;
}

export interface ConsolidationPlan {
  /** the records to consolidate, oldest first */
  records: TranscriptRecord[];
  /** the marker's stable id (from the last consolidated record) */
  markerId: string;
  throughId: string;
}

/** a session that ended with fewer new messages than this (a greeting) is not worth a model call */
const FINAL_MIN_MESSAGES = 4;

/**
 * What to consolidate now (see the file comment); undefined below the window. `final` (a session
 * that ended, /new): every message since the last consolidation, from FINAL_MIN_MESSAGES (or the
 * window, when smaller) on.
 */
export function planConsolidation(records: readonly TranscriptRecord[], window: number, final = false): ConsolidationPlan | undefined {
  const pending = pendingRecords(records);
  const messages = pending.filter(isMessage);
  if (messages.length < (final ? Math.min(window, FINAL_MIN_MESSAGES) : window)) return undefined;
  const through = final ? messages.at(-1)! : messages[messages.length - Math.floor(window / 2) - 1]!;
  const chosen = pending.slice(0, pending.indexOf(through) + 1).filter((r) => isMessage(r) || (r.kind === "system_event" && r.text));
  const hash = createHash("sha256").update(through.id).digest("hex").slice(0, 24);
  return { records: chosen, markerId: `consolidated:${hash}`, throughId: through.id };
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)} [...]` : text);
const stamp = (ts: number) => new Date(ts).toISOString().slice(0, 16).replace("T", " ");

/** NanoBot's format: `[YYYY-MM-DD HH:MM] ROLE: text [tools: a, b]` (UTC). */
export function formatConversation(records: readonly TranscriptRecord[]): string {
  const lines: string[] = [];
  for (const r of records) {
    const m = r.message;
    if (!m) {
      if (r.text) lines.push(`[${stamp(r.ts)}] EVENT: ${clip(r.text, MESSAGE_CHARS)}`);
      continue;
    }
    const text = m.content.map((b) => (b.type === "text" ? b.text : b.type === "image" ? "[image]" : b.type === "document" ? `[PDF ${b.name ?? ""}]` : "")).join(" ").trim();
    if (m.role === "tool_result") lines.push(`[${stamp(r.ts)}] TOOL ${m.toolName}: ${clip(text, TOOL_RESULT_CHARS)}`);
    else {
      const tools = m.role === "assistant" ? m.content.flatMap((b) => (b.type === "tool_call" ? [b.name] : [])) : [];
      if (!text && tools.length === 0) continue;
      lines.push(`[${stamp(r.ts)}] ${m.role.toUpperCase()}: ${clip(text, MESSAGE_CHARS)}${tools.length ? ` [tools: ${tools.join(", ")}]` : ""}`);
    }
  }
  const all = lines.join("\n");
  return all.length > CONVERSATION_CHARS ? all.slice(all.length - CONVERSATION_CHARS) : all;
}

export function consolidationPrompt(currentMemory: string, conversation: string): string {
  return `Process this conversation and return a JSON object with exactly two keys:

1. "history_entry": A paragraph (2-5 sentences) summarizing the key events/decisions/topics. Start with a timestamp like [YYYY-MM-DD HH:MM]. Include enough detail to be useful when found by grep search later.

2. "memory_update": The updated long-term memory content (Markdown). Add any new facts: user location, preferences, personal info, habits, project context, technical decisions, tools/services used. Keep every existing fact that is still true. If nothing new, return the existing content unchanged.

## Current Long-term Memory
${currentMemory.trim() || "(empty)"}

## Conversation to Process
${conversation}

Respond with ONLY valid JSON, no markdown fences.`;
}

export type ConsolidationResult = "below-window" | "done" | "malformed" | "memory-changed";

export interface ConsolidateDeps {
  workspace: string;
  window: number;
  records: readonly TranscriptRecord[];
  complete: Complete;
  append(records: TranscriptRecord[]): Promise<void>;
  log: Logger;
  now?: () => number;
  /** a transcript that ended (/new): all of it since the last consolidation (planConsolidation) */
  final?: boolean;
}

async function readText(path: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "";
    throw err;
  }
}

/** Write to a temporary file in the same folder, then rename over the target. */
export async function writeFileAtomic(path: string, content: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = join(dirname(path), `.${randomUUID()}.tmp`);
  try {
    await writeFile(tmp, content, { mode: 0o600 });
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** One consolidation if the session is past its window (see the file comment). */
export async function consolidate(deps: ConsolidateDeps): Promise<ConsolidationResult> {
  const plan = planConsolidation(deps.records, deps.window, deps.final);
  if (!plan) return "below-window";
  const memoryPath = join(deps.workspace, MEMORY_FILE);
  const historyPath = join(deps.workspace, HISTORY_FILE);
  const memory = await readText(memoryPath);
  const answer = await deps.complete(CONSOLIDATION_SYSTEM, consolidationPrompt(memory, formatConversation(plan.records)));
  const parsed = parseConsolidationAnswer(answer.text);
  if (!parsed) {
    deps.log.warn({ chars: answer.text.length }, "memory consolidation: the model's answer is not the expected JSON; nothing changed");
    return "malformed";
  }
  if ((await readText(memoryPath)) !== memory) {
    deps.log.info("memory consolidation: MEMORY.md changed meanwhile; trying again after a later run");
    return "memory-changed";
  }
  const tag = `<!-- ${plan.markerId} -->`;
  const history = await readText(historyPath);
  if (!history.includes(tag)) {
    const now = deps.now?.() ?? Date.now();
    const entry = /^\s*\[\d{4}-\d{2}-\d{2}/.test(parsed.history_entry) ? parsed.history_entry.trim() : `[${stamp(now)}] ${parsed.history_entry.trim()}`;
    await mkdir(dirname(historyPath), { recursive: true });
    await appendFile(historyPath, `${history && !history.endsWith("\n") ? "\n" : ""}${entry}\n${tag}\n\n`, { mode: 0o600 });
  }
  const update = parsed.memory_update.trim();
  if (!update && memory.trim()) deps.log.warn("memory consolidation: the model returned an empty memory; MEMORY.md kept as it was");
  else if (update !== memory.trim()) await writeFileAtomic(memoryPath, `${update}\n`);
  await deps.append([{
    id: plan.markerId, ts: deps.now?.() ?? Date.now(), kind: "context_note",
    text: `memory consolidated: ${plan.records.length} records through ${plan.throughId}`,
    meta: { consolidation: true, throughId: plan.throughId, records: plan.records.length },
  }]);
  deps.log.info({ records: plan.records.length, memoryChars: update.length }, "memory consolidated");
  return "done";
}
