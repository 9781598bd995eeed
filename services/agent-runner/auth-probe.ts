/**
 * `lurk.agent-runner.auth_probe` (the seeds' provider health check): one cheap real call per auth
 * profile, the provider's models list, which costs no tokens: OpenAI (and compatible servers)
 * `GET <baseUrl>/models`, Anthropic (and compatible endpoints) `GET <baseUrl>/v1/models`, Ollama
 * `GET <host>/api/tags`. The profiles are probed side by side, each within `timeoutMs`.
 * Outcome per profile: ok (2xx), auth_failed (401/403, after one renewal of an OAuth token),
 * rate_limited (429), billing (402), unreachable (no connection, no answer in time), error (any
 * other status), no_credentials (a token that expired, an OAuth profile not logged in: no call).
 * Cooldown state is left alone except on an auth failure: the profile is then disabled as a real
 * call's auth failure disables it (min(24 h, 5 h × 2^(n-1)); a new key or login clears it), so
 * runs skip a key the provider refuses instead of finding out with a user waiting. The reply says so.
 * The responses' rate-limit headers are recorded like a run's (rate-limits.ts). No secret is in
 * the reply: the call is named by its host and path, the provider's message is redacted.
 */
import { LurkError, type AuthProbeOutcome, type AuthProbeResult, type AuthProfileState } from "../../shared/contract/index.js";
import { providerApi } from "../../shared/runtime/config-providers.js";
import type { LurkConfig } from "../../shared/runtime/config.js";
import { redactSecrets } from "../../shared/runtime/logger.js";
import type { AuthStateStore } from "./auth-profiles.js";
import { CLAUDE_OAUTH_BETA, CLAUDE_OAUTH_TOKEN } from "./providers/anthropic-convert.js";
import { httpTransport } from "./providers/http-transport.js";
import { DEFAULT_OLLAMA_HOST } from "./providers/ollama.js";
import type { AuthProfile, ProviderRegistry } from "./providers/registry.js";
import type { RateLimitBook } from "./rate-limits.js";

export const PROBE_TIMEOUT_MS = 10_000;

/** What kind of credential a profile holds (the words `lurkbot auth list` uses), never the credential. */
export function credentialKind(p: AuthProfile): AuthProfileState["kind"] {
  if (p.credential?.kind === "token") return "token";
  if (p.credential?.kind === "oauth") return `oauth ${p.credential.client.grant}`;
  return p.apiKey ? "api key" : "none";
}
const MESSAGE_MAX = 300;
const ANTHROPIC_VERSION = "2023-06-01";

export interface ProbeDeps {
  config: LurkConfig;
  registry: ProviderRegistry;
  store: AuthStateStore;
  rateLimits: RateLimitBook;
}

/** The profiles a probe covers: one provider's (or one profile of it), else every model provider's (not Ollama's implicit localhost). */
export function probeTargets(deps: Pick<ProbeDeps, "registry" | "config">, provider?: string, profile?: string): AuthProfile[] {
  if (profile && !provider) throw new LurkError("VALIDATION_FAILED", "a profile needs its provider (PROVIDER:PROFILE, e.g. openai:team)");
  const names = provider ? [provider] : deps.registry.providerNames();
  if (provider && !names.every((n) => deps.registry.providerNames().includes(n))) {
    throw new LurkError("VALIDATION_FAILED", `unknown provider "${provider}"; the providers are ${deps.registry.providerNames().join(", ")}`);
  }
  // without a provider named, Ollama's implicit localhost profile (nothing configured) is left out
  const implicit = (p: AuthProfile) => !provider && providerApi(deps.config.providers, p.provider) === "ollama" && !p.baseUrl && !p.apiKey && !p.credential;
  const all = names.flatMap((n) => deps.registry.profiles(n)).filter((p) => !implicit(p));
  const out = profile ? all.filter((p) => p.id === profile) : all;
  if (provider && out.length === 0) {
    throw new LurkError("VALIDATION_FAILED", profile ? `${provider} has no auth profile "${profile}" (${all.map((p) => p.id).join(", ") || "none configured"})` : `${provider} has no auth profiles configured`);
  }
  return out;
}

export async function probeProfiles(deps: ProbeDeps, targets: AuthProfile[], timeoutMs: number, signal: AbortSignal): Promise<AuthProbeResult[]> {
  return Promise.all(targets.map((p) => probeOne(deps, p, timeoutMs, signal)));
}

interface ProbeCall { url: string; label: string; headers: (secret: string | undefined) => Record<string, string>; fetch: typeof fetch }

