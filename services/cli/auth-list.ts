/**
 * `lurkbot auth list`: every auth profile of the config with its credential kind, endpoint host
 * and state — a token's expiry, and for refresh_token profiles the login stored in `lurk_auth`.
 * The bucket is only read when such a profile exists; when it cannot be read the list is still
 * printed (their state "unknown") and the command fails with the bus's exit code. No key,
 * token or client secret is ever printed.
 * The agent-runners' state of each profile (`lurk.agent-runner.auth_state`, gathered from every
 * runner and merged: shared/runtime/auth-state-view.ts) adds COOLDOWN, FAILURES, LAST USED, LAST OK
 * and RATE LIMIT columns (`runtime` in --json); profiles only the runners know (speech, a profile of another
 * host's config) are added after the config's. No runner answering: a note, exit 0.
 */
import type { RateLimitSnapshot } from "../../shared/contract/index.js";
import type { Env, LurkConfig } from "../../shared/runtime/config.js";
import { openAuthBucket, readLogin, when, type StoredLogin } from "./auth-bucket.js";
import { configuredProfiles, endpointHost, type CredentialKind, type ListedProfile } from "./auth-profiles.js";
import { connectCli } from "./bus.js";
import { CliError, toCliError } from "./errors.js";
import { table } from "./format.js";
import { formatWait, gatherAuthState, unavailable, type AuthStateView, type MergedProfile } from "../../shared/runtime/auth-state-view.js";

export type LoginState =
  | { state: "logged-in"; updatedAt: number; updatedBy: string; accessTokenExpiresAt?: number; hasAccessToken: boolean; refreshingBy?: string }
  | { state: "not-logged-in" }
  | { state: "unreadable" }
  | { state: "unknown" };

export interface ProfileReport {
  provider: string;
  id: string;
  kind: CredentialKind;
  endpoint?: string;
  /** token: its expiry (epoch ms) */
  expires?: number;
  /** oauth: the token endpoint's host */
  tokenHost?: string;
  /** refresh_token: whether `auth login` is possible (authorizeUrl configured) */
  canLogin?: boolean;
  login?: LoginState;
  /** the agent-runners' state of the profile (absent: no runner answered for it) */
  runtime?: Omit<MergedProfile, "provider" | "id" | "kind">;
}

export interface AuthListReport {
  profiles: ProfileReport[];
  notes: string[];
  /** the lurk_auth bucket could not be read: why */
  busError?: string;
  /** the agent-runners that answered (host, pid, store); absent when the bus could not be reached */
  runners?: AuthStateView["runners"];
}

export async function gatherAuthList(cfg: LurkConfig, env: Env, now = Date.now()): Promise<{ report: AuthListReport; failure?: CliError }> {
  const { profiles, notes } = configuredProfiles(cfg);
  const reports: ProfileReport[] = profiles.map(baseReport);
  const refreshing = profiles.filter((p) => p.kind === "oauth refresh_token");
  let failure: CliError | undefined;
  const logins = new Map<string, StoredLogin>();
  let view: AuthStateView | undefined;
  try {
    const nc = await connectCli(cfg, env);
    try {
      if (refreshing.length > 0) {
        const kv = await openAuthBucket(nc);
        for (const p of refreshing) logins.set(`${p.provider}/${p.id}`, await readLogin(kv, p.provider, p.id));
      }
      view = await gatherAuthState(nc, cfg.nats.prefix);
    } finally {
      await nc.close().catch(() => undefined);
    }
  } catch (err) {
    const ce = toCliError(err);
    failure = refreshing.length > 0
      ? new CliError(`the login state of ${refreshing.map((p) => `${p.provider}/${p.id}`).join(", ")} is unknown: ${ce.message}`, ce.exitCode)
      : new CliError(`the profiles' cooldowns and rate limits are unknown: ${ce.message}`, ce.exitCode);
  }
  if (view) addRuntime(reports, view, notes);
  for (const r of reports) {
    if (r.kind !== "oauth refresh_token") continue;
    const stored = logins.get(`${r.provider}/${r.id}`);
    r.login = !stored ? { state: "unknown" } : loginState(stored, now);
  }
  return { report: { profiles: reports, notes, ...(failure ? { busError: failure.message } : {}), ...(view ? { runners: view.runners } : {}) }, ...(failure ? { failure } : {}) };
}

/** Each profile's runner state onto its row; profiles only the runners know (speech, a profile of another host's config) as rows of their own. */
function addRuntime(reports: ProfileReport[], view: AuthStateView, notes: string[]): void {
  if (view.runners.length === 0) {
    notes.push("no agent-runner answered: cooldowns, failures, last use and rate limits are unknown (start them with `npx lurkbot start`).");
    return;
  }
  for (const { profiles } of view.providers) {
    for (const m of profiles) {
      const { provider, id, kind, ...runtime } = m;
      const row = reports.find((r) => r.provider === provider && r.id === id);
      if (row) row.runtime = runtime;
      else reports.push({ provider: provider as ProfileReport["provider"], id, kind, runtime });
    }
  }
  if (view.errors.length > 0 || view.malformed > 0) notes.push(`${view.errors.length + view.malformed} agent-runner repl${view.errors.length + view.malformed === 1 ? "y was" : "ies were"} not usable${view.errors[0] ? ` (${view.errors[0].message})` : ""}.`);
}

