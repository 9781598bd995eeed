/**
 * Ollama failures -> the contract's PROVIDER_* codes. The `ollama` client throws a
 * `ResponseError` (`status_code`, message = the server's `{error}`) for HTTP errors, a plain
 * Error for an `{error}` line inside a stream or a stream cut before `done`, and fetch's
 * TypeError (cause.code ECONNREFUSED ...) when the host cannot be reached.
 */
import { LurkError } from "../../../shared/contract/index.js";
import { redactSecrets } from "../../../shared/runtime/logger.js";
import { classifyProviderError } from "./errors.js";

const UNREACHABLE = new Set(["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "ECONNRESET", "EPIPE", "UND_ERR_SOCKET"]);
const TIMEOUTS = new Set(["ETIMEDOUT", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);
const CONTEXT_OVERFLOW = /context[_ ]length|context window|exceeds? (the )?(maximum )?context|too many tokens|prompt is too long|input length/i;
const MODEL_NOT_FOUND = /model ["']?[^"']*["']? not found|not found, try pulling|pull model manifest|file does not exist/i;

export interface OllamaErrorContext {
  host: string;
  model: string;
  /** our own signal fired (the run was aborted or its timeout hit) */
  aborted?: boolean;
  /** no chunk arrived within the idle timeout */
  timedOut?: boolean;
  timeoutMs?: number;
}

interface ErrorLike { name?: string; message?: string; status_code?: number; code?: string; cause?: unknown }

function causeCode(err: ErrorLike | undefined): string | undefined {
  for (let e = err, depth = 0; e && depth < 4; e = e.cause as ErrorLike | undefined, depth++) {
    if (typeof e.code === "string") return e.code;
  }
  return undefined;
}

export function classifyOllamaError(err: unknown, ctx: OllamaErrorContext): LurkError {
  if (LurkError.is(err)) return LurkError.from(err);
  if (ctx.timedOut) return new LurkError("PROVIDER_TIMEOUT", `ollama: no answer from ${ctx.host} within ${ctx.timeoutMs ?? 0} ms (model ${ctx.model})`);
  if (ctx.aborted) return new LurkError("ABORTED", "ollama: the request was aborted");
  const e = (typeof err === "object" && err !== null ? err : { message: String(err) }) as ErrorLike;
  const message = redactSecrets(String(e.message ?? err)).slice(0, 1000);
  const code = causeCode(e);
  if (code && TIMEOUTS.has(code)) return new LurkError("PROVIDER_TIMEOUT", `ollama: ${ctx.host} did not answer in time (${code})`);
  if (code && UNREACHABLE.has(code)) {
    return new LurkError("PROVIDER_ERROR", `ollama: Ollama is not reachable at ${ctx.host} (${code}); start it with \`ollama serve\` or set OLLAMA_HOST`, { retryable: true, details: { code } });
  }
  const status = typeof e.status_code === "number" ? e.status_code : undefined;
  if (status === 404 || (status === undefined && MODEL_NOT_FOUND.test(message))) {
    return new LurkError("PROVIDER_ERROR", `ollama: model "${ctx.model}" is not available at ${ctx.host} (${message}); run \`ollama pull ${ctx.model}\``, { retryable: false, details: { status: 404 } });
  }
  if (CONTEXT_OVERFLOW.test(message) && (status === undefined || status < 500 || /context/i.test(message))) {
    return new LurkError("PROVIDER_CONTEXT_OVERFLOW", `ollama: ${message}`, { details: { status } });
  }
  if (/does not support (tools|thinking)/i.test(message)) {
    return new LurkError("PROVIDER_ERROR", `ollama: ${message} (choose a model with that capability)`, { retryable: false, details: { status } });
  }
  if (status !== undefined) return classifyProviderError({ name: e.name, message, status }, "ollama");
  if (e.name === "AbortError" || e.name === "TimeoutError") return new LurkError("ABORTED", "ollama: the request was aborted");
  // no status: an {error} line inside the stream, a cut stream, or a network failure
  return new LurkError("PROVIDER_ERROR", `ollama: ${message}`, { retryable: true });
}
