/**
 * Live checks of what the wizard was given, each one small real call:
 *  - a model: OpenAI and compatible servers list their models (`GET /v1/models` through the
 *    SDK: the key, the URL, and whether the model is there); Anthropic answers a one-token
 *    message (the key and the model); Ollama lists its pulled models (`/api/tags`);
 *  - a channel token: Telegram `getMe`, Discord `GET /users/@me`, Slack `auth.test` (bot token)
 *    and `apps.connections.open` (app token), at the API roots of the config.
 * A result never quotes a key or token (error texts of the APIs are scrubbed of them). A check
 * takes an AbortSignal (the wizard's Ctrl-C): when it aborts, the check rejects with the
 * signal's reason at once instead of waiting for its timeout.
 */
import type { ProviderChoice } from "./session.js";

export type CheckResult =
  | { ok: true; detail: string }
  | { ok: false; kind: "auth" | "unreachable" | "model" | "other"; problem: string; fix: string };

export const CHECK_TIMEOUT_MS = 15_000;

export interface ModelTarget {
  provider: ProviderChoice;
  model: string;
  /** the endpoint; undefined: the provider's official API (Ollama: http://127.0.0.1:11434) */
  baseUrl?: string;
  apiKey?: string;
}

/** The text of an error with any secret, and anything shaped like a key, taken out. */
export function scrub(text: string, secrets: (string | undefined)[]): string {
  let out = text;
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join("<secret>");
  return out.replace(/\b(sk|xox[abprs]|xapp)-[A-Za-z0-9*_-]{4,}/g, "<secret>").replace(/\/bot\d+:[A-Za-z0-9_-]+/g, "/bot<secret>").slice(0, 300);
}

/** A network failure's short cause (ECONNREFUSED, ENOTFOUND, a timeout). */
function networkCause(err: unknown): string | undefined {
  let e: unknown = err;
  for (let depth = 0; e && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^E[A-Z]+/.test(code)) return code;
    const name = (e as { name?: unknown }).name;
    if (name === "TimeoutError" || name === "AbortError" || /timed? ?out/i.test(String((e as Error).message))) return "no answer in time";
    e = (e as { cause?: unknown }).cause;
  }
  const name = (err as { name?: string }).name ?? "";
  if (/Connection|FetchError/.test(name) || /fetch failed|connection error/i.test(String((err as Error).message))) return "connection failed";
  return undefined;
}

function where(t: ModelTarget): string {
  if (t.baseUrl) return t.baseUrl;
  return t.provider === "anthropic" ? "the Anthropic API" : t.provider === "ollama" ? "http://127.0.0.1:11434" : "the OpenAI API";
}

/** A signal that aborts at the caller's abort or after `timeoutMs`, whichever is first; `done` drops the listener on the caller's. */
function deadline(timeoutMs: number, signal: AbortSignal | undefined): { signal: AbortSignal; done: () => void } {
  const timeout = AbortSignal.timeout(timeoutMs);
  if (!signal) return { signal: timeout, done: () => undefined };
  const both = new AbortController();
  const onAbort = () => both.abort(signal.reason);
  const onTimeout = () => both.abort(timeout.reason);
  const done = () => {
    signal.removeEventListener("abort", onAbort);
    timeout.removeEventListener("abort", onTimeout);
  };
  if (signal.aborted) both.abort(signal.reason);
  else {
    signal.addEventListener("abort", onAbort, { once: true });
    timeout.addEventListener("abort", onTimeout, { once: true });
  }
  return { signal: both.signal, done };
}

/** The caller's abort (Ctrl-C) is not a result: its reason is thrown. */
function rethrowAbort(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason;
}