function baseReport(p: ListedProfile): ProfileReport {
  return {
    provider: p.provider,
    id: p.id,
    kind: p.kind,
    ...(p.endpoint ? { endpoint: p.endpoint } : {}),
    ...(p.expires !== undefined ? { expires: p.expires } : {}),
    ...(p.oauth ? { tokenHost: endpointHost(p.oauth.tokenUrl)! } : {}),
    ...(p.oauth?.grant === "refresh_token" ? { canLogin: p.oauth.authorizeUrl !== undefined } : {}),
  };
}

function loginState(stored: StoredLogin, now: number): LoginState {
  if (stored.state === "none") return { state: "not-logged-in" };
  if (stored.state === "unreadable") return { state: "unreadable" };
  const l = stored.login;
  return {
    state: "logged-in",
    updatedAt: l.updatedAt,
    updatedBy: l.updatedBy,
    hasAccessToken: l.accessToken !== undefined,
    ...(l.expiresAt !== undefined ? { accessTokenExpiresAt: l.expiresAt } : {}),
    ...(l.refreshing && l.refreshing.until > now ? { refreshingBy: l.refreshing.by } : {}),
  };
}

export function statusText(r: ProfileReport, now = Date.now()): string {
  const again = `\`lurkbot auth ${r.canLogin === false ? "import" : "login"} ${r.provider} ${r.id}\``;
  switch (r.kind) {
    case "token":
      if (r.expires === undefined) return "no expiry set";
      return r.expires <= now ? `EXPIRED ${when(r.expires)} — put a new token in config.json` : `expires ${when(r.expires)}`;
    case "oauth client_credentials":
      return `tokens from ${r.tokenHost} when used`;
    case "oauth refresh_token": {
      const l = r.login;
      if (!l || l.state === "unknown") return "login state unknown (the lurk_auth bucket cannot be read, see below)";
      if (l.state === "not-logged-in") return `not logged in — run ${again}`;
      if (l.state === "unreadable") return `stored tokens unreadable — run ${again}`;
      const who = l.updatedBy === "cli" ? `logged in ${when(l.updatedAt)} by cli` : `logged in; refreshed ${when(l.updatedAt)} by ${l.updatedBy}`;
      const access = !l.hasAccessToken ? "no access token yet (fetched when used)"
        : l.accessTokenExpiresAt === undefined ? "access token (expiry unknown)"
        : l.accessTokenExpiresAt > now ? `access token valid until ${when(l.accessTokenExpiresAt)}`
        : `access token expired ${when(l.accessTokenExpiresAt)} (refreshed when used)`;
      return `${who}; ${access}${l.refreshingBy ? `; being refreshed by ${l.refreshingBy}` : ""}`;
    }
    default:
      return "-";
  }
}

export function formatAuthList(report: AuthListReport, now = Date.now()): string {
  const state = (report.runners?.length ?? 0) > 0;
  const hosts = new Set(report.runners?.map((r) => r.host));
  const rows = report.profiles.map((r) => [
    r.provider, r.id, r.kind, r.endpoint ?? "-",
    ...(state ? runtimeCells(r.runtime, now, hosts.size > 1) : []),
    statusText(r, now),
  ]);
  const head = ["PROVIDER", "PROFILE", "CREDENTIAL", "ENDPOINT", ...(state ? ["COOLDOWN", "FAILURES", "LAST USED", "LAST OK", "RATE LIMIT"] : []), "STATUS"];
  return table(head, rows) + report.notes.map((n) => `note: ${n}\n`).join("");
}

/** 12 s ago, 3 min ago, 2 h ago, 2026-11-27 (older than two days) */
export function ago(at: number | undefined, now = Date.now()): string {
  if (at === undefined) return "-";
  const ms = now - at;
  if (ms < 0) return when(at);
  if (ms < 48 * 3_600_000) return `${formatWait(Math.max(1000, ms)).replace(/ \d+ min$/, "")} ago`;
  return when(at).slice(0, 10);
}

function runtimeCells(rt: ProfileReport["runtime"], now: number, manyHosts: boolean): string[] {
  if (!rt) return ["?", "?", "?", "?", "-"];
  const u = unavailable({ provider: "", id: "", kind: "none", ...rt }, now);
  const at = (host: string) => (manyHosts ? ` @${host}` : "");
  const cooldown = !u ? "-"
    : u.kind === "disabled" ? `disabled ${formatWait(u.until - now)} (${u.reason})${at(u.host)}`
    : `${formatWait(u.until - now)} (${u.reason}, ${u.model})${at(u.host)}`;
  const failures = Object.entries(rt.failureCounts).map(([k, n]) => `${k} ${n}`).join(", ") || "-";
  return [cooldown, failures, ago(rt.lastUsed, now), ago(rt.lastSuccess, now), rateLimitCell(rt.rateLimits)];
}

/** the scarcest window of the last response: `requests 12/50` */
function rateLimitCell(r: RateLimitSnapshot | undefined): string {
  if (!r) return "-";
  const scored = r.windows.filter((w) => w.remaining !== undefined && w.limit !== undefined && w.limit > 0).sort((a, b) => a.remaining! / a.limit! - b.remaining! / b.limit!);
  const w = scored[0] ?? r.windows[0];
  if (!w) return "-";
  return `${w.name} ${w.remaining ?? "?"}/${w.limit ?? "?"}`;
}
