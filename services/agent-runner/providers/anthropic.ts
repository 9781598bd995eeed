/**
 * Anthropic (and Anthropic-compatible endpoints such as MiniMax, via the base URL) through the
 * official SDK: a streaming Messages API call; text, thinking (with its signature), redacted
 * thinking and tool_use blocks assembled by index in the order they arrive; tool input JSON
 * from `input_json_delta` fragments, repaired when safe. The SDK's own retries are off: the
 * loop retries classified errors itself.
 * A compatible endpoint's thinking blocks may come without a signature (they are kept, and sent
 * back to that endpoint's model unsigned; Anthropic's own API gets only signed ones). A text block
 * with `<think>…</think>` inside (a compatible server that inlines reasoning) is split into a
 * thinking block and the text (think-tags.ts, per `req.reasoningTags`). A temperature is sent
 * only while thinking is off (the API refuses both together), at most 1 (temperature.ts).
 */
import Anthropic from "@anthropic-ai/sdk";
import { emptyUsage, type AssistantMessage, type ContentBlock, type Usage } from "../../../shared/contract/index.js";
import { CLAUDE_OAUTH_BETA, CLAUDE_OAUTH_TOKEN, toAnthropicMessages, toAnthropicSystem, toAnthropicTools } from "./anthropic-convert.js";
import { classifyAnthropicError } from "./anthropic-errors.js";
import { httpTransport } from "./http-transport.js";
import { toolCallFromJson } from "./json-repair.js";
import { pieces, thinkTagSplitter, type ThinkTagSplitter } from "./think-tags.js";
import { apiTemperature } from "./temperature.js";
import { anthropicThinking } from "./thinking.js";
import type { Provider, ProviderRequest, ProviderStreamEvent, ToolCallBlock } from "./types.js";

export interface AnthropicProviderOptions {
  /** the provider name (a named instance's, config-providers.ts); default the API's own */
  name?: string;
  apiKey?: string;
  /** a bearer token instead of an API key (a `token` or `oauth` auth profile) */
  authToken?: string;
  baseUrl?: string;
  timeoutMs: number;
  /** max_tokens when the request gives none (the API requires it) */
  defaultMaxTokens?: number;
  /** sees each response's headers (the rate-limit headers; rate-limits.ts) */
  onResponse?: (headers: Headers, status: number) => void;
}

export const DEFAULT_MAX_TOKENS = 4096;

type Building =
  | { kind: "text"; text: string; tags?: ThinkTagSplitter }
  | { kind: "thinking"; text: string; signature: string }
  | { kind: "redacted"; data: string }
  | { kind: "tool"; id: string; name: string; json: string; input: unknown };

const STOP: Record<string, AssistantMessage["stopReason"]> = {
  end_turn: "end_turn", tool_use: "tool_use", max_tokens: "max_tokens", stop_sequence: "stop_sequence",
  pause_turn: "end_turn", refusal: "end_turn", model_context_window_exceeded: "max_tokens",
};

export class AnthropicProvider implements Provider {
  readonly name: string;
  private readonly client: Anthropic;
  private readonly defaultMaxTokens: number;
  /** Anthropic's own API (no base URL, or an anthropic.com one): thinking goes back only signed */
  private readonly official: boolean;

  constructor(opts: AnthropicProviderOptions) {
    this.name = opts.name ?? "anthropic";
    // an Anthropic-compatible local server may need no key; the SDK insists on one
    this.client = new Anthropic({
      ...(opts.authToken
        ? { apiKey: null, authToken: opts.authToken, ...(CLAUDE_OAUTH_TOKEN.test(opts.authToken) ? { defaultHeaders: { "anthropic-beta": CLAUDE_OAUTH_BETA } } : {}) }
        : { apiKey: opts.apiKey ?? "no-key" }),
      ...(opts.baseUrl ? { baseURL: opts.baseUrl } : {}),
      maxRetries: 0,
      timeout: opts.timeoutMs,
      fetch: httpTransport(opts.onResponse ? { onResponse: opts.onResponse } : {}),
    });
    this.defaultMaxTokens = opts.defaultMaxTokens ?? DEFAULT_MAX_TOKENS;
    this.official = !opts.baseUrl || /^https:\/\/([a-z0-9-]+\.)*anthropic\.com(\/|$)/i.test(opts.baseUrl);
  }

