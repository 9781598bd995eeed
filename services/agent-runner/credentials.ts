/**
 * Where an auth profile's secret comes from when it is not a plain API key (seed 001 §3.9:
 * credential types token and oauth; config in shared/runtime/config-providers.ts).
 *
 * Contract of `secret(signal, refused?)`: resolves with the secret for the next call, or rejects
 * with a LurkError (PROVIDER_AUTH: this profile cannot be used until someone acts, the message
 * says what to do; PROVIDER_* retryable: try again later). `refused` is a secret the provider
 * just answered 401/403 for: a renewable source gets another one instead of returning it again.
 *  - StaticToken: a configured bearer token, refused by us once `expires` has passed.
 *  - ClientCredentials: tokens from the client_credentials grant, kept in memory until 60 s
 *    before they expire; concurrent callers share one request.
 *  - RefreshedTokens: the tokens `lurkbot auth login` stored in the `lurk_auth` bucket. The
 *    access token is used until 60 s before it expires; then one agent-runner of the cluster
 *    claims the entry (compare-and-set on its revision), refreshes, and writes the new tokens
 *    back the same way. Others wait for that write (up to CLAIM_MS; a claim older than that is
 *    taken over), so a refresh token is spent once even when the server rotates it.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { KV } from "@nats-io/kv";
import { LurkError, oauthStateKey, parseOAuthState, type OAuthState } from "../../shared/contract/index.js";
import { isWrongRevision } from "../../shared/runtime/lease.js";
import type { OAuthClientConfig } from "../../shared/runtime/config-providers.js";
import { clientFields, refreshGrant, requestTokens } from "../../shared/runtime/oauth-token-endpoint.js";
import { abortable, sleepUnlessAborted } from "../../shared/runtime/abortable-sleep.js";

const aborted = () => new LurkError("ABORTED", "the run was aborted");

export interface CredentialSource {
  secret(signal: AbortSignal, refused?: string): Promise<string>;
  /** whether a refused secret can be replaced by asking again */
  readonly renewable: boolean;
}

/** a token this close to its expiry is renewed first (clock skew, the call's own duration) */
export const EXPIRY_SKEW_MS = 60_000;
/** how long a refresh claim holds before another instance may take it over */
export const CLAIM_MS = 30_000;
const CLAIM_POLL_MS = 200;

export class StaticToken implements CredentialSource {
  readonly renewable = false;
  constructor(private readonly token: string, private readonly expires: number | undefined, private readonly label: string, private readonly fix: string, private readonly now: () => number = Date.now) {}

  secret(): Promise<string> {
    if (this.expires !== undefined && this.expires <= this.now()) {
      return Promise.reject(new LurkError("PROVIDER_AUTH", `the token of ${this.label} expired at ${new Date(this.expires).toISOString()}; ${this.fix}`));
    }
    return Promise.resolve(this.token);
  }
}

interface Held {
  token: string;
  expiresAt?: number;
}

const usable = (held: Held | undefined, refused: string | undefined, now: number): held is Held =>
  held !== undefined && held.token !== refused && (held.expiresAt === undefined || held.expiresAt - EXPIRY_SKEW_MS > now);

export class ClientCredentials implements CredentialSource {
  readonly renewable = true;
  private held: Held | undefined;
  private inflight: Promise<Held> | undefined;

  constructor(private readonly client: OAuthClientConfig, private readonly label: string, private readonly now: () => number = Date.now) {}

  async secret(signal: AbortSignal, refused?: string): Promise<string> {
    if (usable(this.held, refused, this.now())) return this.held.token;
    // one request for every caller; it is not tied to the first caller's signal
    this.inflight ??= requestTokens(this.client, { grant_type: "client_credentials", ...clientFields(this.client), ...(this.client.scope ? { scope: this.client.scope } : {}) }, {
      label: `the client_credentials grant of ${this.label}`,
      fix: "check the profile's oauth clientId, clientSecret and scope in config.json",
      now: this.now,
    }).then((t) => ({ token: t.accessToken, ...(t.expiresAt !== undefined ? { expiresAt: t.expiresAt } : {}) }))
      .finally(() => (this.inflight = undefined));
    this.held = await abortable(this.inflight, signal, aborted);
    return this.held.token;
  }
}

export class RefreshedTokens implements CredentialSource {
  readonly renewable = true;
  private held: Held | undefined;
  /** one read-and-refresh at a time in this process; the bucket's claim covers the other processes */
  private inflight: Promise<Held> | undefined;
  private inflightRefused: string | undefined;
  private readonly me = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;

  constructor(
    private readonly kv: () => Promise<KV>,
    private readonly provider: string,
    private readonly profileId: string,
    private readonly client: OAuthClientConfig,
    private readonly now: () => number = Date.now,
  ) {}

