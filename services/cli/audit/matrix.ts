/**
 * The Matrix channel (`channels.matrix`, services/channel-matrix/README.md), when enabled:
 *  - `channel.matrix.plain-http` (critical): the homeserver is reached over http:// on another
 *    host (`allowPlainHttp`): the access token and every message cross the network in clear;
 *  - `channel.matrix.autojoin-open` (critical when DMs are open too, else warning): `autoJoin:
 *    "always"` joins any room anyone on any federated server invites the bot to;
 *  - `channel.matrix.no-e2ee` (info): encrypted rooms are not read (one notice, no answers).
 * The access token in config.json is the files check's (CHANNEL_TOKEN_ENV), open DMs and groups
 * the access checks'.
 */
import { dmRules } from "../../../shared/runtime/access-policy.js";
import { isLoopbackUrl } from "../../../shared/runtime/loopback-host.js";
import { configSetCommand, finding, type AuditContext, type AuditFinding } from "./finding.js";

export function matrixChecks({ config }: AuditContext): AuditFinding[] {
  const m = config.channels.matrix;
  if (!m?.enabled) return [];
  const out: AuditFinding[] = [];
  if (m.homeserverUrl && new URL(m.homeserverUrl).protocol === "http:" && !isLoopbackUrl(m.homeserverUrl)) {
    out.push(finding({
      id: "channel.matrix.plain-http", level: "critical",
      title: "the Matrix homeserver is reached over plain http",
      detail: `channels.matrix.homeserverUrl is ${new URL(m.homeserverUrl).origin} (allowPlainHttp): the bot's access token and every message and file travel unencrypted to another host; whoever sees that traffic can read the conversations and act as the bot.`,
      fix: "use the homeserver's https:// address (or a TLS reverse proxy in front of it), or run the channel on the homeserver's host and use http://127.0.0.1:<port>; then remove allowPlainHttp",
    }));
  }
  if (m.autoJoin === "always") {
    const dm = dmRules("matrix", config);
    const openDms = dm.policy === "open" || dm.allowFrom.includes("*");
    out.push(finding({
      id: "channel.matrix.autojoin-open", level: openDms ? "critical" : "warning",
      title: "the Matrix bot joins every room it is invited to",
      detail: `channels.matrix.autoJoin is "always": anyone on any Matrix server that federates with yours can invite the bot into a room of theirs${openDms ? `, and with the Matrix DM policy "${dm.policy}" it answers them there: strangers get runs of the agent with its tools and spend your model budget` : "; the routing policies still decide whom it answers"}.`,
      fix: "set channels.matrix.autoJoin to \"allowlist\" (invites from routing.commands.owners and the Matrix DM allowFrom) or \"off\"",
      fixCommand: configSetCommand("channels.matrix.autoJoin", "allowlist"),
    }));
  }
  out.push(finding({
    id: "channel.matrix.no-e2ee", level: "info",
    title: "the Matrix channel does not read end-to-end encrypted rooms",
    detail: "Encrypted rooms get one notice that the bot cannot read them and no answers; talk to the bot in unencrypted rooms, which the homeserver's operator can read.",
    fix: "nothing if intended; use rooms without encryption on a homeserver you trust",
  }));
  return out;
}
