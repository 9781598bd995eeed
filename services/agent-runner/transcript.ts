/**
 * Transcript records <-> LLM messages, and what a redelivered run already did.
 *  - `message` records are sent as they are, a user's chat message with its platform id after it
 *    (`[message_id: …]`, from the input's `messageId`, kept in the record's meta: the `message`
 *    tool's react takes it); `system_event` becomes a user note prefixed
 *    "[system event]"; `compaction_summary` a user note; `context_note` and `run_marker` are
 *    app-only and never sent. Records before the latest compaction summary's kept part are
 *    not sent either (compaction-view.ts). Of a block of pending system events (recorded for
 *    the next run) only the newest 20 are sent, after a "(N older events dropped)" note
 *    (shared/runtime/system-events.ts).
 *  - every assistant tool call must be followed by its result: results are put in call order,
 *    orphan results are dropped, and calls of an interrupted run get an error result
 *    (except in the trailing group, which the loop is about to finish).
 */
import {
  addUsage, emptyUsage, recordIds, type Attachment, type Usage, type UsagePart, type AssistantMessage, type LlmMessage, type RunInput, type RunRequest, type ToolResultMessage, type TranscriptRecord, type UserMessage,
} from "../../shared/contract/index.js";
import { formatBytes } from "../../shared/runtime/media.js";
import { capPendingSystemEvents } from "../../shared/runtime/system-events.js";
import { oneLineText } from "../../shared/runtime/prompt-text.js";
import { compactedView, messageRecordIds, summaryNote } from "./compaction-view.js";
import { documentFormat, type DocumentFormat } from "./document-types.js";
import { NO_TEXT_PDF, pdfDocumentBlock } from "./pdf-input.js";
import { UsageTally } from "./usage-tally.js";

export function inputRecords(req: RunRequest, now = Date.now()): TranscriptRecord[] {
  return req.inputs.map((input, index) => inputRecord(recordIds.input(req.runId, index), req.runId, input, now));
}

function inputRecord(id: string, runId: string, input: RunInput, now: number, extraMeta: Record<string, unknown> = {}): TranscriptRecord {
  const metaFields = { ...(input.sourceId ? { sourceId: input.sourceId } : {}), ...(input.messageId && input.kind === "user" ? { messageId: input.messageId } : {}), ...extraMeta };
  const meta = Object.keys(metaFields).length > 0 ? metaFields : undefined;
  if (input.kind === "system_event") return { id, ts: now, runId, kind: "system_event", text: input.text, ...(meta ? { meta } : {}) };
  const content: UserMessage["content"] = [];
  if (input.text) content.push({ type: "text", text: input.text });
  for (const a of input.attachments) content.push(attachmentBlock(a));
  if (content.length === 0) content.push({ type: "text", text: "" });
  return { id, ts: now, runId, kind: "message", message: { role: "user", content }, ...(meta ? { meta } : {}) };
}

/** what the note says for a document whose extracted text is empty */
const NO_TEXT: Record<DocumentFormat, string> = {
  pdf: NO_TEXT_PDF,
  docx: "(the document has no text)",
  odt: "(the document has no text)",
  xlsx: "(the spreadsheet has no cells with values)",
  ods: "(the spreadsheet has no cells with values)",
  pptx: "(the presentation has no text)",
  odp: "(the presentation has no text)",
  doc: "(the document has no text)",
  xls: "(the spreadsheet has no cells with values)",
  ppt: "(the presentation has no text)",
};

/** the image types every provider takes (others, e.g. SVG or HEIC, go as files) */
export const MODEL_IMAGE_TYPES: ReadonlySet<string> = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);

/**
 * An image the model can see (by media ref, inline or URL: images.ts loads a ref's bytes for each
 * call), else a note naming the file: with a text file's content (inline-text.ts), a document's
 * extracted text (document-text.ts) or an audio file's transcript (transcribe.ts), or with its
 * media ref and the media_save tool that puts it in the workspace (and `textError`, why its text
 * could not be read, when set), or with the reason the channel could not store it. A scanned PDF
 * within the PDF input caps is a document block (pdf-input.ts: a note for models without PDF input).
 */
