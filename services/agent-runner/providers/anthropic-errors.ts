/**
 * Anthropic errors -> the contract's PROVIDER_* codes, through the shared classifier
 * (errors.ts). An error event inside an already started stream (`event: error`, e.g.
 * `overloaded_error`) reaches us as an APIError without an HTTP status: its body's error type
 * stands in for the status the same failure gets before the stream starts.
 */
import type { LurkError } from "../../../shared/contract/index.js";
import { classifyProviderError } from "./errors.js";

const TYPE_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

interface AnthropicishError {
  status?: number;
  type?: string | null;
  error?: { error?: { type?: string } } | null;
}

export function classifyAnthropicError(err: unknown, provider: string, aborted = false): LurkError {
  const e = err as AnthropicishError | undefined;
  if (e && typeof e === "object" && e.status === undefined) {
    const type = e.type ?? e.error?.error?.type ?? undefined;
    const status = type ? TYPE_STATUS[type] : undefined;
    if (status !== undefined) {
      // the error's own name/message/headers; only the status is filled in
      const { name, message, headers } = e as Error & { headers?: unknown };
      return classifyProviderError({ name, message, headers, status, type }, provider, aborted);
    }
  }
  return classifyProviderError(err, provider, aborted);
}
