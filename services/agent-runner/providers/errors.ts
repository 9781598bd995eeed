/**
 * Classification of provider failures into the contract's PROVIDER_* error codes, with the
 * retryable flag the loop's retry uses. Works on the OpenAI SDK's APIError shape
 * (status, code, type, headers) and on plain errors (network, abort, timeout).
 */
import { LurkError, type ErrorCode } from "../../../shared/contract/index.js";
import { redactSecrets } from "../../../shared/runtime/logger.js";

interface HttpishError {
  name?: string;
  message?: string;
  status?: number;
  code?: string | null;
  type?: string;
  headers?: { get?(name: string): string | null } | Record<string, string>;
}

const CONTEXT_OVERFLOW = /context[_ ]length|context window|maximum context|too many tokens|prompt is too long|reduce the length/i;
const BILLING = /insufficient_quota|billing|quota|credit balance|payment/i;

/** Classifies any error from a provider call; `aborted` tells an abort by our own signal. */
export function classifyProviderError(err: unknown, provider: string, aborted = false): LurkError {
  if (LurkError.is(err)) return LurkError.from(err);
  const e = (err ?? {}) as HttpishError;
  // the OpenAI SDK v6 leaves `name` as "Error": its class name tells a timeout or a failed connection
  const name = (e.name && e.name !== "Error" ? e.name : (err as { constructor?: { name?: string } } | undefined)?.constructor?.name) ?? "";
  const message = redactSecrets(String(e.message ?? err)).slice(0, 1000);
  const text = `${provider}: ${message}`;
  const retryAfterMs = retryAfter(e.headers);
  const details = retryAfterMs !== undefined ? { retryAfterMs, status: e.status } : { status: e.status };
  const make = (code: ErrorCode, retryable?: boolean) => new LurkError(code, text, { details, ...(retryable === undefined ? {} : { retryable }) });

  if (aborted || name === "APIUserAbortError" || name === "AbortError") return new LurkError("ABORTED", `${provider}: the request was aborted`);
  if (name === "APIConnectionTimeoutError" || /timed? ?out/i.test(name)) return make("PROVIDER_TIMEOUT");
  if (name === "APIConnectionError") return make("PROVIDER_ERROR", true);
  const status = typeof e.status === "number" ? e.status : undefined;
  const code = `${e.code ?? ""} ${e.type ?? ""}`;
  if (status === undefined) return make("PROVIDER_ERROR", false);
  if (status === 401 || status === 403) return make("PROVIDER_AUTH");
  if (status === 402 || BILLING.test(code)) return make("PROVIDER_BILLING");
  if (status === 429) return make("PROVIDER_RATE_LIMIT");
  if (status === 408 || status === 504) return make("PROVIDER_TIMEOUT");
  if (status === 529 || status === 503 || /overloaded/i.test(code)) return make("PROVIDER_OVERLOADED");
  if ((status === 400 || status === 413 || status === 422) && (CONTEXT_OVERFLOW.test(code) || CONTEXT_OVERFLOW.test(message))) return make("PROVIDER_CONTEXT_OVERFLOW");
  if (status >= 500) return make("PROVIDER_ERROR", true);
  return make("PROVIDER_ERROR", false);
}

function retryAfter(headers: HttpishError["headers"]): number | undefined {
  if (!headers) return undefined;
  const get = (k: string) => (typeof headers.get === "function" ? headers.get(k) : (headers as Record<string, string>)[k]) ?? null;
  const ms = Number(get("retry-after-ms"));
  if (Number.isFinite(ms) && ms > 0) return ms;
  const s = get("retry-after");
  if (s === null) return undefined;
  const secs = Number(s);
  if (Number.isFinite(secs)) return Math.max(0, secs * 1000);
  const at = Date.parse(s);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
