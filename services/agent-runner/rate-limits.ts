/**
 * The rate-limit headers of each auth profile's last provider response, in this process's memory
 * (`lurk.agent-runner.auth_state`, `lurkbot usage --providers`). The OpenAI and Anthropic SDKs'
 * fetch (providers/http-transport.ts) hands every response's headers to `recorder()`'s function
 * before the SDK reads the body; it costs one header lookup when the response has none of them,
 * and never throws.
 *  - Anthropic: `anthropic-ratelimit-<requests|tokens|input-tokens|output-tokens>-<limit|remaining|reset>`,
 *    the reset an RFC 3339 time;
 *  - OpenAI (and compatible servers that send them): `x-ratelimit-<limit|remaining|reset>-<requests|tokens>`,
 *    the reset a duration after the response (`1s`, `6m0s`, `12ms`);
 *  - `retry-after` (seconds) beside them.
 * A response without any of them (Ollama, most local servers) leaves the last snapshot as it was.
 */
import type { RateLimitSnapshot } from "../../shared/contract/index.js";

const ANTHROPIC_WINDOWS = ["requests", "tokens", "input-tokens", "output-tokens"] as const;
const OPENAI_WINDOWS = ["requests", "tokens"] as const;

export type HeaderObserver = (headers: Headers, status: number) => void;

export class RateLimitBook {
  private readonly last = new Map<string, RateLimitSnapshot>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The function that records the responses of one profile of a provider (its API decides the header names). */
  recorder(provider: string, profileId: string, api: "openai" | "anthropic"): HeaderObserver {
    const key = `${provider}\u0000${profileId}`;
    const parse = api === "anthropic" ? anthropicWindows : openaiWindows;
    return (headers, status) => {
      try {
        const windows = parse(headers, this.now());
        if (!windows) return;
        const retryAfter = retryAfterMs(headers.get("retry-after"));
        this.last.set(key, { at: this.now(), status, windows, ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}) });
      } catch {
        // a header we cannot read is not worth a failed call
      }
    };
  }

  get(provider: string, profileId: string): RateLimitSnapshot | undefined {
    return this.last.get(`${provider}\u0000${profileId}`);
  }
}

const num = (v: string | null): number | undefined => {
  if (v === null || v.trim() === "") return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
};

function anthropicWindows(h: Headers, now: number): RateLimitSnapshot["windows"] | undefined {
  // the common case first: one lookup when the response has none (a compatible endpoint, an error page)
  if (h.get("anthropic-ratelimit-requests-limit") === null && h.get("anthropic-ratelimit-tokens-limit") === null && h.get("anthropic-ratelimit-input-tokens-limit") === null) return undefined;
  const out: RateLimitSnapshot["windows"] = [];
  for (const name of ANTHROPIC_WINDOWS) {
    const limit = num(h.get(`anthropic-ratelimit-${name}-limit`));
    const remaining = num(h.get(`anthropic-ratelimit-${name}-remaining`));
    const reset = h.get(`anthropic-ratelimit-${name}-reset`);
    const resetAt = reset ? Date.parse(reset) : NaN;
    if (limit === undefined && remaining === undefined) continue;
    out.push({ name, ...(limit !== undefined && limit >= 0 ? { limit } : {}), ...(remaining !== undefined ? { remaining } : {}), ...(Number.isFinite(resetAt) && resetAt >= 0 ? { resetAt } : reset ? relative(reset, now) : {}) });
  }
  return out.length ? out : undefined;
}

function openaiWindows(h: Headers, now: number): RateLimitSnapshot["windows"] | undefined {
  if (h.get("x-ratelimit-limit-requests") === null && h.get("x-ratelimit-limit-tokens") === null && h.get("x-ratelimit-remaining-requests") === null) return undefined;
  const out: RateLimitSnapshot["windows"] = [];
  for (const name of OPENAI_WINDOWS) {
    const limit = num(h.get(`x-ratelimit-limit-${name}`));
    const remaining = num(h.get(`x-ratelimit-remaining-${name}`));
    const reset = h.get(`x-ratelimit-reset-${name}`);
    if (limit === undefined && remaining === undefined) continue;
    // Azure answers -1 for windows it does not enforce
    out.push({ name, ...(limit !== undefined && limit >= 0 ? { limit } : {}), ...(remaining !== undefined ? { remaining } : {}), ...(reset ? relative(reset, now) : {}) });
  }
  return out.length ? out : undefined;
}

/** `resetAt` from a duration after now: `6m0s`, `1h2m3.5s`, `12ms`, or bare seconds. */
function relative(text: string, now: number): { resetAt?: number } {
  const ms = durationMs(text);
  return ms === undefined ? {} : { resetAt: now + ms };
}

const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };

export function durationMs(text: string): number | undefined {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Math.round(Number(t) * 1000);
  const parts = t.match(/(\d+(?:\.\d+)?)(ms|h|m|s)/g);
  if (!parts || parts.join("") !== t) return undefined;
  let total = 0;
  for (const part of parts) {
    const [, n, unit] = /^(\d+(?:\.\d+)?)(ms|h|m|s)$/.exec(part)!;
    total += Number(n) * UNIT_MS[unit!]!;
  }
  return Math.round(total);
}

function retryAfterMs(v: string | null): number | undefined {
  const n = num(v);
  return n !== undefined && n >= 0 ? Math.round(n * 1000) : undefined;
}
