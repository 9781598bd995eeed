/**
 * The Signal channel's daemon (`channels.signal`, services/channel-signal/README.md). signal-cli's
 * HTTP daemon has no authentication: whoever reaches it reads every message of the account and
 * sends as it. Only for an enabled Signal channel:
 *  - a url off this machine without allowRemote: a warning (`channel.signal.remote-refused`): the
 *    channel refuses to start (the same rule, services/channel-signal/actor.ts);
 *  - a url off this machine with allowRemote: `channel.signal.remote-daemon`, critical over plain
 *    http (messages in clear too), a warning over https.
 */
import { isLoopbackUrl } from "../../../shared/runtime/loopback-host.js";
import { finding, type AuditContext, type AuditFinding } from "./finding.js";

export function signalChecks(ctx: AuditContext): AuditFinding[] {
  const s = ctx.config.channels.signal;
  if (!s?.enabled || isLoopbackUrl(s.url)) return [];
  const origin = new URL(s.url).origin;
  const account = s.account ?? "the account";
  if (!s.allowRemote) {
    return [finding({
      id: "channel.signal.remote-refused", level: "warning",
      title: `channels.signal.url (${origin}) is not on this machine: the Signal channel will refuse to start`,
      detail: `signal-cli's HTTP daemon has no authentication, so the channel only talks to one on loopback unless channels.signal.allowRemote is true. As configured, channel-signal stops at start and no Signal message is answered.`,
      fix: `run the daemon on this host bound to loopback (\`signal-cli -a ${account} daemon --http 127.0.0.1:8080\`) and set channels.signal.url to "http://127.0.0.1:8080", or reach a remote daemon through an SSH tunnel to a loopback port`,
    })];
  }
  const plain = new URL(s.url).protocol === "http:";
  return [finding({
    id: "channel.signal.remote-daemon", level: plain ? "critical" : "warning",
    title: `the Signal channel talks to signal-cli at ${origin}, beyond this host${plain ? ", over plain HTTP" : ""}`,
    detail: `channels.signal.allowRemote is true. signal-cli's HTTP daemon checks no credentials: any process that reaches ${origin} reads every message ${account} receives and sends messages as it${plain ? "; and the messages, files and the account's contacts cross the network in clear" : ""}.`,
    fix: `run signal-cli on this host bound to 127.0.0.1 (\`signal-cli -a ${account} daemon --http 127.0.0.1:8080\`), or reach it through an SSH tunnel or WireGuard to a loopback port, then set channels.signal.url to that loopback address and channels.signal.allowRemote to false`,
  })];
}