function attachmentBlock(a: Attachment): UserMessage["content"][number] {
  if (a.kind === "image" && MODEL_IMAGE_TYPES.has(a.mime) && !a.error && (a.ref || a.dataBase64 || a.url)) {
    return { type: "image", mime: a.mime, ...(a.ref ? { ref: a.ref } : a.dataBase64 ? { dataBase64: a.dataBase64 } : {}), ...(a.url && !a.ref ? { url: a.url } : {}), ...(a.ocrText !== undefined ? { ocrText: a.ocrText } : {}) };
  }
  const what = `${a.name ?? a.kind} (${a.mime}${a.size ? `, ${formatBytes(a.size)}` : ""})`;
  if (a.error) return { type: "text", text: `[attachment ${what} could not be received: ${a.error}]` };
  if (a.text !== undefined) {
    const format = documentFormat(a);
    const pdf = pdfDocumentBlock(a, format === "pdf");
    if (pdf) return pdf;
    if (format) return { type: "text", text: `[attachment ${what}${a.ref ? `, media ref ${a.ref}` : ""}; its extracted text:]\n${a.text.trim() || a.ocrText || NO_TEXT[format]}` };
    return { type: "text", text: `[attachment ${what}${a.ref ? `, media ref ${a.ref}` : ""}; its text:]\n${a.text}` };
  }
  if (a.transcript !== undefined) {
    return { type: "text", text: `[attachment ${what}${a.ref ? `, media ref ${a.ref}` : ""}; its transcript:]\n${a.transcript.trim() || "(no speech recognized)"}` };
  }
  const why = a.textError ? ` (${a.textError})` : "";
  if (a.ref) return { type: "text", text: `[attachment ${what}, media ref ${a.ref}${why}: the media_save tool saves it into the workspace]` };
  return { type: "text", text: `[attachment: ${what}${a.url ? ` ${a.url}` : ""}${why}]` };
}

export function recordsToMessages(records: TranscriptRecord[]): LlmMessage[] {
  const out: LlmMessage[] = [];
  // the latest compaction summary stands for the records it summarized (compaction-view.ts)
  const view = capPendingSystemEvents(compactedView(records));
  messageRecordIds.register(view);
  for (const r of view) {
    if (r.kind === "message" && r.message) {
      const message = withMessageId(r.message, r.meta?.messageId);
      if (message !== r.message) messageRecordIds.set(message, r.id); // the compactor names records by message object
      out.push(message);
    }
    else if (r.kind === "system_event" && r.text) out.push(note(`[system event] ${r.text}`));
    else if (r.kind === "compaction_summary" && r.text) out.push(summaryNote(r.text));
  }
  return out;
}

const note = (text: string): UserMessage => ({ role: "user", content: [{ type: "text", text }] });

/** A user's chat message with its platform id as a last text block (ids are the platform's: kept to one line). */
function withMessageId(message: LlmMessage, messageId: unknown): LlmMessage {
  if (message.role !== "user" || typeof messageId !== "string" || messageId === "") return message;
  return { ...message, content: [...message.content, { type: "text", text: `[message_id: ${oneLineText(messageId, 400)}]` }] };
}

/** Repairs tool call/result pairing (see the file comment). */
export function sanitizeMessages(messages: LlmMessage[]): LlmMessage[] {
  const out: LlmMessage[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role === "tool_result") continue; // only kept right after its assistant message (below)
    if (m.role === "assistant") {
      const calls = m.content.filter((b) => b.type === "tool_call");
      const hasText = m.content.some((b) => b.type === "text" && b.text !== "");
      if (calls.length === 0 && !hasText) continue;
      out.push(m);
      if (calls.length === 0) continue;
      const results = new Map<string, ToolResultMessage>();
      let j = i + 1;
      for (; j < messages.length && messages[j]!.role === "tool_result"; j++) {
        const r = messages[j] as ToolResultMessage;
        if (!results.has(r.toolCallId)) results.set(r.toolCallId, r);
      }
      const trailing = j >= messages.length;
      for (const call of calls) {
        const r = results.get(call.id);
        if (r) out.push(r);
        else if (!trailing) out.push({ role: "tool_result", toolCallId: call.id, toolName: call.name, isError: true, content: [{ type: "text", text: "Error: no result; the run was interrupted before this tool finished." }] });
      }
      i = j - 1;
      continue;
    }
    out.push(m);
  }
  return out;
}

