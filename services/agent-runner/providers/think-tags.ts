/**
 * Inline reasoning tags: models that write their reasoning into the answer text as
 * `<think>…</think>` (or `<thinking>…</thinking>`), e.g. MiniMax-M2 over an OpenAI-compatible API,
 * DeepSeek-R1 distills and QwQ served by vLLM or Ollama without a reasoning parser. The splitter
 * takes the streamed text in chunks of any size and hands back the pieces in order, each `text`
 * or `thinking`, so a tag split over chunks is still recognized and no part of a tag ever reaches
 * the text. Modes (shared/runtime/models.ts `reasoningTags`):
 *  - "on": every think block anywhere in the text is thinking; text before and after is kept;
 *    a `</think>` with no opening tag (a chat template that opens the block in the prompt, as
 *    DeepSeek-R1's does) makes everything before it thinking in the final message (`text` and
 *    `thinking` below; what already streamed as text deltas cannot be taken back);
 *  - "auto": as "on" when the message begins (after whitespace) with an opening tag, otherwise
 *    the text is passed on as it is (a tag later in an answer is the answer's);
 *  - "off": no splitting (callers do not make a splitter).
 * An unterminated block at the end is thinking. Whitespace right after an opening or closing tag
 * is dropped (models write `<think>\n…\n</think>\n\n answer`).
 * Cost on the stream's path: once "auto" has found no tag at the start (`passthrough`), the
 * providers stop pushing deltas through the splitter and append them as they are; a scan looks
 * at no more than a tag's length after each `<`.
 */

import type { ReasoningTags } from "../../../shared/runtime/models.js";
import type { ProviderStreamEvent } from "./types.js";

export type ReasoningTagMode = ReasoningTags;

export interface TagPiece {
  type: "text" | "thinking";
  text: string;
}

const OPEN = ["<think>", "<thinking>"];
const CLOSE = ["</think>", "</thinking>"];
const ANY = [...OPEN, ...CLOSE];
/** the longest tag: what a scan needs to see after a `<` */
const LONGEST = Math.max(...ANY.map((t) => t.length));

export class ThinkTagSplitter {
  /** the message's text and thinking so far (final values after end()) */
  text = "";
  thinking = "";
  private inThink = false;
  /** auto mode: undecided until the first non-whitespace characters show whether a tag opens the message */
  private decided: boolean;
  /** auto mode found no tag at the start: the rest of the message is text as it is (`text` holds all of it so far) */
  passthrough = false;
  private skipWs = false;
  private opened = false;
  private held = "";

  constructor(private readonly mode: Exclude<ReasoningTagMode, "off">) {
    this.decided = mode === "on";
    this.skipWs = mode === "on"; // leading whitespace of the message is not kept
  }

  push(chunk: string): TagPiece[] {
    if (!chunk) return [];
    const out: TagPiece[] = [];
    if (this.passthrough) {
      this.emit(out, "text", chunk);
      return out;
    }
    let buf = this.held + chunk;
    this.held = "";
    if (!this.decided) {
      const lead = buf.trimStart();
      if (lead === "" || OPEN.some((t) => t.startsWith(lead.toLowerCase()) && lead.length < t.length)) {
        this.held = buf; // not yet known
        return out;
      }
      this.decided = true;
      if (!OPEN.some((t) => lead.toLowerCase().startsWith(t))) {
        this.passthrough = true;
        this.emit(out, "text", buf);
        return out;
      }
      buf = lead;
    }
    this.scan(buf, out);
    return out;
  }

  /** The rest at the end of the message: an undecided start is text, a partial tag is what it was inside. */
  end(): TagPiece[] {
    const out: TagPiece[] = [];
    const rest = this.held;
    this.held = "";
    if (rest) this.emit(out, this.inThink ? "thinking" : "text", rest);
    return out;
  }

  private scan(buf: string, out: TagPiece[]): void {
    let i = 0;
    while (i < buf.length) {
      if (this.skipWs) {
        while (i < buf.length && /\s/.test(buf[i]!)) i++;
        if (i >= buf.length) return;
        this.skipWs = false;
      }
      const lt = buf.indexOf("<", i);
      if (lt < 0) {
        this.emit(out, this.inThink ? "thinking" : "text", buf.slice(i));
        return;
      }
      if (lt > i) this.emit(out, this.inThink ? "thinking" : "text", buf.slice(i, lt));
      // no tag is longer than LONGEST: a longer rest cannot be a partial one either
      const rest = buf.slice(lt, lt + LONGEST).toLowerCase();
      const tags = this.inThink ? CLOSE : ANY;
      const whole = tags.find((t) => rest.startsWith(t));
      if (whole) {
        if (OPEN.includes(whole)) {
          this.inThink = true;
          this.opened = true;
        } else if (this.inThink) {
          this.inThink = false;
        } else if (!this.opened && this.mode === "on") {
          // the block was opened by the prompt: what came before is reasoning
          this.thinking += this.text;
          this.text = "";
          this.opened = true;
        }
        // (a stray closing tag after a block is dropped)
        this.skipWs = true;
        i = lt + whole.length;
        continue;
      }
      if (tags.some((t) => t.startsWith(rest))) {
        this.held = buf.slice(lt); // a tag may be split across chunks
        return;
      }
      this.emit(out, this.inThink ? "thinking" : "text", "<");
      i = lt + 1;
    }
  }

  private emit(out: TagPiece[], type: TagPiece["type"], text: string): void {
    if (!text) return;
    if (type === "text") this.text += text;
    else this.thinking += text;
    const last = out[out.length - 1];
    if (last?.type === type) last.text += text;
    else out.push({ type, text });
  }
}

/** A splitter for the mode, or undefined for "off" (the text is kept as it is). */
export function thinkTagSplitter(mode: ReasoningTagMode | undefined): ThinkTagSplitter | undefined {
  const m = mode ?? "auto";
  return m === "off" ? undefined : new ThinkTagSplitter(m);
}

/** Split pieces as the provider's stream events. */
export function* pieces(list: TagPiece[]): Generator<ProviderStreamEvent> {
  for (const p of list) yield p.type === "text" ? { type: "text_delta", text: p.text } : { type: "thinking_delta", text: p.text };
}
