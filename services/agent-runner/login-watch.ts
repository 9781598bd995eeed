/**
 * A new login takes effect at once: when `lurkbot auth login` or `auth import` stores tokens for
 * an OAuth profile (an entry of the `lurk_auth` bucket written by `cli`), this host's disable and
 * cooldowns of that profile are cleared (a refused login had disabled it for hours). Every
 * agent-runner watches, so every host forgets them. Started only when a profile uses the
 * refresh_token grant; stops with `signal`.
 */
import { KvWatchInclude, type KV } from "@nats-io/kv";
import { oauthStateSchema, safeParseJson } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { AuthStateStore } from "./auth-profiles.js";

export async function watchLogins(kv: KV, store: AuthStateStore, log: Logger, signal: AbortSignal): Promise<void> {
  const updates = await kv.watch({ include: KvWatchInclude.UpdatesOnly });
  signal.addEventListener("abort", () => updates.stop(), { once: true });
  for await (const entry of updates) {
    if (entry.operation !== "PUT") continue;
    const parsed = (() => {
      try {
        return oauthStateSchema.safeParse(safeParseJson(entry.value, { maxBytes: 64 * 1024, maxDepth: 8 }));
      } catch {
        return undefined;
      }
    })();
    if (!parsed?.success || parsed.data.updatedBy !== "cli") continue;
    const dot = entry.key.indexOf(".");
    const provider = entry.key.slice(0, dot);
    const profile = entry.key.slice(dot + 1);
    try {
      if (await store.clearProfile(provider, profile)) log.info({ provider, profile }, "new login: the profile's disable and cooldowns are cleared");
    } catch (err) {
      log.warn({ err, provider, profile }, "new login: could not clear the profile's cooldowns");
    }
  }
}