export interface ResumeState {
  /** assistant turns already checkpointed for this run */
  turn: number;
  /** the last checkpointed assistant message still has tool calls to finish */
  pending?: { message: AssistantMessage; results: Map<string, ToolResultMessage> };
  /** the last checkpointed assistant message has no tool calls: the run's answer */
  finished?: AssistantMessage;
  /** LLM context: everything before `pending` (or before `finished`) */
  context: LlmMessage[];
  /** inputs taken mid-run after the last checkpointed assistant message (steering, follow-ups) */
  after: LlmMessage[];
  /** usage of the assistant messages already checkpointed for this run */
  usage: Usage;
  /** the same, by model (usage-tally.ts) */
  usageParts?: UsagePart[];
}

const turnOf = (r: TranscriptRecord, runId: string): number | undefined => {
  const fromMeta = r.meta?.turn;
  if (typeof fromMeta === "number") return fromMeta;
  const prefix = `${runId}:a:`;
  return r.id.startsWith(prefix) ? Number(r.id.slice(prefix.length)) || undefined : undefined;
};

/** Splits the transcript (older records + this run's records, in order) into context and progress. */
export function resumeState(runId: string, older: TranscriptRecord[], mine: TranscriptRecord[]): ResumeState {
  let lastIndex = -1;
  let turn = 0;
  let usage = emptyUsage();
  const tally = new UsageTally();
  mine.forEach((r, i) => {
    const t = r.kind === "message" && r.message?.role === "assistant" ? turnOf(r, runId) : undefined;
    if (t === undefined) return;
    usage = addUsage(usage, (r.message as AssistantMessage).usage ?? emptyUsage());
    tally.addMessage(r.message as AssistantMessage);
    if (t >= turn) {
      turn = t;
      lastIndex = i;
    }
  });
  if (lastIndex < 0) return { turn: 0, usage, usageParts: tally.list(), context: sanitizeMessages(recordsToMessages([...older, ...mine])), after: [] };
  const last = mine[lastIndex]!.message as AssistantMessage;
  const callIds = new Set(last.content.flatMap((b) => (b.type === "tool_call" ? [b.id] : [])));
  const results = new Map<string, ToolResultMessage>();
  const before: TranscriptRecord[] = [];
  const later: TranscriptRecord[] = [];
  const mailboxPrefix = recordIds.mailboxInput(runId, "");
  mine.forEach((r, i) => {
    if (i === lastIndex) return;
    const m = r.message;
    if (i > lastIndex && m?.role === "tool_result" && callIds.has(m.toolCallId)) results.set(m.toolCallId, m);
    else if (i > lastIndex && r.id.startsWith(mailboxPrefix)) later.push(r);
    else before.push(r);
  });
  const context = sanitizeMessages(recordsToMessages([...older, ...before]));
  const after = recordsToMessages(later);
  if (callIds.size > 0) return { turn, usage, usageParts: tally.list(), pending: { message: last, results }, context, after };
  // an answer followed by a taken follow-up is not the run's end: the loop goes on from there
  if (after.length > 0) return { turn, usage, usageParts: tally.list(), context: [...context, last], after };
  return { turn, usage, usageParts: tally.list(), finished: last, context, after: [] };
}

/** Transcript records of inputs taken from a run's mailbox (ids from the control message ids). */
export function mailboxInputRecords(runId: string, turn: number, inputs: { id: string; input: RunInput }[], now = Date.now()): TranscriptRecord[] {
  return inputs.map(({ id, input }) => inputRecord(recordIds.mailboxInput(runId, id), runId, input, now, { turn }));
}
