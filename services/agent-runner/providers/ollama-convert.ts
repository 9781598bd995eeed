/**
 * The provider-neutral message model <-> Ollama's /api/chat messages and tools.
 * User images go as base64 `images` (Ollama cannot fetch URLs: a URL image becomes a text
 * note); assistant tool calls are sent back with their arguments as objects; tool results are
 * `role: "tool"` messages with `tool_name` (Ollama has no call ids). Thinking is not sent back.
 * Ollama takes no PDFs: a document block is its "no extractable text" note (pdf-input.ts).
 * Ollama's tool calls carry no ids, so every call gets a fresh random id here.
 */
import { randomBytes } from "node:crypto";
import type { Message, Tool, ToolCall } from "ollama";
import type { LlmMessage, ToolDefinition } from "../../../shared/contract/index.js";
import { toolCallFromJson } from "./json-repair.js";
import type { ToolCallBlock } from "./types.js";
import { pdfFallbackNote } from "../pdf-input.js";

type Block = LlmMessage["content"][number];

/** A unique tool call id (Ollama gives none): `call_` + 16 random url-safe characters. */
export function newToolCallId(): string {
  return `call_${randomBytes(12).toString("base64url")}`;
}

function textAndImages(blocks: Block[]): { text: string; images: string[] } {
  const texts: string[] = [];
  const images: string[] = [];
  for (const b of blocks) {
    if (b.type === "text") texts.push(b.text);
    else if (b.type === "document") texts.push(pdfFallbackNote(b));
    else if (b.type === "image") {
      if (b.dataBase64) images.push(b.dataBase64);
      else if (b.url) texts.push(`[image ${b.mime}: ${b.url}]`);
    }
  }
  return { text: texts.join("\n"), images };
}

export function toOllamaMessages(system: string, messages: LlmMessage[]): Message[] {
  const out: Message[] = [];
  if (system) out.push({ role: "system", content: system });
  for (const m of messages) {
    if (m.role === "user") {
      const { text, images } = textAndImages(m.content);
      out.push(images.length > 0 ? { role: "user", content: text, images } : { role: "user", content: text });
    } else if (m.role === "assistant") {
      const text = m.content.map((b) => (b.type === "text" ? b.text : "")).join("");
      const calls: ToolCall[] = [];
      for (const b of m.content) if (b.type === "tool_call") calls.push({ function: { name: b.name, arguments: b.args } });
      out.push(calls.length > 0 ? { role: "assistant", content: text, tool_calls: calls } : { role: "assistant", content: text });
    } else {
      const { text, images } = textAndImages(m.content);
      const msg: Message = { role: "tool", content: text === "" ? "(no output)" : text, tool_name: m.toolName };
      if (images.length > 0) msg.images = images;
      out.push(msg);
    }
  }
  return out;
}

export function toOllamaTools(tools: ToolDefinition[]): Tool[] {
  return tools.map((t) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.parameters as NonNullable<Tool["function"]["parameters"]> },
  }));
}

/** One tool call of a chunk as a ToolCallBlock: arguments must be an object (a JSON string is parsed). */
export function fromOllamaToolCall(call: unknown): ToolCallBlock {
  const id = newToolCallId();
  const fn = (call as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
  const name = typeof fn?.name === "string" ? fn.name : "";
  if (!name) return { type: "tool_call", id, name: "missing_tool_name", args: {}, argsError: "the tool call has no function name" };
  const raw = fn?.arguments;
  if (raw === undefined || raw === null) return { type: "tool_call", id, name, args: {} };
  if (typeof raw === "string") return toolCallFromJson(id, name, raw);
  if (typeof raw !== "object" || Array.isArray(raw)) {
    return { type: "tool_call", id, name, args: {}, argsError: `the tool arguments are not an object (got ${Array.isArray(raw) ? "an array" : typeof raw})` };
  }
  return { type: "tool_call", id, name, args: raw as Record<string, unknown> };
}
