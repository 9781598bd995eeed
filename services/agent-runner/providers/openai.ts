/**
 * OpenAI (and OpenAI-compatible servers) through the official SDK: streaming chat completions
 * with usage in the last chunk, tool-call fragments assembled by index, argument JSON repaired
 * when safe. The SDK's own retries are off: the loop retries classified errors itself.
 * The request body goes to the SDK as a ready JSON string (`client.post`, which is what
 * `chat.completions.create` calls): the tool list's JSON, most of the body, is serialized once
 * per catalog list rather than on every call.
 * Reasoning arrives as `reasoning_content`/`reasoning` (DeepSeek, vLLM with a reasoning parser) or
 * inline as `<think>…</think>` in the content (MiniMax, R1 distills, QwQ): the latter is split
 * out into thinking (think-tags.ts, per `req.reasoningTags`) and never reaches the text.
 */
import OpenAI from "openai";
import { emptyUsage, type AssistantMessage, type ContentBlock, type ToolDefinition, type Usage } from "../../../shared/contract/index.js";
import { classifyProviderError } from "./errors.js";
import { httpTransport } from "./http-transport.js";
import { toolCallFromJson } from "./json-repair.js";
import { openaiReasoningEffort } from "./thinking.js";
import { toOpenAIMessages, toOpenAITools } from "./openai-convert.js";
import { pieces, thinkTagSplitter } from "./think-tags.js";
import type { Provider, ProviderRequest, ProviderStreamEvent, ToolCallBlock } from "./types.js";
import { apiTemperature } from "./temperature.js";

export interface OpenAIProviderOptions {
  /** the provider name (a named instance's, config-providers.ts); default the API's own */
  name?: string;
  apiKey?: string;
  baseUrl?: string;
  timeoutMs: number;
  /** sees each response's headers (the rate-limit headers; rate-limits.ts) */
  onResponse?: (headers: Headers, status: number) => void;
}

type Chunk = OpenAI.Chat.Completions.ChatCompletionChunk;
interface PartialCall { id: string; name: string; args: string }

const STOP: Record<string, AssistantMessage["stopReason"]> = {
  stop: "end_turn", tool_calls: "tool_use", function_call: "tool_use", length: "max_tokens", content_filter: "end_turn",
};

export class OpenAIProvider implements Provider {
  readonly name: string;
  private readonly client: OpenAI;
  private readonly official: boolean;

  constructor(opts: OpenAIProviderOptions) {
    this.name = opts.name ?? "openai";
    // a local OpenAI-compatible server usually needs no key; the SDK insists on one
    this.client = new OpenAI({
      apiKey: opts.apiKey ?? "no-key",
      ...(opts.baseUrl ? { baseURL: opts.baseUrl } : {}),
      maxRetries: 0,
      timeout: opts.timeoutMs,
      fetch: httpTransport(opts.onResponse ? { onResponse: opts.onResponse } : {}),
    });
    this.official = !opts.baseUrl || /api\.openai\.com/.test(opts.baseUrl);
  }

