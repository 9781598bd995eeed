/**
 * The text a voice reply speaks: the reply's markdown as plain sentences (`speechText`: code
 * blocks, URLs, markup and table rules left out, link texts kept), and a text longer than
 * tts.maxChars made to fit (`fitForSpeech`): summarized by one model call when tts.summarize is
 * on and a summarizer is given, else, or when the summary fails or is still too long, cut at the
 * last sentence end within the limit (a word end when there is none in its second half).
 * `fitForSpeech` never throws: a failed summary is logged and the text is cut.
 */
import { emptyUsage, LurkError, type Usage } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { Complete } from "./model-complete.js";

/** the most of a reply the summary call reads */
const SUMMARY_INPUT_CHARS = 24_000;

export function speechText(markdown: string): string {
  return markdown
    .replace(/```[\s\S]*?(```|$)/g, " ")
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[([^\]]+)\]\((?:[^)]*)\)/g, "$1")
    .replace(/<?https?:\/\/[^\s>)]*[^\s>).,;:!?]>?/g, "")
    .replace(/`([^`]*)`/g, "$1")
    .replace(/^[ \t]{0,3}#{1,6}[ \t]+/gm, "")
    .replace(/^[ \t]*>[ \t]?/gm, "")
    .replace(/^[ \t]*[-*+][ \t]+/gm, "")
    .replace(/^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$/gm, "")
    .replace(/^[ \t]*\|(.*)\|[ \t]*$/gm, (_m, cells: string) => cells.split("|").map((c) => c.trim()).filter(Boolean).join(", "))
    .replace(/\|/g, " ")
    .replace(/(\*\*|__|~~)(.+?)\1/g, "$2")
    .replace(/(^|[\s(])[*_]([^*_\n]+)[*_](?=[\s).,;:!?]|$)/g, "$1$2")
    .replace(/[ \t]+/g, " ")
    .replace(/ +([.,;:!?])/g, "$1")
    .replace(/ *\n[\s\n]*/g, "\n")
    .trim();
}

/** `text` cut to at most `max` characters at a sentence end (else a word end), with "…" when cut. */
export function cutAtSentence(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = text.slice(0, max - 1);
  let end = -1;
  for (const m of head.matchAll(/[.!?。！？](?=\s|$)/g)) end = m.index + 1;
  if (end >= max / 2) return head.slice(0, end).trim();
  const space = head.lastIndexOf(" ");
  return `${(space >= max / 2 ? head.slice(0, space) : head).trim()}…`;
}

export interface FittedSpeech {
  text: string;
  /** how it was shortened */
  how: "as is" | "summarized" | "cut";
  usage: Usage;
}

export async function fitForSpeech(text: string, max: number, summarize: Complete | undefined, log: Logger): Promise<FittedSpeech> {
  if (text.length <= max) return { text, how: "as is", usage: emptyUsage() };
  if (summarize) {
    try {
      const done = await summarize(
        "You rewrite an assistant's reply so it can be read aloud by a text-to-speech voice.",
        `Rewrite the reply below as a spoken summary of at most ${max} characters, in the reply's language: plain sentences, `
          + "no markdown, lists, tables, code or URLs. Keep the key facts, numbers and any question to the user. Answer with the summary only.\n\n"
          + `<reply>\n${text.slice(0, SUMMARY_INPUT_CHARS)}\n</reply>`,
      );
      const summary = speechText(done.text);
      if (summary) return { text: cutAtSentence(summary, max), how: "summarized", usage: done.usage };
    } catch (err) {
      log.warn({ err: LurkError.from(err) }, "could not summarize a long reply for speech; it is cut instead");
    }
  }
  return { text: cutAtSentence(text, max), how: "cut", usage: emptyUsage() };
}
