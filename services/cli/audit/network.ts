/**
 * Network exposure, from the config and the files under LURKBOT_HOME:
 *  - the NATS URL: the actors' own start-up check (checkTransportSecurity, reused) and a
 *    plaintext remote URL that `security.allowPlaintextRemoteNats` lets through;
 *  - nats.conf drifting from the contract, and the host-specific `server.conf` next to it
 *    (deploy/MULTI_HOST.md): cluster/leafnode/gateway/websocket/mqtt listeners without TLS,
 *    `no_auth_user` (anonymous access);
 *  - every enabled HTTP listener (web, openai-http, webhook, Telegram's webhook mode, WhatsApp's webhook): bound
 *    off loopback, and the strength of the token or secret it checks.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { LurkError, renderNatsConf } from "../../../shared/contract/index.js";
import { checkTransportSecurity } from "../../../shared/runtime/credentials.js";
import { CHANNEL_SECRET_ENV } from "../../../shared/runtime/config-channels.js";
import type { LurkConfig } from "../../../shared/runtime/config.js";
import { isLoopbackHost } from "../../../shared/runtime/loopback-host.js";
import { natsConfPath } from "../setup.js";
import { configSetCommand, finding, type AuditContext, type AuditFinding } from "./finding.js";
import { tokenWeakness } from "../../../shared/runtime/token-strength.js";
import { channelSecret, storedChannelSecrets, type ChannelSecret } from "./tokens.js";

export function networkChecks(ctx: AuditContext): AuditFinding[] {
  return [...natsUrlChecks(ctx.config), ...natsConfChecks(ctx.config), ...listenerChecks(ctx.config)];
}

function natsUrlChecks(config: LurkConfig): AuditFinding[] {
  try {
    checkTransportSecurity(config);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const invalid = LurkError.is(err) && err.code === "CONFIG_INVALID";
    return [finding({
      id: invalid ? "nats.url.invalid" : "nats.url.insecure", level: "critical",
      title: invalid ? "nats.url is not a usable URL" : "the NATS URL would send passwords unprotected",
      detail: `Every actor and the CLI refuse to start with this URL: ${message}`,
      fix: invalid ? "set LURKBOT_NATS_URL (or nats.url in config.json) to e.g. nats://127.0.0.1:4222" : "use tls://HOST:4222 (deploy/MULTI_HOST.md), or a loopback nats:// URL",
    })];
  }
  if (!config.security.allowPlaintextRemoteNats) return [];
  try {
    checkTransportSecurity({ ...config, security: { ...config.security, allowPlaintextRemoteNats: false } });
    return [];
  } catch {
    return [finding({
      id: "nats.url.plaintext-remote", level: "warning",
      title: "actors talk to a remote NATS server without TLS",
      detail: `nats.url (${config.nats.url}) is not loopback and not tls://, which security.allowPlaintextRemoteNats allows: every actor's password and every message (chats, tool calls and their results, approvals) cross the network in clear.`,
      fix: "give the nats-servers TLS (deploy/MULTI_HOST.md, section 2), use tls:// URLs and set security.allowPlaintextRemoteNats to false",
    })];
  }
}

function natsConfChecks(config: LurkConfig): AuditFinding[] {
  const out: AuditFinding[] = [];
  const conf = natsConfPath(config);
  if (existsSync(conf) && readFileSync(conf, "utf8") !== renderNatsConf(config.nats.prefix)) {
    out.push(finding({
      id: "nats.conf.drift", level: "warning",
      title: "nats.conf differs from the contract's permissions",
      detail: `${conf} is not what this LurkBot generates: an edited or stale file may grant users more (or less) than shared/contract/actors.ts allows. The launcher rewrites it when it starts nats-server itself; a server started by systemd or by hand uses it as it is. \`lurkbot security audit --deep\` tests what the running server allows.`,
      fix: "`npx lurkbot setup` (rewrites it), then reload nats-server (`systemctl reload lurkbot-nats` or SIGHUP); put host-specific settings in server.conf next to it",
    }));
  }
  const serverConf = join(dirname(conf), "server.conf");
  if (existsSync(serverConf)) out.push(...serverConfChecks(serverConf, readFileSync(serverConf, "utf8")));
  return out;
}

/** The top-level blocks (`name { ... }`) of a nats-server config, and the text outside them; comments removed. */
export function topLevelBlocks(text: string): { blocks: Map<string, string>; top: string } {
  const clean = text.split("\n").map((line) => line.replace(/(^|\s)(#|\/\/).*$/, "")).join("\n");
  const blocks = new Map<string, string>();
  let top = "";
  let depth = 0;
  let start = 0;
  let name = "";
  let quote: string | null = null;
  for (let i = 0; i < clean.length; i++) {
    const c = clean[i]!;
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "\"" || c === "'") {
      quote = c;
    } else if (c === "{") {
      if (depth === 0) {
        const before = /([A-Za-z_][\w-]*)\s*[:=]?\s*$/.exec(clean.slice(start, i));
        name = before?.[1]?.toLowerCase() ?? "";
        top += clean.slice(start, i - (before?.[0].length ?? 0));
        start = i + 1;
      }
      depth++;
      continue;
    } else if (c === "}") {
      depth--;
      if (depth === 0) {
        if (name) blocks.set(name, (blocks.get(name) ?? "") + clean.slice(start, i));
        start = i + 1;
      }
      continue;
    }
  }
  if (depth === 0) top += clean.slice(start);
  return { blocks, top };
}

const LISTENER_BLOCKS = ["cluster", "leafnodes", "gateway", "websocket", "mqtt"] as const;

function serverConfChecks(path: string, text: string): AuditFinding[] {
  const out: AuditFinding[] = [];
  const { blocks, top } = topLevelBlocks(text);
  if (/(^|\n)\s*no_auth_user\s*[:=]?/.test(top)) {
    out.push(finding({
      id: "nats.server-conf.no-auth-user", level: "critical",
      title: "nats-server lets connections in without a password",
      detail: `${path} sets no_auth_user: a client that sends no credentials is logged in as that user, so anyone who reaches the port gets its permissions.`,
      fix: `remove no_auth_user from ${path} and reload nats-server`,
    }));
  }
  for (const name of LISTENER_BLOCKS) {
    const block = blocks.get(name);
    if (block === undefined) continue;
    const tls = /(^|[\s{,])tls\s*[:=]?\s*\{/.test(block) && !/no_tls\s*[:=]?\s*true/.test(block);
    if (tls) continue;
    const auth = /(^|[\s{,])(authorization|users|accounts)\s*[:=]?\s*[{[]/.test(block);
    out.push(finding({
      id: `nats.server-conf.${name}-without-tls`, level: auth ? "warning" : "critical",
      title: `nats-server's ${name} listener has no TLS${auth ? "" : " and no authorization"}`,
      detail: `The ${name} block of ${path} has no tls { } block${name === "websocket" ? " (or sets no_tls)" : ""}: ${name === "cluster" || name === "gateway" ? "server-to-server traffic (every message, JetStream replication) crosses the network in clear" : "clients connecting there send passwords and messages in clear"}${auth ? "" : ", and with no authorization in the block a peer that reaches the port is let in"}.`,
      fix: `add tls { cert_file, key_file, ca_file${name === "cluster" ? ", verify: true" : ""} } to the ${name} block (deploy/MULTI_HOST.md, section 2) and reload nats-server`,
    }));
  }
  return out;
}

interface Listener {
  channel: string;
  host: string;
  port: number;
  /** the config key of the address */
  hostKey: string;
  secrets: ChannelSecret[];
}

/** Enabled channels that listen for HTTP, with the secrets they check. */
function listeners(config: LurkConfig): Listener[] {
  const stored = storedChannelSecrets(config);
  const c = config.channels;
  const out: Listener[] = [];
  if (c.web?.enabled) {
    const secrets = c.web.users
      ? c.web.users.map((u) => ({ key: `channels.web.users[${u.id}].token`, source: "config" as const, value: u.token }))
      : [channelSecret(config, "web", "token", stored)];
    out.push({ channel: "web", host: c.web.host, port: c.web.port, hostKey: "channels.web.host", secrets });
  }
  if (c["openai-http"]?.enabled) out.push({ channel: "openai-http", host: c["openai-http"].host, port: c["openai-http"].port, hostKey: "channels[\"openai-http\"].host", secrets: [channelSecret(config, "openai-http", "token", stored)] });
  if (c.webhook?.enabled) out.push({ channel: "webhook", host: c.webhook.host, port: c.webhook.port, hostKey: "channels.webhook.host", secrets: [channelSecret(config, "webhook", "secret", stored)] });
  if (c.telegram?.enabled && c.telegram.mode === "webhook") {
    out.push({ channel: "telegram", host: c.telegram.webhookHost, port: c.telegram.webhookPort, hostKey: "channels.telegram.webhookHost", secrets: [channelSecret(config, "telegram", "webhookSecret", stored)] });
  }
  // its secrets are Meta's app secret and a verify token the schema holds to 16+ characters: no strength check
  if (c.whatsapp?.enabled) out.push({ channel: "whatsapp", host: c.whatsapp.host, port: c.whatsapp.port, hostKey: "channels.whatsapp.host", secrets: [] });
  return out;
}

const WHAT: Record<string, string> = {
  web: "the web chat (the agent with its tools, every chat's history and files)",
  "openai-http": "the OpenAI-compatible API (runs on the agent as a trusted peer: DM policies do not apply)",
  webhook: "the signed webhook endpoint (messages to the agent as a trusted peer)",
  telegram: "the Telegram webhook (updates that become messages to the agent)",
  whatsapp: "the WhatsApp webhook (Meta-signed messages to the agent)",
};

/** How to replace a weak secret: a random value where it is set, or (single secrets) letting the channel generate one. */
function weakTokenFix(l: Listener): string {
  const random = "a random value of 32+ characters, e.g. `openssl rand -hex 32`";
  if (l.channel === "web" && l.secrets.length > 0 && l.secrets[0]!.key.includes("users[")) return `give each of those users in channels.web.users a new token, ${random}; then restart the channel`;
  const secret = l.secrets[0]!;
  const env = CHANNEL_SECRET_ENV[l.channel]?.env;
  if (secret.source === "stored") return `delete the "${l.channel}" entry from credentials/channels.json (the channel generates a random one at its next start), then restart the channel`;
  return `remove ${secret.key}${env ? ` and ${env}` : ""} so the channel generates a random one into credentials/channels.json, or set ${random}; then restart the channel`;
}

function listenerChecks(config: LurkConfig): AuditFinding[] {
  const out: AuditFinding[] = [];
  for (const l of listeners(config)) {
    const exposed = !isLoopbackHost(l.host);
    const where = `${l.host}:${l.port}`;
    if (exposed) {
      out.push(finding({
        id: `channel.${l.channel}.exposed`, level: "warning",
        title: `the ${l.channel} channel listens on ${where}, beyond this host`,
        detail: `${WHAT[l.channel]} answers plain HTTP on ${where}: every request is checked against its secret, but the secret and the conversations cross the network in clear unless a TLS reverse proxy is the only way in.`,
        fix: `set ${l.hostKey} to "127.0.0.1" and put a TLS reverse proxy (Caddy, nginx) in front; keep the port closed in the firewall`,
        fixCommand: configSetCommand(l.hostKey, "127.0.0.1"),
      }));
    }
    const weak = l.secrets.flatMap((s) => {
      const why = s.value === undefined ? undefined : tokenWeakness(s.value);
      return why ? [`${s.key} (${s.source === "stored" ? "in credentials/channels.json" : "configured"}): ${why}`] : [];
    });
    if (weak.length === 0) continue;
    out.push(finding({
      id: `channel.${l.channel}.weak-token`, level: exposed ? "critical" : "warning",
      title: `the ${l.channel} channel's ${l.secrets.length > 1 ? "tokens are" : "secret is"} easy to guess${exposed ? ` while it listens on ${where}` : ""}`,
      detail: `${weak.join("; ")}. Whoever guesses it ${l.channel === "telegram" ? "can send the bot forged updates" : "gets the agent"}${exposed ? ", and the port is reachable from other hosts" : " from any process on this host"}.`,
      fix: weakTokenFix(l),
    }));
  }
  return out;
}
