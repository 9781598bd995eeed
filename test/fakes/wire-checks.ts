/**
 * What the real provider APIs refuse in the content of a request, checked by the fake servers
 * (a 400 invalid_request_error with the message returned here; undefined: accepted). Only the
 * block and part types LurkBot sends are known: text, image, PDF documents and files, tool blocks.
 */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

type Block = { type?: unknown; source?: { type?: unknown; media_type?: unknown; data?: unknown }; file?: { file_data?: unknown; file_id?: unknown; filename?: unknown } };

const ANTHROPIC_USER = new Set(["text", "image", "document", "tool_result"]);
const ANTHROPIC_ASSISTANT = new Set(["text", "thinking", "redacted_thinking", "tool_use"]);

/** Anthropic Messages: block types per role; a `document` needs a base64 PDF source. */
export function anthropicContentError(messages: Array<{ role: string; content: unknown }>): string | undefined {
  for (const [i, m] of messages.entries()) {
    if (typeof m.content === "string") continue;
    const allowed = m.role === "assistant" ? ANTHROPIC_ASSISTANT : ANTHROPIC_USER;
    for (const [j, b] of (m.content as Block[]).entries()) {
      const at = `messages.${i}.content.${j}`;
      if (typeof b.type !== "string" || !allowed.has(b.type)) return `${at}: unexpected block type ${String(b.type)} in a ${m.role} message`;
      if (b.type !== "document") continue;
      const s = b.source;
      if (s?.type !== "base64" || s.media_type !== "application/pdf") return `${at}.source: a document's source must be base64 with media_type application/pdf`;
      if (typeof s.data !== "string" || s.data === "" || !BASE64.test(s.data)) return `${at}.source.data: not base64`;
    }
  }
  return undefined;
}

/**
 * OpenAI chat completions: an assistant message's tool calls must each be answered by a `tool`
 * message right after it (nothing else in between); user parts text, image_url and file; a file
 * needs a PDF data URL (or a file id).
 */
export function openaiContentError(messages: Array<{ role: string; content?: unknown; tool_calls?: Array<{ id?: unknown }>; tool_call_id?: unknown }>): string | undefined {
  let unanswered = new Set<unknown>();
  for (const [i, m] of messages.entries()) {
    if (unanswered.size > 0 && m.role !== "tool") {
      return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...unanswered].join(", ")} (messages[${i}] is a ${m.role} message)`;
    }
    if (m.role === "tool") {
      if (!unanswered.delete(m.tool_call_id)) return `Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages[${i}]).`;
    }
    if (m.role === "assistant") unanswered = new Set((m.tool_calls ?? []).map((c) => c.id));
  }
  for (const [i, m] of messages.entries()) {
    if (!Array.isArray(m.content)) continue;
    for (const [j, p] of (m.content as Block[]).entries()) {
      const at = `messages[${i}].content[${j}]`;
      const userOnly = p.type === "image_url" || p.type === "file";
      if (p.type !== "text" && !userOnly) return `Invalid value: '${String(p.type)}'. Supported values are: 'text', 'image_url' and 'file' (${at}.type).`;
      if (userOnly && m.role !== "user") return `${at}: ${String(p.type)} parts are only allowed in user messages.`;
      if (p.type !== "file") continue;
      const data = p.file?.file_data;
      if (typeof p.file?.file_id === "string") continue;
      const match = typeof data === "string" ? /^data:application\/pdf;base64,(.+)$/.exec(data) : null;
      if (!match || !BASE64.test(match[1]!)) return `Invalid file data: ${at}.file.file_data must be a base64 data URL of a PDF.`;
      if (typeof p.file?.filename !== "string") return `Missing required parameter: '${at}.file.filename'.`;
    }
  }
  return undefined;
}
