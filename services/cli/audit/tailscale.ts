/**
 * The web chat published with Tailscale (`channels.web.tailscale`, services/channel-web/README.md):
 *  - funnel: a warning (`channel.web.tailscale-funnel`): the chat is on the internet; says what
 *    guards it;
 *  - serve: info (`channel.web.tailscale-serve`): the tailnet reaches the chat;
 *  - a setting the channel will refuse at start (shared/runtime/tailscale-policy.ts, the same
 *    rule): a warning (`channel.web.tailscale-refused`) with the reason: nothing is published.
 * Only for an enabled web channel.
 */
import { tailscalePublishRefusal, type WebToken } from "../../../shared/runtime/tailscale-policy.js";
import { tailnetUrl } from "../../../shared/runtime/tailscale.js";
import { finding, type AuditContext, type AuditFinding } from "./finding.js";
import { channelSecret, storedChannelSecrets } from "./tokens.js";

export function tailscaleChecks(ctx: AuditContext): AuditFinding[] {
  const web = ctx.config.channels.web;
  if (!web?.enabled || web.tailscale.mode === "off") return [];
  const ts = web.tailscale;
  // the tokens in force; one not generated yet will be random (strong)
  const tokens: WebToken[] = web.users
    ? web.users.map((u) => ({ key: `channels.web.users[${u.id}].token`, value: u.token }))
    : [channelSecret(ctx.config, "web", "token", storedChannelSecrets(ctx.config))].flatMap((s) => (s.value === undefined ? [] : [{ key: s.key, value: s.value }]));
  const where = tailnetUrl("<this host>.<tailnet>.ts.net", ts.httpsPort);
  const refusal = tailscalePublishRefusal(web, tokens);
  if (refusal) {
    return [finding({
      id: "channel.web.tailscale-refused", level: "warning",
      title: `channels.web.tailscale.mode is "${ts.mode}", but the web channel will refuse to publish the chat`,
      detail: `${refusal.reason}. The web channel checks this rule at start and publishes nothing (it logs the refusal, emits tailscale_failed and serves locally only).`,
      fix: refusal.fix,
    })];
  }
  const guard = web.users ? `each user's token (channels.web.users, ${web.users.length} user${web.users.length === 1 ? "" : "s"})` : "the web token (channels.web.token)";
  if (ts.mode === "funnel") {
    return [finding({
      id: "channel.web.tailscale-funnel", level: "warning",
      title: "the web chat is on the internet (Tailscale Funnel)",
      detail: `channels.web.tailscale.mode is "funnel": anyone on the internet who learns ${where} reaches the chat's page, API and socket, and through them the agent with its tools. What guards it: ${guard}, checked on every socket and API call (a wrong one gets 401/4401), HTTPS by Tailscale, the chat listening on loopback only; the channel refuses funnel with a weak token. Nothing limits how often a token may be tried.`,
      fix: "if only your own devices need the chat, set channels.web.tailscale.mode to \"serve\" (your tailnet only) or \"off\"; keep every token long and random, and rotate one that may have leaked",
    })];
  }
  return [finding({
    id: "channel.web.tailscale-serve", level: "info",
    title: "the web chat is reachable from your tailnet (Tailscale Serve)",
    detail: `channels.web.tailscale.mode is "serve": the devices of your tailnet that its access rules let in reach the chat at ${where} over HTTPS; ${guard} still guards every socket and API call. Not reachable from the internet.`,
    fix: "nothing if intended; narrow who reaches this host with Tailscale's access rules (grants/ACLs), or set channels.web.tailscale.mode to \"off\"",
  })];
}