/** A failed SDK call as a result: the status decides the kind. */
function sdkFailure(err: unknown, t: ModelTarget): CheckResult {
  const status = (err as { status?: unknown; status_code?: unknown }).status ?? (err as { status_code?: unknown }).status_code;
  const message = scrub((err as Error)?.message ?? String(err), [t.apiKey]).replace(/^\d{3}\s+/, "");
  const at = where(t);
  if (status === 401 || status === 403) {
    return { ok: false, kind: "auth", problem: `${at} refused the API key (HTTP ${status}: ${message})`, fix: "check the key (copy it again from the provider's console) and enter it again" };
  }
  if (status === 404) {
    return t.provider === "anthropic"
      ? { ok: false, kind: "model", problem: `the Anthropic API does not know the model "${t.model}" (HTTP 404: ${message})`, fix: "choose a model id such as claude-sonnet-4-5 or claude-haiku-4-5" }
      : { ok: false, kind: "unreachable", problem: `${at} answered 404 (${message})`, fix: t.provider === "ollama" ? "check the host (e.g. http://127.0.0.1:11434)" : "check the base URL: an OpenAI-compatible one usually ends in /v1" };
  }
  const cause = status === undefined ? networkCause(err) : undefined;
  if (cause) {
    return { ok: false, kind: "unreachable", problem: `${at} cannot be reached (${cause})`, fix: t.provider === "ollama" ? "start Ollama (`ollama serve`) or correct the host" : t.baseUrl ? "check the URL and that the server is running" : "check this machine's internet connection (and a proxy, if you use one)" };
  }
  return { ok: false, kind: "other", problem: `${at} answered with an error${typeof status === "number" ? ` (HTTP ${status})` : ""}: ${message}`, fix: "check the settings, or keep them and look at the agent-runner's log after `npx lurkbot start`" };
}

function notListed(t: ModelTarget, listed: string[]): CheckResult {
  const some = listed.slice(0, 12).join(", ");
  return {
    ok: false, kind: "model",
    problem: `${where(t)} accepted the connection but does not list the model "${t.model}"`,
    fix: t.provider === "ollama" ? `pull it first (\`ollama pull ${t.model}\`)${some ? `, or choose one it has: ${some}` : ""}` : `${some ? `it lists: ${some}${listed.length > 12 ? ", …" : ""}; ` : ""}choose one of those (a server that does not list every model may still take it: then keep it)`,
  };
}

async function checkOpenAI(t: ModelTarget, timeoutMs: number, signal?: AbortSignal): Promise<CheckResult> {
  const { default: OpenAI } = await import("openai");
  rethrowAbort(signal);
  const client = new OpenAI({ apiKey: t.apiKey || "no-key", ...(t.baseUrl ? { baseURL: t.baseUrl } : {}), maxRetries: 0, timeout: timeoutMs });
  try {
    const ids: string[] = [];
    for await (const m of client.models.list(signal ? { signal } : {})) {
      ids.push(m.id);
      if (ids.length >= 5000) break;
    }
    if (!ids.includes(t.model)) return notListed(t, ids);
    return { ok: true, detail: `${where(t)} accepted the key and lists ${t.model}` };
  } catch (err) {
    rethrowAbort(signal);
    return sdkFailure(err, t);
  }
}

async function checkAnthropic(t: ModelTarget, timeoutMs: number, signal?: AbortSignal): Promise<CheckResult> {
  const { default: Anthropic } = await import("@anthropic-ai/sdk");
  rethrowAbort(signal);
  const client = new Anthropic({ apiKey: t.apiKey || "no-key", ...(t.baseUrl ? { baseURL: t.baseUrl } : {}), maxRetries: 0, timeout: timeoutMs });
  try {
    const stream = await client.messages.create({ model: t.model, max_tokens: 1, stream: true, messages: [{ role: "user", content: "ping" }] }, signal ? { signal } : {});
    for await (const _event of stream) { /* one token; the stream ends by itself */ }
    return { ok: true, detail: `${where(t)} accepted the key and answered with ${t.model}` };
  } catch (err) {
    rethrowAbort(signal);
    return sdkFailure(err, t);
  }
}

async function checkOllama(t: ModelTarget, timeoutMs: number, abort?: AbortSignal): Promise<CheckResult> {
  const { Ollama } = await import("ollama/browser");
  rethrowAbort(abort);
  const { signal, done } = deadline(timeoutMs, abort);
  const client = new Ollama({
    host: t.baseUrl ?? "http://127.0.0.1:11434",
    ...(t.apiKey ? { headers: { Authorization: `Bearer ${t.apiKey}` } } : {}),
    fetch: ((input: Parameters<typeof fetch>[0], init?: RequestInit) => fetch(input, { ...init, signal })) as typeof fetch,
  });
  try {
    const names = (await client.list()).models.map((m) => m.name);
    const wanted = t.model.includes(":") ? [t.model] : [t.model, `${t.model}:latest`];
    if (!names.some((n) => wanted.includes(n))) return notListed(t, names);
    return { ok: true, detail: `${where(t)} answered and has ${t.model}` };
  } catch (err) {
    rethrowAbort(abort);
    return sdkFailure(err, t);
  } finally {
    done();
  }
}

