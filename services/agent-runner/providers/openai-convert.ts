/**
 * The provider-neutral message model -> OpenAI chat-completions messages and tools.
 * Assistant tool calls become `tool_calls` (arguments re-serialized), tool results become
 * `role: "tool"` messages; thinking blocks are not sent (chat completions has no field for them),
 * except with `replay` (a model that wants its inline reasoning back, e.g. MiniMax): that model's
 * own thinking goes before its text as `<think>…</think>`, as it wrote it.
 * A PDF (document block with its bytes) is a `file` part: its name and a base64 data URL.
 * Images a tool returned: a `tool` message takes only text, so each image is named there and
 * sent in one user message right after the turn's last tool message (never between two: the API
 * wants every tool message right after the assistant's calls), with a line saying which call
 * returned it. (A model without vision gets notes instead before this: vision-input.ts.)
 */
import type OpenAI from "openai";
import type { LlmMessage, ToolDefinition } from "../../../shared/contract/index.js";
import { pdfFallbackNote } from "../pdf-input.js";

type Param = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type UserPart = OpenAI.Chat.Completions.ChatCompletionContentPart;

export function toOpenAIMessages(system: string, messages: LlmMessage[], replay?: { provider: string; model: string }): Param[] {
  const out: Param[] = [];
  if (system) out.push({ role: "system", content: system });
  /** images of the tool messages since the last other message: sent after the last of them */
  let toolImages: UserPart[] = [];
  const flushToolImages = () => {
    if (toolImages.length === 0) return;
    out.push({ role: "user", content: toolImages });
    toolImages = [];
  };
  for (const m of messages) {
    if (m.role !== "tool_result") flushToolImages();
    if (m.role === "user") {
      const parts: UserPart[] = [];
      for (const block of m.content) {
        if (block.type === "text") parts.push({ type: "text", text: block.text });
        else if (block.type === "document") {
          if (block.dataBase64) parts.push({ type: "file", file: { filename: block.name ?? "document.pdf", file_data: `data:${block.mime};base64,${block.dataBase64}` } });
          else parts.push({ type: "text", text: pdfFallbackNote(block) });
        } else {
          const url = block.url ?? (block.dataBase64 ? `data:${block.mime};base64,${block.dataBase64}` : undefined);
          if (url) parts.push({ type: "image_url", image_url: { url } });
        }
      }
      const onlyText = parts.every((p) => p.type === "text");
      out.push({ role: "user", content: onlyText ? parts.map((p) => (p as { text: string }).text).join("\n") : parts });
    } else if (m.role === "assistant") {
      let text = m.content.filter((b) => b.type === "text").map((b) => b.text).join("");
      const thought = replay && m.provider === replay.provider && m.model === replay.model
        ? m.content.filter((b) => b.type === "thinking" && !b.redacted).map((b) => (b as { text: string }).text).join("\n") : "";
      if (thought) text = `<think>\n${thought}\n</think>\n\n${text}`;
      const calls = m.content.filter((b) => b.type === "tool_call");
      const param: OpenAI.Chat.Completions.ChatCompletionAssistantMessageParam = { role: "assistant", content: text };
      if (calls.length > 0) {
        param.tool_calls = calls.map((c) => ({ id: c.id, type: "function" as const, function: { name: c.name, arguments: JSON.stringify(c.args) } }));
        if (text === "") param.content = null;
      }
      out.push(param);
    } else {
      const images = m.content.flatMap((b) => (b.type === "image" && (b.url || b.dataBase64) ? [b.url ?? `data:${b.mime};base64,${b.dataBase64}`] : []));
      const text = m.content.map((b) => (b.type === "text" ? b.text : b.url || b.dataBase64 ? `[image ${b.mime}: in the user message after the tool results]` : `[image ${b.mime}]`)).join("\n");
      out.push({ role: "tool", tool_call_id: m.toolCallId, content: text === "" ? "(no output)" : text });
      if (images.length > 0) {
        toolImages.push({ type: "text", text: `[the image${images.length > 1 ? "s" : ""} the ${m.toolName} call ${m.toolCallId} returned:]` });
        for (const url of images) toolImages.push({ type: "image_url", image_url: { url } });
      }
    }
  }
  flushToolImages();
  return out;
}

export function toOpenAITools(tools: readonly ToolDefinition[]): OpenAI.Chat.Completions.ChatCompletionTool[] {
  return tools.map((t) => ({
    type: "function" as const,
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
}
