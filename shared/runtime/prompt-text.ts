/**
 * Text from outside (a platform display name, a subagent label, a skill's folder path) made fit
 * to stand in a prompt as data (the agent-runner's system prompt, the router's group context): `oneLineText` replaces line breaks, other control
 * characters, bidi overrides and isolates, zero-width and invisible tag characters with a space,
 * folds whitespace and caps the length (in code points, ending in "…"); `quotedText` is that as a
 * JSON string, so the text cannot close its quotes, end the sentence around it or start a line
 * (a fake heading) of its own.
 */

/** C0/C1 controls (line breaks included), LS/PS, the ALM, LRM/RLM and ZWSP, bidi embeddings, overrides and isolates, word joiner, BOM, Unicode tag characters */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u2069\ufeff\u{e0000}-\u{e007f}]/gu;

/** a platform-supplied name in a prompt is at most this long */
export const PROMPT_NAME_MAX_CHARS = 64;

/** the unsafe characters replaced by spaces, nothing else changed (a path keeps its spacing) */
export function safeLine(text: string): string {
  return text.replace(UNSAFE, " ");
}

export function oneLineText(text: string, max: number): string {
  const flat = safeLine(text).replace(/\s+/g, " ").trim();
  const chars = [...flat];
  return chars.length > max ? `${chars.slice(0, Math.max(0, max - 1)).join("").trimEnd()}…` : flat;
}

export function quotedText(text: string, max: number): string {
  return JSON.stringify(oneLineText(text, max));
}
