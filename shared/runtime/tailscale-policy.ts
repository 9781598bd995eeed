/**
 * When the web chat may be published with Tailscale (`channels.web.tailscale`): the rule the
 * web channel enforces at start (services/channel-web/tailscale.ts) and `lurkbot security audit`
 * reports (services/cli/audit/tailscale.ts), one copy.
 *  - serve and funnel: only a chat listening on loopback (else it is reachable around Tailscale
 *    in plain HTTP, and Tailscale's HTTPS protects nothing);
 *  - funnel: every token strong (token-strength.ts): on the internet the token is all that
 *    guards the chat. The chat always has token auth (one token, generated when absent, or one
 *    per user), so there is no "no auth" case to refuse.
 */
import type { WebChannelConfig } from "./config-channels.js";
import { isLoopbackHost } from "./loopback-host.js";
import { tokenWeakness } from "./token-strength.js";

export interface WebToken {
  /** the config key, e.g. "channels.web.token" or "channels.web.users[alice].token" */
  key: string;
  value: string;
}

/** The web chat's tokens in force: each user's, else the single one (`single`; none when it does not exist yet). */
export function webTokensOf(settings: Pick<WebChannelConfig, "users">, single: string | undefined): WebToken[] {
  if (settings.users) return settings.users.map((u) => ({ key: `channels.web.users[${u.id}].token`, value: u.token }));
  return single === undefined ? [] : [{ key: "channels.web.token", value: single }];
}

export interface PublishRefusal {
  /** why, naming the config keys (never a token) */
  reason: string;
  /** the change that allows it */
  fix: string;
}

/** Why these settings may not be published, and the fix; undefined when they may. */
export function tailscalePublishRefusal(settings: Pick<WebChannelConfig, "host" | "tailscale">, tokens: readonly WebToken[]): PublishRefusal | undefined {
  const mode = settings.tailscale.mode;
  if (mode === "off") return undefined;
  if (!isLoopbackHost(settings.host)) {
    return {
      reason: `channels.web.tailscale.mode is "${mode}" but channels.web.host is "${settings.host}", not loopback: Tailscale would publish a chat that is already reachable around it in plain HTTP`,
      fix: `set channels.web.host to "127.0.0.1" (Tailscale reaches it there), or channels.web.tailscale.mode to "off"`,
    };
  }
  if (mode !== "funnel") return undefined;
  for (const t of tokens) {
    const why = tokenWeakness(t.value);
    if (why) {
      return {
        reason: `channels.web.tailscale.mode "funnel" puts the chat on the internet, where only its token guards it, and ${t.key} is easy to guess (${why})`,
        fix: `set a random token of 32+ characters (e.g. \`openssl rand -hex 32\`) as ${t.key}, or use mode "serve" (your tailnet only)`,
      };
    }
  }
  return undefined;
}