  async *stream(req: ProviderRequest): AsyncIterable<ProviderStreamEvent> {
    const calls = new Map<number, PartialCall>();
    let text = "";
    let thinking = "";
    let finish: string | null = null;
    let usage: Usage | undefined;
    let tags = thinkTagSplitter(req.reasoningTags);
    try {
      const params: Omit<OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming, "tools"> = {
        model: req.model,
        messages: toOpenAIMessages(req.system, req.messages, req.reasoningReplay ? { provider: this.name, model: req.model } : undefined),
        stream: true,
        stream_options: { include_usage: true },
      };
      if (req.thinking) params.reasoning_effort = openaiReasoningEffort(req.thinking, req.model);
      if (req.temperature !== undefined) params.temperature = apiTemperature("openai", req.temperature);
      if (req.maxTokens) {
        if (this.official) params.max_completion_tokens = req.maxTokens;
        else params.max_tokens = req.maxTokens;
      }
      const head = JSON.stringify(params);
      const body = req.tools.length > 0 ? `${head.slice(0, -1)},"tools":${serializedTools(req.tools)}}` : head;
      // a string body with its content type is sent verbatim (the SDK's buildBody)
      const stream = await this.client.post<AsyncIterable<Chunk>>("/chat/completions", {
        body, headers: { "content-type": "application/json" }, stream: true, signal: req.signal,
      });
      for await (const chunk of stream) {
        if (chunk.usage) {
          usage = toUsage(chunk.usage);
          yield { type: "usage", usage };
        }
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        const delta = choice.delta as (Chunk["choices"][number]["delta"] & { reasoning_content?: string; reasoning?: string }) | undefined;
        const reasoning = delta?.reasoning_content ?? delta?.reasoning;
        if (typeof reasoning === "string" && reasoning) {
          thinking += reasoning;
          yield { type: "thinking_delta", text: reasoning };
        }
        if (typeof delta?.content === "string" && delta.content) {
          if (tags) {
            yield* pieces(tags.push(delta.content));
            // no tags at the start ("auto"): the rest goes as it is, without the splitter
            if (tags.passthrough) {
              text = tags.text;
              tags = undefined;
            }
          } else {
            text += delta.content;
            yield { type: "text_delta", text: delta.content };
          }
        }
        for (const tc of delta?.tool_calls ?? []) {
          const index = tc.index ?? 0;
          const call = calls.get(index) ?? { id: "", name: "", args: "" };
          if (tc.id) call.id = tc.id;
          if (tc.function?.name) call.name += tc.function.name;
          if (tc.function?.arguments) call.args += tc.function.arguments;
          calls.set(index, call);
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    } catch (err) {
      yield { type: "error", error: classifyProviderError(err, this.name, req.signal.aborted) };
      return;
    }
    if (req.signal.aborted) {
      yield { type: "error", error: classifyProviderError(undefined, this.name, true) };
      return;
    }
    if (tags) {
      yield* pieces(tags.end());
      text = tags.text;
      thinking = thinking && tags.thinking ? `${thinking}\n${tags.thinking}` : thinking || tags.thinking;
    }
    const content: ContentBlock[] = [];
    if (thinking) content.push({ type: "thinking", text: thinking });
    if (text) content.push({ type: "text", text });
    const ordered = [...calls.entries()].sort((a, b) => a[0] - b[0]);
    for (const [index, partial] of ordered) {
      const call = assemble(partial, index);
      content.push(call);
      yield { type: "tool_call", call };
    }
    const stopReason = ordered.length > 0 ? "tool_use" : (STOP[finish ?? "stop"] ?? "end_turn");
    const message: AssistantMessage = { role: "assistant", content, provider: this.name, model: req.model, stopReason, usage: usage ?? emptyUsage() };
    yield { type: "done", message };
  }
}

/** the tool list's JSON, per list: the catalog client hands out the same array until it refreshes */
const toolsJson = new WeakMap<readonly ToolDefinition[], string>();

function serializedTools(tools: readonly ToolDefinition[]): string {
  let json = toolsJson.get(tools);
  if (json === undefined) {
    json = JSON.stringify(toOpenAITools(tools));
    toolsJson.set(tools, json);
  }
  return json;
}

function assemble(partial: PartialCall, index: number): ToolCallBlock {
  const id = partial.id || `call_${Date.now().toString(36)}_${index}`;
  if (!partial.name) return { type: "tool_call", id, name: "missing_tool_name", args: {}, argsError: "the tool call has no function name" };
  return toolCallFromJson(id, partial.name, partial.args);
}

function toUsage(u: OpenAI.Completions.CompletionUsage): Usage {
  const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
  const input = Math.max(0, (u.prompt_tokens ?? 0) - cached);
  const output = u.completion_tokens ?? 0;
  return { input, output, cacheRead: cached, cacheWrite: 0, total: u.total_tokens ?? input + cached + output };
}
