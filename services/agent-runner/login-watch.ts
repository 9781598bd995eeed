/**
 * A new login takes effect at once: when `lurkbot auth login` or `auth import` stores tokens for
 * an OAuth profile (an entry of the `lurk_auth` bucket with a new `loginId`), this host's disable and
 * cooldowns of that profile (for models and for speech) are cleared (a refused login had disabled
 * it for hours). Every agent-runner watches, so every host forgets them. Started only when a profile uses the
 * refresh_token grant; stops with `signal`.
 */
import { KvWatchInclude, type KV } from "@nats-io/kv";
import { parseOAuthState, parseOAuthStateKey } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { AuthStateStore } from "./auth-profiles.js";
import { speechStateProvider } from "./speech-profiles.js";

export async function watchLogins(kv: KV, store: AuthStateStore, log: Logger, signal: AbortSignal): Promise<void> {
  const updates = await kv.watch({ include: KvWatchInclude.UpdatesOnly });
  signal.addEventListener("abort", () => updates.stop(), { once: true });
  /** the login each key was last seen with: claims, refreshes and give-backs keep it */
  const logins = new Map<string, string>();
  for await (const entry of updates) {
    if (entry.operation !== "PUT") continue;
    const state = parseOAuthState(entry.value);
    if (!state) continue;
    const seen = logins.get(entry.key);
    logins.set(entry.key, state.loginId);
    // a new login: another loginId than seen before, or (first seen) a login's own write, not a runner's
    const isLogin = seen === undefined ? state.updatedBy === "cli" && !state.refreshing : seen !== state.loginId;
    if (!isLogin) continue;
    const { provider, profileId } = parseOAuthStateKey(entry.key);
    try {
      // the profile's chat state and its speech state (speech-profiles.ts)
      const chat = await store.clearProfile(provider, profileId);
      const speech = await store.clearProfile(speechStateProvider(provider), profileId);
      if (chat || speech) log.info({ provider, profile: profileId }, "new login: the profile's disable and cooldowns are cleared");
    } catch (err) {
      log.warn({ err, provider, profile: profileId }, "new login: could not clear the profile's cooldowns");
    }
  }
}
