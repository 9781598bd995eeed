/**
 * Splits a reply into platform-sized messages (seeds 5.5 `chunk_markdown_text`):
 * - "paragraph" (default): breaks at a blank line, else a line end, else a sentence end, else a space;
 * - "sentence": breaks at a sentence end, else a line end, else a space;
 * - "length": fills each chunk to the limit (a space near the end is still preferred).
 * A break inside a ``` fence, or inside a markdown table that fits in one chunk, is avoided when
 * any other break fits; such a fence or table that fits in one chunk but crosses the limit goes
 * whole into the next chunk. A fence longer than the limit is split, closed at the end of one
 * chunk and reopened (same info string) in the next; a longer table is cut at a row's end.
 * Every chunk has at most `limit` characters; no chunk is empty.
 */
import { tableSpans } from "./tables.js";

export type ChunkMode = "length" | "paragraph" | "sentence";

const FENCE_LINE = /^ {0,3}(`{3,}|~{3,})([^\n]*)$/gm;
/** a break is only taken when it keeps at least this share of the limit in the chunk */
const MIN_FILL = 0.3;

interface Fence {
  start: number;
  /** end of the closing fence line (text length when unclosed) */
  end: number;
  marker: string;
  info: string;
}

function fences(text: string): Fence[] {
  const out: Fence[] = [];
  let open: { start: number; marker: string; info: string } | null = null;
  for (const m of text.matchAll(FENCE_LINE)) {
    const marker = m[1]!;
    if (!open) open = { start: m.index, marker, info: m[2]!.trim() };
    else if (marker[0] === open.marker[0] && marker.length >= open.marker.length && m[2]!.trim() === "") {
      out.push({ ...open, end: m.index + m[0].length });
      open = null;
    }
  }
  if (open) out.push({ ...open, end: text.length });
  return out;
}

const insideFence = <F extends { start: number; end: number }>(pos: number, fs: F[]) => fs.find((f) => pos > f.start && pos < f.end);

function lastMatch(window: string, re: RegExp, minPos: number): number[] {
  const positions: number[] = [];
  for (const m of window.matchAll(re)) {
    const pos = m.index + m[0].length;
    if (pos >= minPos) positions.push(pos);
  }
  return positions.reverse();
}

const PARAGRAPH = /\n[ \t]*\n/g;
const LINE = /\n/g;
const SENTENCE = /[.!?。！？…](?:["')\]]*)(?=\s)|[。！？]/g;
const SPACE = /\s/g;

function candidates(window: string, mode: ChunkMode, minPos: number): number[] {
  const order = mode === "paragraph" ? [PARAGRAPH, LINE, SENTENCE, SPACE] : mode === "sentence" ? [SENTENCE, LINE, SPACE] : [SPACE];
  return order.flatMap((re) => lastMatch(window, re, minPos));
}

/** Splits `text` into chunks of at most `limit` characters. */
export function chunkText(text: string, limit: number, mode: ChunkMode = "paragraph"): string[] {
  if (!Number.isFinite(limit) || limit <= 0) return text.trim() ? [text] : [];
  if (limit < 16) throw new RangeError("chunk limit must be at least 16 characters");
  const chunks: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const fs = fences(rest);
    // spans kept whole when possible: fences, and tables that fit in one chunk
    const keep: { start: number; end: number }[] = [...fs, ...tableSpans(rest).filter((t) => t.end - t.start <= limit)];
    const window = rest.slice(0, limit + 1);
    const minPos = Math.floor(limit * MIN_FILL);
    let cut = candidates(window, mode, minPos).find((pos) => pos <= limit && !insideFence(pos, keep));
    if (cut === undefined) {
      // a fence or table that fits in one chunk but crosses the limit starts the next chunk
      const whole = keep.find((f) => f.start > 0 && f.start <= limit && f.end > limit && f.end - f.start <= limit && rest.slice(0, f.start).trim() !== "");
      // else a fence start after minPos is a clean break too
      const nextFence = whole ?? fs.find((f) => f.start >= minPos && f.start <= limit);
      if (nextFence) cut = nextFence.start;
    }
    if (cut !== undefined) {
      const brokeAtLine = /\n[ \t]*$/.test(rest.slice(0, cut));
      const head = rest.slice(0, cut).replace(/\s+$/, "");
      const tail = rest.slice(cut);
      // keep the indentation of a line that starts the next chunk
      rest = brokeAtLine ? tail.replace(/^([ \t]*\n)+/, "") : tail.replace(/^\s+/, "");
      if (head) chunks.push(head);
      continue;
    }
    // no clean break: cut at the limit (inside a fence: close it here, reopen it in the next chunk)
    const fenceAtLimit = insideFence(limit - 4, fs);
    if (fenceAtLimit) {
      const close = `\n${fenceAtLimit.marker}`;
      const room = limit - close.length;
      const inner = rest.slice(0, room);
      const lineEnd = inner.lastIndexOf("\n");
      const at = lineEnd > fenceAtLimit.start + fenceAtLimit.marker.length + fenceAtLimit.info.length + 1 ? lineEnd : safeCut(rest, room);
      chunks.push(rest.slice(0, at).replace(/\n$/, "") + close);
      rest = `${fenceAtLimit.marker}${fenceAtLimit.info}\n${rest.slice(at).replace(/^\n/, "")}`;
      continue;
    }
    const at = safeCut(rest, limit);
    chunks.push(rest.slice(0, at));
    rest = rest.slice(at);
  }
  if (rest.trim()) chunks.push(rest);
  return chunks;
}

/**
 * Where the finished blocks of a text being written end: just after its last paragraph break
 * (a blank line) outside a ``` fence; 0 when no block is finished yet. Block streaming sends
 * `text.slice(0, end)` while the model still writes the rest.
 */
export function finishedBlocksEnd(text: string): number {
  const fs = fences(text);
  let end = 0;
  for (const m of text.matchAll(PARAGRAPH)) {
    const pos = m.index + m[0].length;
    if (!insideFence(m.index, fs)) end = pos;
  }
  return end;
}

/** `limit`, moved back one place when it would split a surrogate pair. */
function safeCut(text: string, limit: number): number {
  const code = text.charCodeAt(limit - 1);
  return code >= 0xd800 && code <= 0xdbff ? limit - 1 : limit;
}