function callFor(deps: ProbeDeps, p: AuthProfile): ProbeCall {
  const api = providerApi(deps.config.providers, p.provider);
  const trimmed = (u: string) => u.replace(/\/+$/, "");
  if (api === "ollama") {
    const host = p.baseUrl ? (/^[a-z][a-z0-9+.-]*:\/\//i.test(p.baseUrl) ? p.baseUrl : `http://${p.baseUrl}`) : DEFAULT_OLLAMA_HOST;
    const url = `${trimmed(host)}/api/tags`;
    return { url, label: label(url), headers: bearerHeaders, fetch: (i, init) => fetch(i, init) };
  }
  const onResponse = deps.rateLimits.recorder(p.provider, p.id, api === "anthropic" ? "anthropic" : "openai");
  const transport = httpTransport({ onResponse });
  if (api === "anthropic") {
    const url = `${trimmed(p.baseUrl ?? "https://api.anthropic.com")}/v1/models`;
    const bearer = p.credential !== undefined;
    return {
      url, label: label(url), fetch: transport,
      headers: (s) => ({
        "anthropic-version": ANTHROPIC_VERSION,
        ...(s === undefined ? {} : bearer ? { authorization: `Bearer ${s}`, ...(CLAUDE_OAUTH_TOKEN.test(s) ? { "anthropic-beta": CLAUDE_OAUTH_BETA } : {}) } : { "x-api-key": s }),
      }),
    };
  }
  const url = `${trimmed(p.baseUrl ?? "https://api.openai.com/v1")}/models`;
  return { url, label: label(url), fetch: transport, headers: bearerHeaders };
}

const bearerHeaders = (s: string | undefined): Record<string, string> => (s ? { authorization: `Bearer ${s}` } : {});

/** `GET host/path`: never the URL's userinfo or query */
function label(url: string): string {
  try {
    const u = new URL(url);
    return `GET ${u.host}${u.pathname}`;
  } catch {
    return "GET (invalid endpoint)";
  }
}

async function probeOne(deps: ProbeDeps, p: AuthProfile, timeoutMs: number, outer: AbortSignal): Promise<AuthProbeResult> {
  const base = { provider: p.provider, profile: p.id, kind: credentialKind(p) };
  let call: ProbeCall;
  try {
    call = callFor(deps, p);
  } catch (err) {
    return { ...base, call: "-", outcome: "error", ms: 0, message: short(LurkError.from(err).message, []) };
  }
  const signal = AbortSignal.any([outer, AbortSignal.timeout(timeoutMs)]);
  const started = Date.now();
  const source = deps.registry.credentialSource(p);
  const secrets: string[] = [];
  const result = (outcome: AuthProbeOutcome, extra: Partial<AuthProbeResult> = {}): AuthProbeResult =>
    ({ ...base, call: call.label, outcome, ms: Date.now() - started, ...extra });
  try {
    let secret: string | undefined;
    try {
      secret = source ? await source.secret(signal) : undefined;
    } catch (err) {
      const e = LurkError.from(err);
      if (e.code === "PROVIDER_AUTH") return result("no_credentials", { message: short(e.message, []) });
      if (signal.aborted) return result("unreachable", { message: `no token in ${timeoutMs} ms` });
      return result("error", { message: short(e.message, []) });
    }
    if (secret) secrets.push(secret);
    let res = await call.fetch(call.url, { headers: call.headers(secret), signal });
    if ((res.status === 401 || res.status === 403) && source?.renewable && secret) {
      // an OAuth token the server no longer takes is renewed once, as a run's call does (credentialed.ts)
      await res.text().catch(() => undefined);
      secret = await source.secret(signal, secret);
      secrets.push(secret);
      res = await call.fetch(call.url, { headers: call.headers(secret), signal });
    }
    const body = res.ok ? "" : await res.text().catch(() => "");
    if (res.ok) {
      await res.arrayBuffer().catch(() => undefined);
      return result("ok", { status: res.status });
    }
    const message = short(errorMessage(body) || res.statusText, secrets);
    const extra = { status: res.status, ...(message ? { message } : {}) };
    if (res.status === 401 || res.status === 403) {
      const disabledUntil = await deps.store.markDisabled(p, "auth");
      return result("auth_failed", { ...extra, disabledUntil });
    }
    if (res.status === 429) return result("rate_limited", extra);
    if (res.status === 402) return result("billing", extra);
    return result("error", extra);
  } catch (err) {
    if (outer.aborted) return result("error", { message: "the agent-runner is stopping" });
    if (signal.aborted) return result("unreachable", { message: `no answer in ${timeoutMs} ms` });
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return result("unreachable", { message: short(cause?.code ?? cause?.message ?? (err as Error).message, secrets) });
  }
}

/** the provider's error text: OpenAI/Anthropic `error.message`, Ollama `error` */
function errorMessage(body: string): string {
  try {
    const j = JSON.parse(body) as { error?: string | { message?: string } };
    if (typeof j.error === "string") return j.error;
    if (j.error && typeof j.error.message === "string") return j.error.message;
  } catch {
    // not JSON: its start
  }
  return body.slice(0, MESSAGE_MAX);
}

function short(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join("[redacted]");
  out = redactSecrets(out);
  return out.length > MESSAGE_MAX ? `${out.slice(0, MESSAGE_MAX - 1)}…` : out;
}
