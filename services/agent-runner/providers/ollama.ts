/**
 * Ollama through the official `ollama` client (its browser build: it never reads image paths
 * from disk): streaming /api/chat with tools. Ollama sends each tool call whole, with object
 * arguments and no id, so ids are generated; `thinking` arrives as its own field; the final
 * chunk (`done: true`) carries done_reason and the token counts. A client is made per call so
 * the run's signal (and an idle timeout: no chunk for `timeoutMs`) reaches the fetch. The client
 * library is imported on the first call (most deployments never use Ollama; see lazy.ts).
 * A model that writes `<think>…</think>` into its content (DeepSeek-R1, QwQ, an Ollama without
 * `think` support) has it split out into thinking (think-tags.ts, per `req.reasoningTags`).
 * A temperature goes as `options.temperature`.
 */
import type { ChatResponse } from "ollama/browser";
import { emptyUsage, LurkError, type AssistantMessage, type ContentBlock, type Usage } from "../../../shared/contract/index.js";
import { fromOllamaToolCall, toOllamaMessages, toOllamaTools } from "./ollama-convert.js";
import { classifyOllamaError } from "./ollama-errors.js";
import { pieces, thinkTagSplitter } from "./think-tags.js";
import { ollamaThink } from "./thinking.js";
import type { Provider, ProviderRequest, ProviderStreamEvent, ToolCallBlock } from "./types.js";

export const DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434";

export interface OllamaProviderOptions {
  /** the provider name (a named instance's, config-providers.ts); default the API's own */
  name?: string;
  /** OLLAMA_HOST: `http://host:port`, `host:port` or `:port` */
  host?: string;
  /** sent as `Authorization: Bearer` (a hosted Ollama); a local one needs none */
  apiKey?: string;
  /** idle timeout: the call fails with PROVIDER_TIMEOUT when no chunk arrives for this long */
  timeoutMs: number;
  /** for tests; defaults to the global fetch */
  fetch?: typeof fetch;
}

const STOP: Record<string, AssistantMessage["stopReason"]> = { stop: "end_turn", length: "max_tokens", load: "end_turn", unload: "end_turn" };

export class OllamaProvider implements Provider {
  readonly name: string;
  readonly host: string;

  constructor(private readonly opts: OllamaProviderOptions) {
    this.host = opts.host?.trim() || DEFAULT_OLLAMA_HOST;
    this.name = opts.name ?? "ollama";
  }

  async *stream(req: ProviderRequest): AsyncIterable<ProviderStreamEvent> {
    let Ollama: typeof import("ollama/browser").Ollama;
    try {
      ({ Ollama } = await import("ollama/browser"));
    } catch (err) {
      yield { type: "error", error: new LurkError("PROVIDER_ERROR", `the ollama client library could not be loaded: ${err instanceof Error ? err.message : String(err)}; reinstall with \`npm install\``) };
      return;
    }
    const ctl = new AbortController();
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        ctl.abort();
      }, this.opts.timeoutMs);
    };
    const onAbort = () => ctl.abort();
    req.signal.addEventListener("abort", onAbort, { once: true });
    if (req.signal.aborted) ctl.abort();
    const baseFetch = this.opts.fetch ?? fetch;
    const client = new Ollama({
      host: this.host,
      ...(this.opts.apiKey ? { headers: { Authorization: `Bearer ${this.opts.apiKey}` } } : {}),
      fetch: ((input: Parameters<typeof fetch>[0], init?: RequestInit) =>
        baseFetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, ctl.signal]) : ctl.signal })) as typeof fetch,
    });
    const calls: ToolCallBlock[] = [];
    let text = "";
    let thinking = "";
    let doneReason: string | undefined;
    let usage: Usage | undefined;
    let tags = thinkTagSplitter(req.reasoningTags);
    const options = { ...(req.maxTokens ? { num_predict: req.maxTokens } : {}), ...(req.temperature !== undefined ? { temperature: req.temperature } : {}) };
    const errorCtx = () => ({ host: this.host, model: req.model, aborted: req.signal.aborted, timedOut, timeoutMs: this.opts.timeoutMs });
    try {
      arm();
      const stream = await client.chat({
        model: req.model,
        messages: toOllamaMessages(req.system, req.messages),
        ...(req.tools.length > 0 ? { tools: toOllamaTools(req.tools) } : {}),
        ...(Object.keys(options).length > 0 ? { options } : {}),
        ...(req.thinking ? { think: ollamaThink(req.thinking, req.model) } : {}),
        stream: true,
      });
      for await (const chunk of stream as AsyncIterable<ChatResponse>) {
        arm();
        const m = chunk.message;
        if (typeof m?.thinking === "string" && m.thinking) {
          thinking += m.thinking;
          yield { type: "thinking_delta", text: m.thinking };
        }
        if (typeof m?.content === "string" && m.content) {
          if (tags) {
            yield* pieces(tags.push(m.content));
            // no tags at the start ("auto"): the rest goes as it is, without the splitter
            if (tags.passthrough) {
              text = tags.text;
              tags = undefined;
            }
          } else {
            text += m.content;
            yield { type: "text_delta", text: m.content };
          }
        }
        for (const tc of Array.isArray(m?.tool_calls) ? m.tool_calls : []) calls.push(fromOllamaToolCall(tc));
        if (chunk.done) {
          doneReason = chunk.done_reason;
          usage = toUsage(chunk);
          yield { type: "usage", usage };
        }
      }
    } catch (err) {
      yield { type: "error", error: classifyOllamaError(err, errorCtx()) };
      return;
    } finally {
      clearTimeout(timer);
      req.signal.removeEventListener("abort", onAbort);
      ctl.abort(); // releases the connection when the consumer stopped early
    }
    if (req.signal.aborted) {
      yield { type: "error", error: classifyOllamaError(undefined, errorCtx()) };
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
    for (const call of calls) {
      content.push(call);
      yield { type: "tool_call", call };
    }
    const stopReason = calls.length > 0 ? "tool_use" : (STOP[doneReason ?? "stop"] ?? "end_turn");
    const message: AssistantMessage = { role: "assistant", content, provider: this.name, model: req.model, stopReason, usage: usage ?? emptyUsage() };
    yield { type: "done", message };
  }
}

function toUsage(chunk: ChatResponse): Usage {
  const input = Number.isInteger(chunk.prompt_eval_count) && chunk.prompt_eval_count > 0 ? chunk.prompt_eval_count : 0;
  const output = Number.isInteger(chunk.eval_count) && chunk.eval_count > 0 ? chunk.eval_count : 0;
  return { input, output, cacheRead: 0, cacheWrite: 0, total: input + output };
}
