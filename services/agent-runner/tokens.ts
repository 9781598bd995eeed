/**
 * Token estimates without a tokenizer (seed 001 §3.10, seed 002 "CJK token estimation"):
 *  - CJK characters (Han, kana, Hangul, CJK and full-width punctuation) count 1 token each;
 *  - everything else 4 characters per token (rounded up);
 *  - every message adds MESSAGE_OVERHEAD_TOKENS (role and framing);
 *  - a tool call counts its name and its JSON arguments, an image IMAGE_TOKENS (its bytes are not text);
 *  - a tool definition counts its name, description and JSON schema.
 * Estimates are deliberately a little high; callers add SAFETY_MARGIN where it matters.
 */
import type { LlmMessage, ToolDefinition } from "../../shared/contract/index.js";

export const CHARS_PER_TOKEN = 4;
export const MESSAGE_OVERHEAD_TOKENS = 4;
export const TOOL_CALL_OVERHEAD_TOKENS = 8;
/** a typical image at the providers' default detail (OpenAI ~765 for 1024², Anthropic ~1600 max) */
export const IMAGE_TOKENS = 1_000;

const CJK_CHAR = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3000-\u303F\uFF00-\uFFEF]/gu;
/** every CJK_CHAR lies in these ranges (Hangul Jamo, U+2E80 and up, astral planes): text without them has none */
const MAYBE_CJK = /[\u1100-\u11FF\u2E80-\uFFFF\uD800-\uDBFF]/;

export function estimateTextTokens(text: string): number {
  if (!text) return 0;
  if (!MAYBE_CJK.test(text)) return Math.ceil(text.length / CHARS_PER_TOKEN);
  let cjk = 0;
  let cjkUnits = 0;
  for (const m of text.matchAll(CJK_CHAR)) {
    cjk++;
    cjkUnits += m[0].length;
  }
  return cjk + Math.ceil((text.length - cjkUnits) / CHARS_PER_TOKEN);
}

/** what one page of a PDF sent as the PDF itself is counted as */
const PDF_PAGE_TOKENS = 1_500;

export function estimateMessageTokens(message: LlmMessage): number {
  let total = MESSAGE_OVERHEAD_TOKENS;
  if (message.role === "tool_result") total += estimateTextTokens(message.toolName);
  for (const block of message.content) {
    if (block.type === "text" || block.type === "thinking") total += estimateTextTokens(block.text);
    else if (block.type === "image") total += IMAGE_TOKENS;
    // a PDF read as pages: about an image and its text per page
    else if (block.type === "document") total += PDF_PAGE_TOKENS * Math.max(1, block.pages ?? 1);
    else if (block.type === "tool_call") total += TOOL_CALL_OVERHEAD_TOKENS + estimateTextTokens(block.name) + estimateTextTokens(JSON.stringify(block.args));
  }
  return total;
}

export function estimateMessagesTokens(messages: readonly LlmMessage[]): number {
  let total = 0;
  for (const m of messages) total += estimateMessageTokens(m);
  return total;
}

/** per tool definition object: a cached catalog hands runs the same objects */
const toolTokens = new WeakMap<ToolDefinition, number>();

export function estimateToolsTokens(tools: readonly ToolDefinition[]): number {
  let total = 0;
  for (const t of tools) {
    let n = toolTokens.get(t);
    if (n === undefined) {
      n = TOOL_CALL_OVERHEAD_TOKENS + estimateTextTokens(t.name) + estimateTextTokens(t.description) + estimateTextTokens(JSON.stringify(t.parameters ?? {}));
      toolTokens.set(t, n);
    }
    total += n;
  }
  return total;
}

/** The whole prompt of one model call: system prompt, tool definitions, messages. */
export function estimatePromptTokens(system: string, tools: readonly ToolDefinition[], messages: readonly LlmMessage[]): number {
  return estimateTextTokens(system) + estimateToolsTokens(tools) + estimateMessagesTokens(messages);
}
