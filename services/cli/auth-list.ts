/**
 * `lurkbot auth list`: every auth profile of the config with its credential kind, endpoint host
 * and state — a token's expiry, and for refresh_token profiles the login stored in `lurk_auth`.
 * The bucket is only read when such a profile exists; when it cannot be read the list is still
 * printed (their state "unknown") and the command fails with the bus's exit code. No key,
 * token or client secret is ever printed.
 */
import type { Env, LurkConfig } from "../../shared/runtime/config.js";
import { openAuthBucket, readLogin, when, type StoredLogin } from "./auth-bucket.js";
import { configuredProfiles, endpointHost, type CredentialKind, type ListedProfile } from "./auth-profiles.js";
import { connectCli } from "./bus.js";
import { CliError, toCliError } from "./errors.js";
import { table } from "./format.js";

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
}

export interface AuthListReport {
  profiles: ProfileReport[];
  notes: string[];
  /** the lurk_auth bucket could not be read: why */
  busError?: string;
}

export async function gatherAuthList(cfg: LurkConfig, env: Env, now = Date.now()): Promise<{ report: AuthListReport; failure?: CliError }> {
  const { profiles, notes } = configuredProfiles(cfg);
  const reports: ProfileReport[] = profiles.map(baseReport);
  const refreshing = profiles.filter((p) => p.kind === "oauth refresh_token");
  if (refreshing.length === 0) return { report: { profiles: reports, notes } };
  let failure: CliError | undefined;
  const logins = new Map<string, StoredLogin>();
  try {
    const nc = await connectCli(cfg, env);
    try {
      const kv = await openAuthBucket(nc);
      for (const p of refreshing) logins.set(`${p.provider}/${p.id}`, await readLogin(kv, p.provider, p.id));
    } finally {
      await nc.close().catch(() => undefined);
    }
  } catch (err) {
    const ce = toCliError(err);
    failure = new CliError(`the login state of ${refreshing.map((p) => `${p.provider}/${p.id}`).join(", ")} is unknown: ${ce.message}`, ce.exitCode);
  }
  for (const r of reports) {
    if (r.kind !== "oauth refresh_token") continue;
    const stored = logins.get(`${r.provider}/${r.id}`);
    r.login = !stored ? { state: "unknown" } : loginState(stored, now);
  }
  return { report: { profiles: reports, notes, ...(failure ? { busError: failure.message } : {}) }, ...(failure ? { failure } : {}) };
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
  const rows = report.profiles.map((r) => [r.provider, r.id, r.kind, r.endpoint ?? "-", statusText(r, now)]);
  return table(["PROVIDER", "PROFILE", "CREDENTIAL", "ENDPOINT", "STATUS"], rows) + report.notes.map((n) => `note: ${n}\n`).join("");
}
