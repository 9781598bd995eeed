/**
 * Context compaction (seed 001 §3.10, after MoltBot's compaction.ts): when a session's prompt
 * grows past a share of the model's context window, the older messages are summarized by the
 * model and replaced by the summary; the most recent ones stay verbatim.
 *  - Messages are grouped into units that are never split: an assistant message with tool calls
 *    together with its tool results; every other message alone.
 *  - The kept tail is the newest units up to contextWindow x the adaptive chunk ratio
 *    (BASE_CHUNK_RATIO, lowered toward MIN_CHUNK_RATIO when the average message is large), and
 *    at least `keepRecent` messages. `/compact` (forced) keeps only the `keepRecent` messages;
 *    after a context overflow the kept tail is also at most half the current estimate.
 *  - Summaries are made in stages: the older part is split by token share into chunks of at most
 *    contextWindow/4 (estimated x SAFETY_MARGIN), each chunk is summarized, and the partial
 *    summaries are merged by one more call (MERGE_SUMMARIES_INSTRUCTIONS).
 * Pure planning functions plus `summarizeInStages`, which takes the model call as a parameter.
 */
import { addUsage, emptyUsage, LurkError, type LlmMessage, type Usage } from "../../shared/contract/index.js";
import { isSummaryNote, SUMMARY_NOTE_PREFIX } from "./compaction-view.js";
import type { Complete } from "./model-complete.js";
import { estimateMessagesTokens } from "./tokens.js";

export const BASE_CHUNK_RATIO = 0.4;
export const MIN_CHUNK_RATIO = 0.15;
export const SAFETY_MARGIN = 1.2;
/** at most this many partial summaries (bigger chunks beyond it) */
export const MAX_SUMMARY_PARTS = 8;
export const SUMMARIZER_SYSTEM = "You are a conversation summarizer.";
export const MERGE_SUMMARIES_INSTRUCTIONS =
  "Merge these partial summaries into a single cohesive summary. Preserve decisions, TODOs, open questions, and any constraints.";
export const SUMMARIZE_INSTRUCTIONS = [
  "Summarize the following conversation, focusing on:",
  "1. Key decisions made",
  "2. Important information shared",
  "3. Unresolved tasks or questions",
  "4. Context needed for continuing the conversation",
  "",
  "Be concise but preserve essential information. Write in the language of the conversation.",
].join("\n");
/** characters of one message put into a summarizer prompt (an earlier summary gets more) */
const MESSAGE_CHARS = 2_000;
const TOOL_RESULT_CHARS = 1_000;
const SUMMARY_CHARS = 16_000;

/** Units that must stay together: an assistant message with tool calls and the tool results after it. */
export function groupUnits(messages: readonly LlmMessage[]): LlmMessage[][] {
  const units: LlmMessage[][] = [];
  for (const m of messages) {
    const last = units.at(-1);
    const lastHead = last?.[0];
    if (m.role === "tool_result" && lastHead?.role === "assistant" && lastHead.content.some((b) => b.type === "tool_call")) last!.push(m);
    else units.push([m]);
  }
  return units;
}

/** Seed 001: shrink the kept share when the average message is large (> 10% of the window). */
export function computeAdaptiveChunkRatio(messages: readonly LlmMessage[], contextWindow: number): number {
  if (messages.length === 0) return BASE_CHUNK_RATIO;
  const avgRatio = ((estimateMessagesTokens(messages) / messages.length) * SAFETY_MARGIN) / contextWindow;
  if (avgRatio > 0.1) {
    const reduction = Math.min(avgRatio * 2, BASE_CHUNK_RATIO - MIN_CHUNK_RATIO);
    return Math.max(MIN_CHUNK_RATIO, Math.round((BASE_CHUNK_RATIO - reduction) * 1e6) / 1e6);
  }
  return BASE_CHUNK_RATIO;
}