/** One model check; `signal` (the wizard's Ctrl-C) ends it at once, rejecting with the signal's reason. */
export function checkModel(t: ModelTarget, timeoutMs = CHECK_TIMEOUT_MS, signal?: AbortSignal): Promise<CheckResult> {
  if (t.provider === "anthropic") return checkAnthropic(t, timeoutMs, signal);
  if (t.provider === "ollama") return checkOllama(t, timeoutMs, signal);
  return checkOpenAI(t, timeoutMs, signal);
}

// --- channel tokens ------------------------------------------------------------------------------

export interface ChannelApiRoots {
  telegram: string;
  discord: string;
  slack: string;
}

export async function call(url: string, init: RequestInit, timeoutMs: number, secret: string, api: string, abort?: AbortSignal): Promise<{ status: number; body: Record<string, any> } | CheckResult> {
  rethrowAbort(abort);
  const { signal, done } = deadline(timeoutMs, abort);
  try {
    const res = await fetch(url, { ...init, signal });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    // only a JSON object is a body the checks read fields of (`null`, a list or a string is text)
    const body = parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? parsed as Record<string, any> : { text: scrub(text, [secret]) };
    return { status: res.status, body };
  } catch (err) {
    rethrowAbort(abort);
    return { ok: false, kind: "unreachable", problem: `${api} cannot be reached (${networkCause(err) ?? scrub((err as Error).message, [secret])})`, fix: "check this machine's internet connection, or the API root in config.json" };
  } finally {
    done();
  }
}

export const isResult = (r: unknown): r is CheckResult => typeof r === "object" && r !== null && "ok" in r && typeof (r as { ok: unknown }).ok === "boolean" && !("status" in r);

/** One channel token; `field` is botToken (every channel) or appToken (Slack); `signal` as for checkModel. */
export async function checkChannelToken(channel: "telegram" | "discord" | "slack", field: "botToken" | "appToken", token: string, roots: ChannelApiRoots, timeoutMs = CHECK_TIMEOUT_MS, signal?: AbortSignal): Promise<CheckResult> {
  const refused = (api: string, why: string, fix: string): CheckResult => ({ ok: false, kind: "auth", problem: `${api} refused the token (${scrub(why, [token])})`, fix });
  if (channel === "telegram") {
    const r = await call(`${roots.telegram.replace(/\/+$/, "")}/bot${token}/getMe`, { method: "GET" }, timeoutMs, token, "the Telegram Bot API", signal);
    if (isResult(r)) return r;
    if (r.status === 200 && r.body.ok) return { ok: true, detail: `Telegram knows the bot as @${String(r.body.result?.username ?? "?")}` };
    return refused("the Telegram Bot API", `${r.status} ${String(r.body.description ?? r.body.text ?? "")}`.trim(), "copy the token again from @BotFather (/mybots > your bot > API Token)");
  }
  if (channel === "discord") {
    const r = await call(`${roots.discord.replace(/\/+$/, "")}/v10/users/@me`, { method: "GET", headers: { Authorization: `Bot ${token}` } }, timeoutMs, token, "the Discord API", signal);
    if (isResult(r)) return r;
    if (r.status === 200 && r.body.id) return { ok: true, detail: `Discord knows the bot as ${String(r.body.username ?? r.body.id)}` };
    return refused("the Discord API", `${r.status} ${String(r.body.message ?? r.body.text ?? "")}`.trim(), "copy the token again: Developer Portal > your application > Bot > Reset Token");
  }
  const method = field === "appToken" ? "apps.connections.open" : "auth.test";
  const base = roots.slack.endsWith("/") ? roots.slack : `${roots.slack}/`;
  const r = await call(`${base}${method}`, { method: "POST", headers: { Authorization: `Bearer ${token}`, "content-type": "application/x-www-form-urlencoded" }, body: "" }, timeoutMs, token, "the Slack API", signal);
  if (isResult(r)) return r;
  if (r.status === 200 && r.body.ok) return { ok: true, detail: field === "appToken" ? "Slack accepted the app-level token (Socket Mode)" : `Slack knows the bot as ${String(r.body.user ?? "?")} in ${String(r.body.team ?? "?")}` };
  return refused("the Slack API", `${r.status} ${String(r.body.error ?? r.body.text ?? "")}`.trim(), field === "appToken" ? "your Slack app > Basic Information > App-Level Tokens (with connections:write), xapp-..." : "your Slack app > OAuth & Permissions > Bot User OAuth Token, xoxb-...");
}
