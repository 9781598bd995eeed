/**
 * One LLM turn: streams the provider's answer into run events and returns the assistant
 * message. An abort of the run ends it at once; nothing is retried once text has streamed.
 *
 * With a model chain (failover.ts): a failure that another key or model may not have (rate
 * limit, overloaded, auth, billing, timeout, a retryable server error) puts that profile on
 * cooldown for the model and the call moves at once to the next usable profile, then to the
 * next fallback model; a change of model publishes `provider_switch` and the run goes on with
 * its full history (converters drop another provider's thinking), that model's tool list and a
 * system prompt built for it. When nothing is usable, the
 * candidate that becomes free first is retried with backoff (honouring retry-after up to a cap).
 * Without a chain: the one provider, with the same backoff retries.
 */
import { LurkError, type AssistantMessage, type LlmMessage, type ToolDefinition } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { RunEvents } from "./events.js";
import { failureReason, type Candidate, type ModelChain } from "./failover.js";
import type { ImageLoader } from "./images.js";
import { pdfInputFor } from "./pdf-input.js";
import { imageInputFor, takesImages } from "./vision-input.js";
import type { Provider, ProviderRequest } from "./providers/types.js";
import { sleepUnlessAborted as sleep } from "../../shared/runtime/abortable-sleep.js";

export const RETRY_DELAYS_MS = [500, 2_000, 5_000];
const MAX_RETRY_AFTER_MS = 20_000;

export interface LlmCallDeps {
  provider: Provider;
  model: string;
  /** the system prompt and the tools sent with each call; replaced by `inputsFor` when the chain switches model */
  system: string;
  tools: ToolDefinition[];
  /**
   * The tool list and system prompt for another model of the chain (the tool policy has provider
   * and model layers; the prompt lists the tools and names the model): a switch of model takes
   * them for this call and the rest of the run. Absent: both are kept.
   */
  inputsFor?: (ref: string) => Promise<{ tools: ToolDefinition[]; system: string }>;
  events: RunEvents;
  log: Logger;
  /** the run's signal (abort, run timeout) */
  signal: AbortSignal;
  llmTimeoutMs: number;
  /** profiles and fallbacks; when absent only `provider`/`model` are used */
  chain?: ModelChain;
  /** fills in the bytes of images and PDFs kept as media refs (images.ts); absent: sent as they are */
  images?: Pick<ImageLoader, "resolve">;
}

/** The LurkError a fired run signal stands for (ABORTED unless the reason is a LurkError). */
export function abortError(signal: AbortSignal): LurkError {
  return LurkError.is(signal.reason) ? LurkError.from(signal.reason) : new LurkError("ABORTED", "the run was aborted");
}

type Attempt = { message: AssistantMessage } | { error: LurkError; streamed: boolean };

/** One streamed request; never throws except for an abort of the run. */
async function attempt(deps: LlmCallDeps, provider: Provider, request: Omit<ProviderRequest, "signal">, turn: number): Promise<Attempt> {
  if (deps.signal.aborted) throw abortError(deps.signal);
  // one controller per attempt, fired by the run's signal or the call's timeout
  const call = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    call.abort();
  }, deps.llmTimeoutMs);
  const onRunAbort = () => call.abort(deps.signal.reason);
  deps.signal.addEventListener("abort", onRunAbort, { once: true });
  const signal = call.signal;
  let streamed = false;
  let error: LurkError | undefined;
  try {
    for await (const ev of provider.stream({ ...request, signal })) {
      if (ev.type === "text_delta") {
        streamed = true;
        deps.events.emit({ kind: "message_delta", turn, text: ev.text });
      } else if (ev.type === "thinking_delta") {
        streamed = true;
        deps.events.emit({ kind: "thinking_delta", turn, text: ev.text });
      } else if (ev.type === "done") {
        return { message: ev.message };
      } else if (ev.type === "error") {
        error = ev.error;
      }
    }
  } finally {
    clearTimeout(timer);
    deps.signal.removeEventListener("abort", onRunAbort);
  }
  if (deps.signal.aborted) throw abortError(deps.signal);
  if (timedOut) error = new LurkError("PROVIDER_TIMEOUT", `${provider.name} did not answer within ${deps.llmTimeoutMs} ms`);
  error ??= new LurkError("PROVIDER_ERROR", `${provider.name} ended the stream without a message`, { retryable: true });
  return { error, streamed };
}