/** Splits units into at most `parts` chunks of about equal tokens (a unit is never split). */
export function splitByTokenShare(units: readonly LlmMessage[][], parts: number): LlmMessage[][] {
  if (units.length === 0) return [];
  const target = units.reduce((n, u) => n + estimateMessagesTokens(u), 0) / parts;
  const chunks: LlmMessage[][] = [];
  let current: LlmMessage[] = [];
  let tokens = 0;
  for (const unit of units) {
    const t = estimateMessagesTokens(unit);
    if (chunks.length < parts - 1 && current.length > 0 && tokens + t > target) {
      chunks.push(current);
      current = [];
      tokens = 0;
    }
    current.push(...unit);
    tokens += t;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

export interface CompactionPlan {
  /** summarized */
  older: LlmMessage[];
  /** kept verbatim, after the summary */
  kept: LlmMessage[];
  ratio: number;
}

/** The split of a context into summarized and kept messages; undefined when there is nothing to summarize. */
export function planCompaction(messages: readonly LlmMessage[], opts: { contextWindow: number; keepRecent: number; forced?: boolean; maxKeepTokens?: number }): CompactionPlan | undefined {
  const units = groupUnits(messages);
  const ratio = computeAdaptiveChunkRatio(messages, opts.contextWindow);
  const target = opts.forced ? 0 : Math.min(Math.floor(opts.contextWindow * ratio), opts.maxKeepTokens ?? Infinity);
  let i = units.length;
  let keptTokens = 0;
  let keptMessages = 0;
  while (i > 0) {
    const unit = units[i - 1]!;
    const t = estimateMessagesTokens(unit);
    if (keptMessages >= opts.keepRecent && keptTokens + t > target) break;
    keptTokens += t;
    keptMessages += unit.length;
    i--;
  }
  const older = units.slice(0, i).flat();
  if (older.length === 0 || (older.length === 1 && isSummaryNote(older[0]!))) return undefined;
  return { older, kept: units.slice(i).flat(), ratio };
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)} [...]` : text);

/** A message as a line of the summarizer's transcript. */
export function formatForSummary(m: LlmMessage): string {
  if (m.role === "tool_result") {
    const text = m.content.map((b) => (b.type === "text" ? b.text : "[image]")).join(" ");
    return `Tool result (${m.toolName}${m.isError ? ", error" : ""}): ${clip(text, TOOL_RESULT_CHARS)}`;
  }
  if (m.role === "user") {
    const text = m.content.map((b) => (b.type === "text" ? b.text : "[image]")).join(" ");
    if (isSummaryNote(m)) return `Summary of the conversation before this: ${clip(text.slice(SUMMARY_NOTE_PREFIX.length), SUMMARY_CHARS)}`;
    return `User: ${clip(text, MESSAGE_CHARS)}`;
  }
  const parts: string[] = [];
  for (const b of m.content) {
    if (b.type === "text" && b.text) parts.push(clip(b.text, MESSAGE_CHARS));
    else if (b.type === "tool_call") parts.push(`[called ${b.name} ${clip(JSON.stringify(b.args), 300)}]`);
  }
  return `Assistant: ${parts.join(" ")}`;
}

export interface StagedSummary {
  text: string;
  usage: Usage;
  /** model calls made (chunks + merge) */
  calls: number;
  parts: number;
}

/** Seed 001 summarize_in_stages: chunk summaries, then one merge (see the file comment). */
export async function summarizeInStages(older: readonly LlmMessage[], complete: Complete, opts: { contextWindow: number; instructions?: string }): Promise<StagedSummary> {
  const units = groupUnits(older);
  const total = estimateMessagesTokens(older) * SAFETY_MARGIN;
  const maxChunkTokens = Math.max(256, Math.floor(opts.contextWindow / 4));
  const parts = Math.min(MAX_SUMMARY_PARTS, Math.max(1, Math.ceil(total / maxChunkTokens)));
  const chunks = parts === 1 ? [units.flat()] : splitByTokenShare(units, parts);
  const focus = opts.instructions ? `\n\nAlso follow these instructions: ${opts.instructions}` : "";
  let usage = emptyUsage();
  const partials: string[] = [];
  for (const chunk of chunks) {
    const prompt = `${SUMMARIZE_INSTRUCTIONS}${focus}\n\nConversation:\n${chunk.map(formatForSummary).join("\n")}`;
    const answer = await complete(SUMMARIZER_SYSTEM, prompt);
    usage = addUsage(usage, answer.usage);
    partials.push(answer.text);
  }
  if (partials.length === 0) throw new LurkError("INTERNAL", "nothing to summarize");
  if (partials.length === 1) return { text: partials[0]!, usage, calls: 1, parts: 1 };
  const prompt = `${MERGE_SUMMARIES_INSTRUCTIONS}${focus}\n\nSummaries:\n${partials.map((s, i) => `\n--- Part ${i + 1} ---\n${s}`).join("\n")}`;
  const merged = await complete(SUMMARIZER_SYSTEM, prompt);
  return { text: merged.text, usage: addUsage(usage, merged.usage), calls: partials.length + 1, parts: partials.length };
}

/** The prompt tokens above which a run compacts first: thresholdRatio of the window, and room for reserveTokens (at most half the window). */
export function compactionLimit(contextWindow: number, cfg: { thresholdRatio: number; reserveTokens: number }): number {
  return Math.floor(Math.min(contextWindow * cfg.thresholdRatio, contextWindow - Math.min(cfg.reserveTokens, contextWindow / 2)));
}
