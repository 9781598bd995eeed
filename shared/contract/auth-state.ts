/**
 * The `lurk_auth` KV bucket (AUTH_BUCKET): the tokens of auth profiles whose OAuth client uses the
 * refresh_token grant (shared/runtime/config-providers.ts). `lurkbot auth login` / `auth import`
 * write an entry; every agent-runner of the cluster reads it and writes refreshed tokens back with
 * a compare-and-set on the entry's revision, so a refresh token replaced by one refresh is never
 * used again by another host. Only the agent-runner and cli users may touch the bucket.
 *
 * Key: `<provider>.<profileId>` (oauthStateKey).
 */
import { z } from "zod";
import { safeParseJson } from "./safe-json.js";

export const oauthStateSchema = z.object({
  type: z.literal("lurk.auth.oauth.v1"),
  /** new at each login or import: a change of it is a new login (the agent-runners clear that profile's cooldowns) */
  loginId: z.string().min(1).max(64),
  refreshToken: z.string().min(1).max(16_384),
  accessToken: z.string().min(1).max(16_384).optional(),
  /** epoch ms at which accessToken expires (absent: unknown, refreshed on the first 401) */
  expiresAt: z.number().int().optional(),
  /** epoch ms of the last login or refresh */
  updatedAt: z.number().int(),
  /** who wrote it: `cli` for a login, `<host>:<pid>` for a refresh */
  updatedBy: z.string().max(200),
  /**
   * An agent-runner refreshing now (a claim written with compare-and-set): the others wait for
   * the next revision instead of spending the same refresh token, until `until` (epoch ms).
   */
  refreshing: z.object({ by: z.string().max(200), until: z.number().int() }).optional(),
});
export type OAuthState = z.infer<typeof oauthStateSchema>;

/** The KV key of a profile's OAuth state; profile ids are [A-Za-z0-9._-], valid in KV keys. */
export function oauthStateKey(provider: string, profileId: string): string {
  return `${provider}.${profileId}`;
}

/** The provider and profile id of a bucket key (oauthStateKey's inverse; the provider has no dot). */
export function parseOAuthStateKey(key: string): { provider: string; profileId: string } {
  const dot = key.indexOf(".");
  return { provider: key.slice(0, dot), profileId: key.slice(dot + 1) };
}

/** A bucket entry's value as OAuth state, or undefined when it is not one (size-capped, safe JSON, the schema). */
export function parseOAuthState(value: Uint8Array): OAuthState | undefined {
  try {
    return oauthStateSchema.parse(safeParseJson(value, { maxBytes: 64 * 1024, maxDepth: 8 }));
  } catch {
    return undefined;
  }
}
