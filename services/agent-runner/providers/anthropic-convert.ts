/**
 * The provider-neutral message model -> Anthropic Messages API params.
 *  - the system prompt goes apart (`system`), as one text block with a cache mark;
 *  - assistant blocks keep their order; thinking blocks that carry a signature (or redacted
 *    data) from this provider and model are sent back verbatim, others are dropped (the API rejects
 *    thinking without a signature); with `unsigned` (a compatible endpoint such as MiniMax, whose
 *    thinking may carry none and which wants it back) that model's unsigned thinking goes back
 *    without a signature; tool calls become `tool_use` blocks;
 *  - tool results become `tool_result` blocks in a user message; consecutive messages of the
 *    same role are merged (the API wants user/assistant alternation);
 *  - a PDF (document block with its bytes) becomes a `document` block with a base64 source;
 *  - cache marks: the system prompt, the last tool definition and the last user message's
 *    last block (3 of the 4 breakpoints the API allows).
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { LlmMessage, ToolDefinition, UserMessage } from "../../../shared/contract/index.js";
import { pdfFallbackNote } from "../pdf-input.js";

/** tokens of Claude accounts (`claude setup-token`) are OAuth access tokens; the API wants this beta flag with them (the provider; `lurkbot auth probe`, auth-probe.ts) */
export const CLAUDE_OAUTH_TOKEN = /^sk-ant-oat\d*-/;
export const CLAUDE_OAUTH_BETA = "oauth-2025-04-20";

type Param = Anthropic.MessageParam;
type Block = Anthropic.ContentBlockParam;
type ImageMime = Anthropic.Base64ImageSource["media_type"];
type UserBlock = Anthropic.TextBlockParam | Anthropic.ImageBlockParam | Anthropic.DocumentBlockParam;

const EPHEMERAL = { type: "ephemeral" } as const;

export function toAnthropicSystem(system: string): Anthropic.TextBlockParam[] | undefined {
  return system ? [{ type: "text", text: system, cache_control: EPHEMERAL }] : undefined;
}

export function toAnthropicTools(tools: ToolDefinition[]): Anthropic.Tool[] {
  return tools.map((t, i) => ({
    name: t.name,
    description: t.description,
    input_schema: { ...t.parameters, type: "object" } as Anthropic.Tool.InputSchema,
    ...(i === tools.length - 1 ? { cache_control: EPHEMERAL } : {}),
  }));
}

function userBlocks(content: UserMessage["content"]): UserBlock[] {
  const out: UserBlock[] = [];
  for (const b of content) {
    if (b.type === "text") {
      if (b.text !== "") out.push({ type: "text", text: b.text });
    } else if (b.type === "document") {
      if (b.dataBase64) out.push({ type: "document", source: { type: "base64", media_type: "application/pdf", data: b.dataBase64 }, ...(b.name ? { title: b.name } : {}) });
      else out.push({ type: "text", text: pdfFallbackNote(b) });
    } else if (b.dataBase64) {
      out.push({ type: "image", source: { type: "base64", media_type: b.mime as ImageMime, data: b.dataBase64 } });
    } else if (b.url) {
      out.push({ type: "image", source: { type: "url", url: b.url } });
    }
  }
  return out;
}

export function toAnthropicMessages(messages: LlmMessage[], provider: string, model?: string, opts: { unsigned?: boolean } = {}): Param[] {
  const out: Array<{ role: "user" | "assistant"; content: Block[] }> = [];
  const push = (role: "user" | "assistant", blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    if (last?.role === role) last.content.push(...blocks);
    else out.push({ role, content: [...blocks] });
  };
  for (const m of messages) {
    if (m.role === "user") {
      push("user", userBlocks(m.content));
    } else if (m.role === "tool_result") {
      const content = userBlocks(m.content);
      push("user", [{
        type: "tool_result", tool_use_id: m.toolCallId,
        content: content.length > 0 ? content : [{ type: "text", text: "(no output)" }],
        ...(m.isError ? { is_error: true } : {}),
      }]);
    } else {
      const blocks: Block[] = [];
      // signatures are checked against the model that made them: another model's thinking is dropped
      const own = m.provider === provider && (model === undefined || m.model === model);
      for (const b of m.content) {
        if (b.type === "thinking") {
          if (!own) continue;
          if (!b.signature) {
            if (opts.unsigned && b.text && !b.redacted) blocks.push({ type: "thinking", thinking: b.text } as Anthropic.ThinkingBlockParam);
            continue;
          }
          blocks.push(b.redacted ? { type: "redacted_thinking", data: b.signature } : { type: "thinking", thinking: b.text, signature: b.signature });
        } else if (b.type === "text") {
          if (b.text !== "") blocks.push({ type: "text", text: b.text });
        } else if (b.type === "tool_call") {
          blocks.push({ type: "tool_use", id: b.id, name: b.name, input: b.args });
        } else if (b.dataBase64 || b.url) {
          // assistant images are not accepted by the API: describe them
          blocks.push({ type: "text", text: `[image ${b.mime}]` });
        }
      }
      push("assistant", blocks);
    }
  }
  // the API wants the conversation to start with a user turn
  if (out[0]?.role === "assistant") out.unshift({ role: "user", content: [{ type: "text", text: "(earlier conversation)" }] });
  markLastUser(out);
  return out;
}

/** Puts a cache mark on the last block of the last user message. */
function markLastUser(messages: Array<{ role: "user" | "assistant"; content: Block[] }>): void {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "user") continue;
    const last = m.content[m.content.length - 1];
    if (last && (last.type === "text" || last.type === "image" || last.type === "document" || last.type === "tool_result")) {
      m.content[m.content.length - 1] = { ...last, cache_control: EPHEMERAL };
    }
    return;
  }
}