  async *stream(req: ProviderRequest): AsyncIterable<ProviderStreamEvent> {
    const blocks = new Map<number, Building>();
    let stop: string | null = null;
    let usage: Usage | undefined;
    try {
      const system = toAnthropicSystem(req.system);
      const level = thinkingAllowed(req.messages, this.name, req.model, !this.official) ? req.thinking : undefined;
      const { thinking, maxTokens } = anthropicThinking(level, req.maxTokens ?? this.defaultMaxTokens, req.maxTokens);
      const params: Anthropic.MessageCreateParamsStreaming = {
        model: req.model,
        max_tokens: maxTokens,
        messages: toAnthropicMessages(req.messages, this.name, req.model, { unsigned: !this.official }),
        stream: true,
        ...(thinking ? { thinking } : {}),
        ...(req.temperature !== undefined && !thinking ? { temperature: apiTemperature("anthropic", req.temperature) } : {}),
        ...(system ? { system } : {}),
        ...(req.tools.length > 0 ? { tools: toAnthropicTools(req.tools) } : {}),
      };
      const stream = await this.client.messages.create(params, { signal: req.signal });
      for await (const ev of stream) {
        switch (ev.type) {
          case "message_start":
            usage = toUsage(ev.message.usage, undefined);
            break;
          case "content_block_start": {
            const b = ev.content_block;
            const tags = b.type === "text" ? thinkTagSplitter(req.reasoningTags) : undefined;
            if (b.type === "text") blocks.set(ev.index, { kind: "text", text: tags ? "" : b.text ?? "", ...(tags ? { tags } : {}) });
            else if (b.type === "thinking") blocks.set(ev.index, { kind: "thinking", text: b.thinking ?? "", signature: b.signature ?? "" });
            else if (b.type === "redacted_thinking") blocks.set(ev.index, { kind: "redacted", data: b.data });
            else if (b.type === "tool_use") blocks.set(ev.index, { kind: "tool", id: b.id, name: b.name, json: "", input: b.input });
            if (b.type === "text" && b.text) {
              if (tags) yield* pieces(tags.push(b.text));
              else yield { type: "text_delta", text: b.text };
            }
            break;
          }
          case "content_block_delta": {
            const b = blocks.get(ev.index);
            const d = ev.delta;
            if (d.type === "text_delta" && b?.kind === "text") {
              if (b.tags) {
                yield* pieces(b.tags.push(d.text));
                // no tags at the start ("auto"): the rest goes as it is, without the splitter
                if (b.tags.passthrough) {
                  b.text = b.tags.text;
                  delete b.tags;
                }
              } else {
                b.text += d.text;
                if (d.text) yield { type: "text_delta", text: d.text };
              }
            } else if (d.type === "thinking_delta" && b?.kind === "thinking") {
              b.text += d.thinking;
              if (d.thinking) yield { type: "thinking_delta", text: d.thinking };
            } else if (d.type === "signature_delta" && b?.kind === "thinking") {
              b.signature += d.signature;
            } else if (d.type === "input_json_delta" && b?.kind === "tool") {
              b.json += d.partial_json;
            }
            break;
          }
          case "message_delta":
            if (ev.delta.stop_reason) stop = ev.delta.stop_reason;
            usage = toUsage(ev.usage, usage);
            yield { type: "usage", usage };
            break;
          default:
            break;
        }
      }
    } catch (err) {
      yield { type: "error", error: classifyAnthropicError(err, this.name, req.signal.aborted) };
      return;
    }
    if (req.signal.aborted) {
      yield { type: "error", error: classifyAnthropicError(undefined, this.name, true) };
      return;
    }
    const content: ContentBlock[] = [];
    let calls = 0;
    for (const [index, b] of [...blocks.entries()].sort((x, y) => x[0] - y[0])) {
      if (b.kind === "text") {
        if (b.tags) {
          yield* pieces(b.tags.end());
          if (b.tags.thinking) content.push({ type: "thinking", text: b.tags.thinking });
          b.text = b.tags.text;
        }
        if (b.text) content.push({ type: "text", text: b.text });
      } else if (b.kind === "thinking") {
        content.push({ type: "thinking", text: b.text, ...(b.signature ? { signature: b.signature } : {}) });
      } else if (b.kind === "redacted") {
        content.push({ type: "thinking", text: "", signature: b.data, redacted: true });
      } else {
        const call = assemble(b, index);
        calls++;
        content.push(call);
        yield { type: "tool_call", call };
      }
    }
    const stopReason = calls > 0 ? "tool_use" : (STOP[stop ?? "end_turn"] ?? "end_turn");
    const message: AssistantMessage = { role: "assistant", content, provider: this.name, model: req.model, stopReason, usage: usage ?? emptyUsage() };
    yield { type: "done", message };
  }
}

function assemble(b: Extract<Building, { kind: "tool" }>, index: number): ToolCallBlock {
  const id = b.id || `toolu_${Date.now().toString(36)}_${index}`;
  if (!b.name) return { type: "tool_call", id, name: "missing_tool_name", args: {}, argsError: "the tool call has no name" };
  // no fragments: the input came whole in content_block_start (some compatible servers)
  if (b.json.trim() === "" && b.input && typeof b.input === "object" && !Array.isArray(b.input)) {
    return { type: "tool_call", id, name: b.name, args: b.input as Record<string, unknown> };
  }
  return toolCallFromJson(id, b.name, b.json);
}

interface WireUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

/** message_start carries the input side; message_delta's counts are cumulative and win when present. */
function toUsage(u: WireUsage, prev: Usage | undefined): Usage {
  const input = u.input_tokens ?? prev?.input ?? 0;
  const output = u.output_tokens ?? prev?.output ?? 0;
  const cacheRead = u.cache_read_input_tokens ?? prev?.cacheRead ?? 0;
  const cacheWrite = u.cache_creation_input_tokens ?? prev?.cacheWrite ?? 0;
  return { input, output, cacheRead, cacheWrite, total: input + output + cacheRead + cacheWrite };
}

/**
 * With thinking on, the API wants the assistant turn whose tool calls are being answered to begin
 * with its own signed thinking block. After a switch from another provider or model mid-tool-loop
 * that block does not exist, so thinking stays off until the next user turn. (`unsigned`: a
 * compatible endpoint, whose own thinking may carry no signature.)
 */
export function thinkingAllowed(messages: ProviderRequest["messages"], provider: string, model: string, unsigned = false): boolean {
  if (messages[messages.length - 1]?.role !== "tool_result") return true;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "user") return true;
    if (m.role === "assistant") return m.provider === provider && m.model === model && m.content.some((b) => b.type === "thinking" && (!!b.signature || (unsigned && b.text !== "")));
  }
  return true;
}
