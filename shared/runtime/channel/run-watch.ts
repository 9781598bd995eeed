/**
 * Streaming a run to a platform. A channel knows the run of a message before publishing it:
 * `runIdFor(channel, platformMessageId)` (the router derives it the same way), so it subscribes
 * `lurk.run.evt.<runId>.>` first, then publishes the inbound message. From the run's events:
 * - `onDraft(text)`: the current turn's text so far, coalesced and rate-limited, for channels
 *   that edit a placeholder message while the model writes (Telegram, Discord, Slack, web);
 *   a new turn (after tool calls) starts a new draft text;
 * - `onAppend(delta)`: append-only text (SSE), turns separated by a blank line;
 * - `onBlock(text)`: block streaming: each finished paragraph of a turn (a blank line after it,
 *   outside a code fence) once, and the rest of a turn when the turn's message ends;
 * - `onEnd(end)`: the terminal event (done/error). The final text is still DELIVERED through
 *   the outbound stream (exactly once, with chunking); drafts are a preview.
 * Text that could still become the silent token (NO_REPLY) is held back, so a silent run never
 * shows it. Events are core NATS (at most once): a lost delta only makes a draft lag.
 */
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { runEventSchema, safeParseJson, subjects, type RunEvent } from "../../contract/index.js";
import { finishedBlocksEnd } from "./chunk.js";
import { isSilentReply, mayBecomeSilent } from "./reply.js";

export type RunEnd =
  | { status: "done"; text: string; silent: boolean; usage: Extract<RunEvent["event"], { kind: "done" }>["usage"] }
  | { status: "error"; code: string; message: string };

export interface RunWatchOptions {
  onDraft?: (text: string) => void | Promise<void>;
  onAppend?: (delta: string) => void;
  onBlock?: (text: string) => void;
  onEvent?: (event: RunEvent) => void;
  onEnd?: (end: RunEnd) => void;
  /** least time between two drafts (platform edit rate limits), ms */
  draftIntervalMs?: number;
  /** least new characters before another draft */
  draftMinChars?: number;
}

export interface RunWatch {
  runId: string;
  /** resolves on the terminal event */
  ended: Promise<RunEnd>;
  stop(): void;
}

/** Subscribes to one run's events; call `await nc.flush()` before publishing the message. */
export function watchRun(nc: NatsConnection, prefix: string, runId: string, opts: RunWatchOptions): RunWatch {
  const interval = opts.draftIntervalMs ?? 1_000;
  const minChars = opts.draftMinChars ?? 1;
  let turn = 0;
  let turnText = "";
  /** how much of turnText went to onAppend */
  let appended = 0;
  let anyAppended = false;
  /** how much of turnText went to onBlock */
  let blocked = 0;
  let lastDraft = "";
  let lastDraftAt = 0;
  let draftTimer: NodeJS.Timeout | undefined;
  let draftBusy = false;
  let lastSeq = -1;
  let resolveEnd!: (end: RunEnd) => void;
  const ended = new Promise<RunEnd>((r) => (resolveEnd = r));
  let done = false;

  const flushDraft = async () => {
    draftTimer = undefined;
    if (done || !opts.onDraft || draftBusy) return;
    const text = turnText;
    if (text === lastDraft || mayBecomeSilent(text)) return;
    draftBusy = true;
    lastDraft = text;
    lastDraftAt = Date.now();
    try {
      await opts.onDraft(text);
    } catch {
      // a failed preview edit is not fatal
    } finally {
      draftBusy = false;
    }
    if (turnText !== lastDraft) scheduleDraft();
  };
  const scheduleDraft = () => {
    if (!opts.onDraft || draftTimer || done) return;
    if (turnText.length - lastDraft.length < minChars && turnText.startsWith(lastDraft)) return;
    const wait = Math.max(0, lastDraftAt + interval - Date.now());
    draftTimer = setTimeout(() => void flushDraft(), wait);
  };
  const append = () => {
    if (!opts.onAppend || mayBecomeSilent(turnText) || appended >= turnText.length) return;
    let delta = turnText.slice(appended);
    if (appended === 0 && anyAppended) delta = `\n\n${delta}`;
    appended = turnText.length;
    anyAppended = true;
    opts.onAppend(delta);
  };
  /** hands the finished paragraphs (or, at the turn's end, all the rest) to onBlock */
  const emitBlocks = (turnEnded: boolean) => {
    if (!opts.onBlock || mayBecomeSilent(turnText) || (turnEnded && isSilentReply(turnText))) return;
    // only the text after the last block is scanned (it starts a line outside any fence), so a
    // delta costs its paragraph's length, not the turn's
    const end = turnEnded ? turnText.length : blocked + finishedBlocksEnd(turnText.slice(blocked));
    if (end <= blocked) return;
    const block = turnText.slice(blocked, end).trim();
    blocked = end;
    if (block) opts.onBlock(block);
  };
  const finish = (end: RunEnd) => {
    if (done) return;
    if (end.status === "done" && !end.silent) append();
    done = true;
    if (draftTimer) clearTimeout(draftTimer);
    sub.unsubscribe();
    opts.onEnd?.(end);
    resolveEnd(end);
  };

  const sub: Subscription = nc.subscribe(subjects(prefix).runEvents(runId), {
    callback: (err, msg) => {
      if (err || done) return;
      let event: RunEvent;
      try {
        event = runEventSchema.parse(safeParseJson(msg.data));
      } catch {
        return;
      }
      if (event.runId !== runId || event.seq <= lastSeq) return;
      lastSeq = event.seq;
      opts.onEvent?.(event);
      const e = event.event;
      if (e.kind === "turn_start" || (e.kind === "message_delta" && e.turn !== turn)) {
        const next = e.turn;
        if (next !== turn) {
          turn = next;
          turnText = "";
          appended = 0;
          blocked = 0;
          lastDraft = "";
        }
      }
      if (e.kind === "message_delta") {
        turnText += e.text;
        append();
        scheduleDraft();
        emitBlocks(false);
      } else if (e.kind === "message_end" && e.turn === turn && e.text.length >= turnText.length) {
        turnText = e.text;
        append();
        scheduleDraft();
        emitBlocks(true);
      } else if (e.kind === "done") {
        finish({ status: "done", text: e.text, silent: e.silent, usage: e.usage });
      } else if (e.kind === "error") {
        finish({ status: "error", code: e.code, message: e.message });
      }
    },
  });

  return { runId, ended, stop: () => { if (!done) { done = true; if (draftTimer) clearTimeout(draftTimer); sub.unsubscribe(); } } };
}
