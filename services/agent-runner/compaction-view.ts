/**
 * What the model sees of a compacted transcript. A `compaction_summary` record S (appended when a
 * session was compacted) carries `meta.firstKeptId`, the record id of the oldest message kept
 * verbatim. The view of a record list is: S (as a summary note), then every record from
 * firstKeptId on, in order; records before it and older summaries are no longer sent. Without
 * firstKeptId (everything was summarized) the view continues after S. When firstKeptId is not
 * in the list (a resumed run holds its last turn apart), the view starts after
 * `meta.lastSummarizedId`; when neither is, both lie before the list's window: all is kept.
 *
 * The compactor works on LLM messages but must name a boundary record: `messageRecordIds`
 * remembers which record each message object came from (filled when records become messages
 * and when the run checkpoints its own messages).
 */
import type { LlmMessage, TranscriptRecord, UserMessage } from "../../shared/contract/index.js";

export const SUMMARY_NOTE_PREFIX = "[summary of the earlier conversation] ";

const recordIdOf = new WeakMap<object, string>();

export const messageRecordIds = {
  set(message: LlmMessage, recordId: string): void {
    recordIdOf.set(message, recordId);
  },
  get(message: LlmMessage): string | undefined {
    return recordIdOf.get(message);
  },
  /** remembers the record ids of the `message` records of a list */
  register(records: readonly TranscriptRecord[]): void {
    for (const r of records) if (r.kind === "message" && r.message) recordIdOf.set(r.message, r.id);
  },
};

export function summaryNote(text: string): UserMessage {
  return { role: "user", content: [{ type: "text", text: `${SUMMARY_NOTE_PREFIX}${text}` }] };
}

export function isSummaryNote(message: LlmMessage): boolean {
  return message.role === "user" && message.content.length === 1 && message.content[0]!.type === "text" && message.content[0]!.text.startsWith(SUMMARY_NOTE_PREFIX);
}

/** The records the model sees (see the file comment). */
export function compactedView(records: readonly TranscriptRecord[]): readonly TranscriptRecord[] {
  let s = -1;
  for (let i = records.length - 1; i >= 0; i--) {
    if (records[i]!.kind === "compaction_summary" && records[i]!.text) {
      s = i;
      break;
    }
  }
  if (s < 0) return records;
  const summary = records[s]!;
  const firstKeptId = typeof summary.meta?.firstKeptId === "string" ? summary.meta.firstKeptId : undefined;
  const lastSummarizedId = typeof summary.meta?.lastSummarizedId === "string" ? summary.meta.lastSummarizedId : undefined;
  let start = s + 1;
  if (firstKeptId) {
    const kept = records.findIndex((r) => r.id === firstKeptId);
    const summarized = lastSummarizedId ? records.findIndex((r) => r.id === lastSummarizedId) : -1;
    start = kept >= 0 ? kept : summarized >= 0 ? summarized + 1 : 0;
  }
  const view: TranscriptRecord[] = [summary];
  for (let i = start; i < records.length; i++) if (records[i]!.kind !== "compaction_summary") view.push(records[i]!);
  return view;
}
