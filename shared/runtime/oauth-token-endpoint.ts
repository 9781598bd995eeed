/**
 * One request to an OAuth 2.0 token endpoint (RFC 6749 §4.1.3, §4.4, §6): a login's code
 * exchange (`lurkbot auth login`), a client_credentials grant and a refresh (agent-runner).
 *
 * Contract: resolves with the tokens, or rejects with a LurkError whose code says what to do:
 * PROVIDER_AUTH (not retryable) when the server refused the grant or the client (`invalid_grant`:
 * log in again; `invalid_client`: fix the client config), PROVIDER_RATE_LIMIT / PROVIDER_ERROR
 * (retryable) for 429 and 5xx, PROVIDER_TIMEOUT for no answer in time, PROVIDER_ERROR (not
 * retryable) for an answer that is not a token response. No message ever carries a token or
 * the client secret; the server's `error_description` is kept (cut at 300 characters).
 */
import { LurkError, safeParseJson } from "../contract/index.js";
import type { OAuthClientConfig } from "./config-providers.js";

export interface TokenResponse {
  accessToken: string;
  /** a new refresh token when the server rotated it */
  refreshToken?: string;
  /** epoch ms, from `expires_in` */
  expiresAt?: number;
  scope?: string;
}

export interface TokenRequestOptions {
  /** what the failure messages call the credential, e.g. `auth profile anthropic/work` */
  label: string;
  /** what to do when the server refuses the grant */
  fix: string;
  signal?: AbortSignal;
  timeoutMs?: number;
  now?: () => number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** a token endpoint's answer is small; anything larger is not one */
const MAX_BODY_BYTES = 256 * 1024;

/** The fields every grant sends: the client id and, for a confidential client, its secret, and the configured extras. */
export function clientFields(client: OAuthClientConfig): Record<string, string> {
  return { ...(client.params ?? {}), client_id: client.clientId, ...(client.clientSecret ? { client_secret: client.clientSecret } : {}) };
}

/** The fields of a refresh (RFC 6749 §6) with `refreshToken`, the client's included. */
export function refreshGrant(client: OAuthClientConfig, refreshToken: string): Record<string, string> {
  return { grant_type: "refresh_token", refresh_token: refreshToken, ...clientFields(client) };
}

export async function requestTokens(client: OAuthClientConfig, fields: Record<string, string>, opts: TokenRequestOptions): Promise<TokenResponse> {
  const now = opts.now ?? Date.now;
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  const body = client.body === "json" ? JSON.stringify(fields) : new URLSearchParams(fields).toString();
  const host = new URL(client.tokenUrl).host;
  let res: Response;
  let text: string;
  try {
    res = await fetch(client.tokenUrl, {
      method: "POST",
      headers: { "content-type": client.body === "json" ? "application/json" : "application/x-www-form-urlencoded", accept: "application/json" },
      body,
      signal,
      redirect: "error",
    });
    text = await readCapped(res);
  } catch (err) {
    if (opts.signal?.aborted) throw new LurkError("ABORTED", `the token request for ${opts.label} was aborted`);
    if (timeout.aborted) throw new LurkError("PROVIDER_TIMEOUT", `the OAuth server ${host} did not answer within ${Math.round((opts.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000)} s (${opts.label})`);
    throw new LurkError("PROVIDER_ERROR", `cannot reach the OAuth server ${host} for ${opts.label}: ${(err as Error).message}`, { retryable: true });
  }
  const json = parseObject(text);
  if (!res.ok) {
    const code = typeof json?.error === "string" ? json.error.slice(0, 100) : undefined;
    const description = typeof json?.error_description === "string" ? `: ${json.error_description.slice(0, 300)}` : "";
    const what = `the OAuth server ${host} refused ${opts.label} (HTTP ${res.status}${code ? ` ${code}` : ""}${description})`;
    if (res.status === 429) throw new LurkError("PROVIDER_RATE_LIMIT", `${what}; retrying later`);
    if (res.status >= 500) throw new LurkError("PROVIDER_ERROR", what, { retryable: true });
    throw new LurkError("PROVIDER_AUTH", `${what}; ${opts.fix}`);
  }
  const accessToken = json?.access_token;
  if (typeof accessToken !== "string" || accessToken.length === 0) {
    throw new LurkError("PROVIDER_ERROR", `the OAuth server ${host} answered ${opts.label} without an access_token (is tokenUrl the token endpoint?)`);
  }
  const expiresIn = Number(json?.expires_in);
  return {
    accessToken,
    ...(typeof json?.refresh_token === "string" && json.refresh_token.length > 0 ? { refreshToken: json.refresh_token } : {}),
    ...(Number.isFinite(expiresIn) && expiresIn > 0 ? { expiresAt: now() + Math.floor(expiresIn * 1000) } : {}),
    ...(typeof json?.scope === "string" ? { scope: json.scope } : {}),
  };
}

async function readCapped(res: Response): Promise<string> {
  const declared = Number(res.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) {
    await res.body?.cancel();
    return "";
  }
  const text = await res.text();
  return text.length > MAX_BODY_BYTES ? "" : text;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v = safeParseJson(text, { maxBytes: MAX_BODY_BYTES, maxDepth: 8 });
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
