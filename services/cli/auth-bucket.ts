/**
 * The CLI's side of the `lurk_auth` bucket (shared/contract/auth-state.ts): open it, read a
 * profile's stored login, write a new one (login, import). Nothing here prints a token.
 */
import { randomUUID } from "node:crypto";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { AUTH_BUCKET, oauthStateKey, oauthStateSchema, parseOAuthState, type OAuthState } from "../../shared/contract/index.js";
import { CliError } from "./errors.js";

export async function openAuthBucket(nc: NatsConnection): Promise<KV> {
  try {
    const kv = await new Kvm(nc).open(AUTH_BUCKET);
    // open() only binds: reading the bucket's info tells whether it exists
    await kv.status();
    return kv;
  } catch (err) {
    throw new CliError(`cannot open the ${AUTH_BUCKET} bucket (${(err as Error).message}); create it with \`npx lurkbot streams\` (or start LurkBot with \`npx lurkbot start\`).`);
  }
}

export type StoredLogin = { state: "none" } | { state: "unreadable" } | { state: "stored"; login: OAuthState };

export async function readLogin(kv: KV, provider: string, id: string): Promise<StoredLogin> {
  const entry = await kv.get(oauthStateKey(provider, id));
  if (!entry || entry.operation !== "PUT") return { state: "none" };
  const login = parseOAuthState(entry.value);
  return login ? { state: "stored", login } : { state: "unreadable" };
}

export interface NewTokens {
  refreshToken: string;
  accessToken?: string;
  expiresAt?: number;
}

/** A new login (a new loginId) replacing any stored one; agent-runners pick it up on their next read. */
export async function storeLogin(kv: KV, provider: string, id: string, tokens: NewTokens, now = Date.now()): Promise<OAuthState> {
  const parsed = oauthStateSchema.safeParse({
    type: "lurk.auth.oauth.v1",
    loginId: randomUUID(),
    refreshToken: tokens.refreshToken,
    ...(tokens.accessToken ? { accessToken: tokens.accessToken } : {}),
    ...(tokens.expiresAt !== undefined ? { expiresAt: tokens.expiresAt } : {}),
    updatedAt: now,
    updatedBy: "cli",
  });
  if (!parsed.success) {
    const fields = parsed.error.issues.map((i) => i.path.join(".")).join(", ");
    throw new CliError(`the tokens of ${provider}/${id} cannot be stored: ${fields} not as the ${AUTH_BUCKET} bucket takes them (too long?); nothing was stored.`);
  }
  const state = parsed.data;
  try {
    await kv.put(oauthStateKey(provider, id), JSON.stringify(state));
  } catch (err) {
    throw new CliError(`the tokens of ${provider}/${id} could not be stored in the ${AUTH_BUCKET} bucket (${(err as Error).message}); check that LurkBot runs (\`npx lurkbot status\`) and try again.`);
  }
  return state;
}

/** epoch ms as `2027-01-01T00:00:00Z` */
export function when(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}