function backoff(error: LurkError, retry: number): number {
  const retryAfter = (error.details as { retryAfterMs?: number } | undefined)?.retryAfterMs;
  return Math.min(Math.max(RETRY_DELAYS_MS[retry]!, retryAfter ?? 0), MAX_RETRY_AFTER_MS);
}

export async function callModel(deps: LlmCallDeps, turn: number, history: LlmMessage[]): Promise<AssistantMessage> {
  // PDFs are loaded when a model of the run may take them, and made notes per model (pdf-input.ts)
  const documents = deps.chain?.takesPdf ?? false;
  const messages = deps.images ? await deps.images.resolve(history, { documents }) : history;
  if (deps.chain) return callWithFailover(deps, deps.chain, turn, messages);
  // without a chain (housekeeping calls) the model is not known to take PDFs: document blocks become notes
  const forModel = pdfInputFor(messages, false);
  for (let retry = 0; ; retry++) {
    const result = await attempt(deps, deps.provider, { model: deps.model, system: deps.system, messages: forModel, tools: deps.tools }, turn);
    if ("message" in result) return result.message;
    const { error, streamed } = result;
    if (!error.retryable || streamed || retry >= RETRY_DELAYS_MS.length) throw error;
    const delay = backoff(error, retry);
    deps.log.warn({ code: error.code, attempt: retry + 1, retryInMs: delay, err: error }, "provider call failed; retrying");
    await sleep(delay, deps.signal);
  }
}

async function callWithFailover(deps: LlmCallDeps, chain: ModelChain, turn: number, messages: LlmMessage[]): Promise<AssistantMessage> {
  const needsTools = deps.tools.length > 0;
  /** candidates that failed in this call */
  const tried = new Set<string>();
  /** candidates that failed with auth/billing in this call: not probed again */
  const broken = new Set<string>();
  let retries = 0;
  let switchReason = "cooldown";
  let candidate: Candidate | undefined = chain.next(tried, needsTools) ?? chain.probe(broken);
  for (;;) {
    if (!candidate) throw new LurkError("PROVIDER_AUTH", `no usable credentials for ${chain.refs.join(", ")}`);
    if (candidate.ref !== chain.current) {
      deps.events.emit({ kind: "provider_switch", from: chain.current, to: candidate.ref, reason: switchReason });
      deps.log.warn({ from: chain.current, to: candidate.ref, profile: candidate.profile.id, reason: switchReason }, "switching model");
      chain.current = candidate.ref;
      if (deps.inputsFor) ({ tools: deps.tools, system: deps.system } = await deps.inputsFor(candidate.ref));
    }
    await chain.use(candidate);
    const request = { model: candidate.model, system: deps.system, messages: imageInputFor(pdfInputFor(messages, candidate.info.capabilities.pdf), takesImages(candidate.info)), tools: deps.tools, ...chain.requestOptions(candidate) };
    const result = await attempt(deps, candidate.provider, request, turn);
    if ("message" in result) {
      await chain.success(candidate);
      const m = result.message;
      return m.usage ? { ...m, usage: chain.priced(candidate, m.usage) } : m;
    }
    const { error, streamed } = result;
    const reason = failureReason(error);
    if (streamed || !reason) throw error;
    await chain.failure(candidate, reason);
    tried.add(candidate.key);
    if (reason === "auth" || reason === "billing") broken.add(candidate.key);
    switchReason = reason;
    const next = chain.next(tried, needsTools);
    if (next) {
      if (next.ref === candidate.ref) deps.log.warn({ model: next.ref, from: candidate.profile.id, to: next.profile.id, reason }, "rotating auth profile");
      candidate = next;
      continue;
    }
    // nothing else usable: back off and probe what frees up first
    if (!error.retryable || retries >= RETRY_DELAYS_MS.length) throw error;
    const delay = backoff(error, retries++);
    deps.log.warn({ code: error.code, attempt: retries, retryInMs: delay, err: error }, "every profile and fallback failed; retrying");
    await sleep(delay, deps.signal);
    candidate = chain.probe(broken);
    if (!candidate) throw error;
  }
}

