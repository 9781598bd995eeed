/**
 * One LLM turn: streams the provider's answer into run events and returns the assistant
 * message. A retryable provider error that happens before anything was streamed is retried
 * with backoff (honouring retry-after up to a cap); an abort of the run ends it at once.
 */
import { LurkError, type AssistantMessage, type LlmMessage, type ToolDefinition } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { RunEvents } from "./events.js";
import type { Provider } from "./providers/types.js";

export const RETRY_DELAYS_MS = [500, 2_000, 5_000];
const MAX_RETRY_AFTER_MS = 20_000;

export interface LlmCallDeps {
  provider: Provider;
  model: string;
  system: string;
  tools: ToolDefinition[];
  events: RunEvents;
  log: Logger;
  /** the run's signal (abort, run timeout) */
  signal: AbortSignal;
  llmTimeoutMs: number;
}

/** The LurkError a fired run signal stands for (ABORTED unless the reason is a LurkError). */
export function abortError(signal: AbortSignal): LurkError {
  return LurkError.is(signal.reason) ? LurkError.from(signal.reason) : new LurkError("ABORTED", "the run was aborted");
}

export async function callModel(deps: LlmCallDeps, turn: number, messages: LlmMessage[]): Promise<AssistantMessage> {
  for (let attempt = 0; ; attempt++) {
    if (deps.signal.aborted) throw abortError(deps.signal);
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), deps.llmTimeoutMs);
    const signal = anySignal(deps.signal, timeout.signal);
    let streamed = false;
    let error: LurkError | undefined;
    try {
      for await (const ev of deps.provider.stream({ model: deps.model, system: deps.system, messages, tools: deps.tools, signal })) {
        if (ev.type === "text_delta") {
          streamed = true;
          deps.events.emit({ kind: "message_delta", turn, text: ev.text });
        } else if (ev.type === "thinking_delta") {
          streamed = true;
          deps.events.emit({ kind: "thinking_delta", turn, text: ev.text });
        } else if (ev.type === "done") {
          return ev.message;
        } else if (ev.type === "error") {
          error = ev.error;
        }
      }
    } finally {
      clearTimeout(timer);
    }
    if (deps.signal.aborted) throw abortError(deps.signal);
    if (timeout.signal.aborted) error = new LurkError("PROVIDER_TIMEOUT", `${deps.provider.name} did not answer within ${deps.llmTimeoutMs} ms`);
    error ??= new LurkError("PROVIDER_ERROR", `${deps.provider.name} ended the stream without a message`, { retryable: true });
    if (!error.retryable || streamed || attempt >= RETRY_DELAYS_MS.length) throw error;
    const retryAfter = (error.details as { retryAfterMs?: number } | undefined)?.retryAfterMs;
    const delay = Math.min(Math.max(RETRY_DELAYS_MS[attempt]!, retryAfter ?? 0), MAX_RETRY_AFTER_MS);
    deps.log.warn({ code: error.code, attempt: attempt + 1, retryInMs: delay, err: error }, "provider call failed; retrying");
    await sleep(delay, deps.signal);
  }
}

/** AbortSignal.any (Node >= 20.3) without the version floor. */
function anySignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  const both = new AbortController();
  const fire = (s: AbortSignal) => () => both.abort(s.reason);
  if (a.aborted || b.aborted) both.abort(a.aborted ? a.reason : b.reason);
  else {
    a.addEventListener("abort", fire(a), { once: true, signal: both.signal });
    b.addEventListener("abort", fire(b), { once: true, signal: both.signal });
  }
  return both.signal;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
