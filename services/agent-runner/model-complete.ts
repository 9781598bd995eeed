/**
 * A one-shot, non-streamed model call for the runner's own housekeeping (compaction summaries,
 * memory consolidation): the provider's stream() is drained and nothing is published as run
 * events. Throws the provider's LurkError; an empty answer is a PROVIDER_ERROR.
 * `chainComplete` makes the call through a model chain (failover.ts), so housekeeping fails over
 * like the run's own calls: a key or model that fails is put on cooldown and the next usable one
 * is asked. `housekeepingChain` is that chain: the run's, or `compaction.model` followed by it.
 */
import { assistantText, emptyUsage, LurkError, type Usage } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { attemptChain } from "./chain-attempts.js";
import { ModelChain, type ModelChainOptions } from "./failover.js";
import type { ReasoningTagMode } from "./providers/think-tags.js";
import type { Provider, ProviderRequest } from "./providers/types.js";

export interface Completion {
  text: string;
  usage: Usage;
  /** the provider and model that answered (the usage ledger prices the usage at that model) */
  provider?: string;
  model?: string;
}

/** system prompt + one user prompt -> the answer's text */
export type Complete = (system: string, prompt: string) => Promise<Completion>;

export function providerComplete(provider: Provider, model: string, opts: { signal: AbortSignal; timeoutMs: number; maxTokens?: number; reasoningTags?: ReasoningTagMode }): Complete {
  return async (system, prompt) => {
    const done = await drainAnswer(provider, {
      model, system, messages: [{ role: "user", content: [{ type: "text", text: prompt }] }], tools: [],
      ...(opts.maxTokens ? { maxTokens: opts.maxTokens } : {}),
      ...(opts.reasoningTags ? { reasoningTags: opts.reasoningTags } : {}),
    }, { signal: opts.signal, timeoutMs: opts.timeoutMs, label: provider.name });
    return { ...done, provider: provider.name, model };
  };
}

/**
 * One streamed call drained to its answer (the runner's one-shot calls: housekeeping, the image
 * tool's descriptions): the provider's LurkError; ABORTED when `signal` fired, PROVIDER_TIMEOUT
 * after `timeoutMs`; an empty answer or a stream without a message is a PROVIDER_ERROR. `label`
 * names the model in those messages.
 */
export async function drainAnswer(provider: Provider, req: Omit<ProviderRequest, "signal">, opts: { signal: AbortSignal; timeoutMs: number; label: string }): Promise<{ text: string; usage: Usage }> {
  const both = new AbortController();
  const stop = () => both.abort();
  const timer = setTimeout(stop, opts.timeoutMs);
  if (opts.signal.aborted) both.abort();
  opts.signal.addEventListener("abort", stop, { once: true });
  try {
    for await (const ev of provider.stream({ ...req, signal: both.signal })) {
      if (ev.type === "error") throw ev.error;
      if (ev.type === "done") {
        const text = assistantText(ev.message).trim();
        if (!text) throw new LurkError("PROVIDER_ERROR", `${opts.label} answered with an empty text`);
        return { text, usage: ev.message.usage ?? emptyUsage() };
      }
    }
    if (opts.signal.aborted) throw new LurkError("ABORTED", "the call was aborted");
    if (both.signal.aborted) throw new LurkError("PROVIDER_TIMEOUT", `${opts.label} did not answer within ${opts.timeoutMs} ms`);
    throw new LurkError("PROVIDER_ERROR", `${opts.label} ended the stream without a message`);
  } finally {
    clearTimeout(timer);
    opts.signal.removeEventListener("abort", stop);
  }
}

/**
 * A Complete over the chain's usable candidates, in the chain's order (the run's settled one
 * first): a failure that another key or model may not have puts that one on cooldown and asks
 * the next; other failures, an abort, or no usable candidate left end it with the last error.
 * No backoff retries (housekeeping can wait for the next run). Usage is priced per candidate.
 */
export function chainComplete(chain: ModelChain, opts: { signal: AbortSignal; timeoutMs: number; maxTokens?: number }): Complete {
  return (system, prompt) => attemptChain(chain, { signal: opts.signal }, async (candidate) => {
    const maxTokens = Math.min(opts.maxTokens ?? candidate.info.maxOutput, candidate.info.maxOutput);
    const done = await providerComplete(candidate.provider, candidate.model, { ...opts, maxTokens, reasoningTags: candidate.info.reasoningTags })(system, prompt);
    return { text: done.text, usage: chain.priced(candidate, done.usage), provider: candidate.providerName, model: candidate.model };
  }, () => new LurkError("PROVIDER_AUTH", `no usable credentials for ${chain.refs.join(", ")}`));
}

/**
 * The chain for summaries and consolidations: with `summaryModel` (compaction.model) that model
 * first, then the run chain's models; without it, or when it cannot be set up (an unknown
 * provider: logged), the run chain itself.
 */
export function housekeepingChain(
  base: Pick<ModelChainOptions, "registry" | "config" | "store" | "log">, summaryModel: string | undefined, runChain: ModelChain, sessionKey: string, log: Logger,
): ModelChain {
  if (!summaryModel) return runChain;
  try {
    return new ModelChain({ ...base, refs: [base.registry.expand(summaryModel), ...runChain.refs], sessionKey, log });
  } catch (err) {
    log.warn({ err, model: summaryModel }, "compaction.model cannot be used; summaries use the run's models");
    return runChain;
  }
}

/**
 * The completion that writes summaries and memory for a run (compaction, consolidation): the
 * housekeeping chain over the run's models, at most 4 096 tokens, the run's LLM timeout.
 */
export function housekeepingComplete(
  base: Pick<ModelChainOptions, "registry" | "config" | "store" | "log">, runChain: ModelChain, sessionKey: string, log: Logger,
): (signal: AbortSignal) => Complete {
  const chain = housekeepingChain(base, base.config.compaction.model, runChain, sessionKey, log);
  return (signal) => chainComplete(chain, { signal, timeoutMs: base.config.runs.llmTimeoutMs, maxTokens: 4_096 });
}