  private get label(): string {
    return `auth profile ${this.provider}/${this.profileId}`;
  }

  private get loginFix(): string {
    return `log in again with \`lurkbot auth login ${this.provider} ${this.profileId}\``;
  }

  async secret(signal: AbortSignal, refused?: string): Promise<string> {
    if (usable(this.held, refused, this.now())) return this.held.token;
    if (!this.inflight || this.inflightRefused !== refused) {
      this.inflightRefused = refused;
      const current = this.current(refused).finally(() => {
        if (this.inflight === current) this.inflight = undefined;
      });
      this.inflight = current;
    }
    // shared by every caller; not tied to the first caller's signal (the refresh serves them all)
    this.held = await abortable(this.inflight, signal, aborted);
    return this.held.token;
  }

  private async current(refused: string | undefined): Promise<Held> {
    const signal = AbortSignal.timeout(CLAIM_MS * 2);
    const kv = await this.bus(() => this.kv());
    const key = oauthStateKey(this.provider, this.profileId);
    for (;;) {
      if (signal.aborted) throw new LurkError("PROVIDER_TIMEOUT", `no tokens for ${this.label} within ${(CLAIM_MS * 2) / 1000} s: another agent-runner's refresh did not finish`);
      const entry = await this.bus(() => kv.get(key));
      if (!entry || entry.operation !== "PUT") throw new LurkError("PROVIDER_AUTH", `${this.label} has no tokens; log in with \`lurkbot auth login ${this.provider} ${this.profileId}\``);
      const state = this.parse(entry.value);
      const now = this.now();
      const stored: Held | undefined = state.accessToken ? { token: state.accessToken, ...(state.expiresAt !== undefined ? { expiresAt: state.expiresAt } : {}) } : undefined;
      if (usable(stored, refused, now)) return stored;
      if (state.refreshing && state.refreshing.until > now && state.refreshing.by !== this.me) {
        await sleepUnlessAborted(CLAIM_POLL_MS, signal);
        continue;
      }
      const claim: OAuthState = { ...state, refreshing: { by: this.me, until: now + CLAIM_MS } };
      let claimed: number;
      try {
        claimed = await kv.update(key, JSON.stringify(claim), entry.revision);
      } catch (err) {
        if (isWrongRevision(err)) continue; // another instance wrote first (a claim, a refresh or a new login): read it again
        throw this.busError(err);
      }
      return this.refresh(kv, key, state, claimed, signal);
    }
  }

  private async refresh(kv: KV, key: string, state: OAuthState, claimed: number, signal: AbortSignal): Promise<Held> {
    const { refreshing: _, ...rest } = state;
    let tokens;
    try {
      tokens = await requestTokens(this.client, refreshGrant(this.client, state.refreshToken), {
        label: `the token refresh of ${this.label}`, fix: this.loginFix, signal, now: this.now,
      });
    } catch (err) {
      // give the claim back at once (a refused refresh token stays refused: the next try says so again)
      await kv.update(key, JSON.stringify(rest), claimed).catch(() => undefined);
      throw err;
    }
    const next: OAuthState = {
      ...rest,
      accessToken: tokens.accessToken,
      refreshToken: tokens.refreshToken ?? state.refreshToken,
      updatedAt: this.now(),
      updatedBy: this.me,
    };
    if (tokens.expiresAt !== undefined) next.expiresAt = tokens.expiresAt;
    else delete next.expiresAt;
    for (let write = 0; ; write++) {
      try {
        await kv.update(key, JSON.stringify(next), claimed);
        break;
      } catch (err) {
        // a new login replaced the entry meanwhile: its tokens win; these belong to the old login
        if (isWrongRevision(err)) throw new LurkError("PROVIDER_ERROR", `the tokens of ${this.label} changed while refreshing (a new login?); trying again`, { retryable: true, cause: err });
        // the bus failed: the new access token still serves this process until it expires
        if (write >= 2) break;
        await sleepUnlessAborted(1_000, signal);
      }
    }
    return { token: next.accessToken!, ...(next.expiresAt !== undefined ? { expiresAt: next.expiresAt } : {}) };
  }

  private async bus<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      throw this.busError(err);
    }
  }

  private busError(err: unknown): LurkError {
    return new LurkError("PROVIDER_ERROR", `cannot read the tokens of ${this.label} from the lurk_auth bucket: ${(err as Error).message}`, { retryable: true, cause: err });
  }

  private parse(value: Uint8Array): OAuthState {
    const state = parseOAuthState(value);
    if (!state) throw new LurkError("PROVIDER_AUTH", `the stored tokens of ${this.label} cannot be read; ${this.loginFix}`);
    return state;
  }
}
