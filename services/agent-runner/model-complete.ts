/**
 * A one-shot, non-streamed model call for the runner's own housekeeping (compaction summaries,
 * memory consolidation): the provider's stream() is drained and nothing is published as run
 * events. Throws the provider's LurkError; an empty answer is a PROVIDER_ERROR.
 */
import { assistantText, emptyUsage, LurkError, type Usage } from "../../shared/contract/index.js";
import type { Provider } from "./providers/types.js";

export interface Completion {
  text: string;
  usage: Usage;
}

/** system prompt + one user prompt -> the answer's text */
export type Complete = (system: string, prompt: string) => Promise<Completion>;

export function providerComplete(provider: Provider, model: string, opts: { signal: AbortSignal; timeoutMs: number; maxTokens?: number }): Complete {
  return async (system, prompt) => {
    const both = new AbortController();
    const stop = () => both.abort();
    const timer = setTimeout(stop, opts.timeoutMs);
    if (opts.signal.aborted) both.abort();
    opts.signal.addEventListener("abort", stop, { once: true });
    try {
      for await (const ev of provider.stream({
        model, system, messages: [{ role: "user", content: [{ type: "text", text: prompt }] }], tools: [], signal: both.signal,
        ...(opts.maxTokens ? { maxTokens: opts.maxTokens } : {}),
      })) {
        if (ev.type === "error") throw ev.error;
        if (ev.type === "done") {
          const text = assistantText(ev.message).trim();
          if (!text) throw new LurkError("PROVIDER_ERROR", `${provider.name} answered with an empty text`);
          return { text, usage: ev.message.usage ?? emptyUsage() };
        }
      }
      if (opts.signal.aborted) throw new LurkError("ABORTED", "the call was aborted");
      if (both.signal.aborted) throw new LurkError("PROVIDER_TIMEOUT", `${provider.name} did not answer within ${opts.timeoutMs} ms`);
      throw new LurkError("PROVIDER_ERROR", `${provider.name} ended the stream without a message`);
    } finally {
      clearTimeout(timer);
      opts.signal.removeEventListener("abort", stop);
    }
  };
}
