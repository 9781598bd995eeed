/**
 * The web chat published with Tailscale (`channels.web.tailscale`, services/channel-web/README.md):
 *  - funnel: a warning (`channel.web.tailscale-funnel`): the chat is on the internet; says what
 *    guards it;
 *  - serve: info (`channel.web.tailscale-serve`): the tailnet reaches the chat;
 *  - a setting the channel will refuse at start (shared/runtime/tailscale-policy.ts, the same
 *    rule): a warning (`channel.web.tailscale-refused`) with the reason: nothing is published.
 * Only for an enabled web channel.
 * `tailscaleStaleChecks` (any configured web channel, when a `tailscale` binary is found; else
 * nothing): what tailscaled serves now (`tailscale serve status --json`): a serve or funnel to the
 * chat's port that the config does not want (mode off, the channel disabled or refusing, another
 * https port; `--bg` outlives an unclean exit) is a warning (`channel.web.tailscale-stale`) with
 * the command that turns it off. A status that cannot be read is skipped.
 */
import { tailscalePublishRefusal, webTokensOf, type WebToken } from "../../../shared/runtime/tailscale-policy.js";
import { describeStale, serveStatus, staleServes } from "../../../shared/runtime/tailscale-stale.js";
import { findTailscale, tailnetUrl } from "../../../shared/runtime/tailscale.js";
import { finding, type AuditContext, type AuditFinding } from "./finding.js";
import { channelSecret, storedChannelSecrets } from "./tokens.js";

/** The web chat's tokens in force; one not generated yet will be random (strong). */
function webTokens(ctx: AuditContext, web: NonNullable<AuditContext["config"]["channels"]["web"]>): WebToken[] {
  return webTokensOf(web, web.users ? undefined : channelSecret(ctx.config, "web", "token", storedChannelSecrets(ctx.config)).value);
}

export function tailscaleChecks(ctx: AuditContext): AuditFinding[] {
  const web = ctx.config.channels.web;
  if (!web?.enabled || web.tailscale.mode === "off") return [];
  const ts = web.tailscale;
  const where = tailnetUrl("<this host>.<tailnet>.ts.net", ts.httpsPort);
  const refusal = tailscalePublishRefusal(web, webTokens(ctx, web));
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

/** the longest the audit waits for `tailscale serve status --json` */
const STATUS_TIMEOUT_MS = 5_000;

export async function tailscaleStaleChecks(ctx: AuditContext): Promise<AuditFinding[]> {
  const web = ctx.config.channels.web;
  if (!web) return [];
  const bin = await findTailscale(ctx.env.PATH ?? process.env.PATH);
  if (!bin) return [];
  let config;
  try {
    config = await serveStatus(bin, Math.min(web.tailscale.timeoutMs, STATUS_TIMEOUT_MS));
  } catch {
    return [];
  }
  const ts = web.tailscale;
  const refused = ts.mode !== "off" && tailscalePublishRefusal(web, webTokens(ctx, web)) !== undefined;
  const publishes = web.enabled && ts.mode !== "off" && !refused;
  const why = !web.enabled ? "the web channel is disabled (channels.web.enabled)" : ts.mode === "off" ? "channels.web.tailscale.mode is \"off\""
    : refused ? `the web channel refuses to publish it (channels.web.tailscale.mode "${ts.mode}")` : `channels.web.tailscale.httpsPort is ${ts.httpsPort}`;
  const stale = staleServes(config, web.port, publishes ? ts.httpsPort : undefined);
  if (stale.length === 0) return [];
  const funnel = stale.some((s) => s.funnel);
  return [finding({
    id: "channel.web.tailscale-stale", level: "warning",
    title: funnel ? "the web chat is on the internet through a Tailscale Funnel the config does not ask for" : "the web chat is on your tailnet through a Tailscale Serve the config does not ask for",
    detail: `${stale.map((s) => describeStale(s, why)).join(". ")}. tailscaled keeps a \`--bg\` serve or funnel until it is turned off: left by a web channel that was killed (SIGKILL, out of memory, a reboot) before its reset, or set up by hand.${funnel ? " Anyone on the internet who learns the URL reaches the chat's page, API and socket (its token still guards them)." : ""}`,
    fix: `if you did not set it up on purpose: ${stale.map((s) => `tailscale ${s.offArgs.join(" ")}`).join("; ")}`,
  })];
}
