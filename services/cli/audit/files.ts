/**
 * Secrets and files under LURKBOT_HOME, by their modes (fs.lstat; a symlink is reported, never
 * followed by --fix):
 *  - directories (home, credentials/, data/, nats/ with the JetStream store that holds the
 *    lurk_auth OAuth tokens, logs/) open to group or others: warning, critical when writable;
 *  - secret files readable by group or others: the credentials files (the same check the
 *    actors refuse to start on: checkCredentialsMode, reused), the approvals signing key;
 *  - config.json writable by others, or readable while it holds secrets;
 *  - secrets written in config.json rather than in the environment.
 */
import { lstatSync, statSync, type Stats } from "node:fs";
import { dirname, join } from "node:path";
import { CHANNEL_SECRET_ENV, CHANNEL_TOKEN_ENV } from "../../../shared/runtime/config-channels.js";
import { checkCredentialsMode } from "../../../shared/runtime/credentials.js";
import { channelSecretsPath } from "../../../shared/runtime/channel/secrets.js";
import { logsDir, natsConfPath } from "../setup.js";
import { finding, type AuditContext, type AuditFinding } from "./finding.js";
import { octal } from "./fix.js";

/** The entry's own stats, and its target's (the same for a non-link); null when missing or dangling. */
function statBoth(path: string): { link: boolean; st: Stats } | null {
  try {
    const own = lstatSync(path);
    return { link: own.isSymbolicLink(), st: own.isSymbolicLink() ? statSync(path) : own };
  } catch {
    return null;
  }
}

export function fileChecks(ctx: AuditContext): AuditFinding[] {
  return [...dirChecks(ctx), ...secretFileChecks(ctx), ...configFileChecks(ctx), ...plaintextSecretChecks(ctx)];
}

function dirChecks({ config }: AuditContext): AuditFinding[] {
  const dirs: { id: string; path: string; what: string }[] = [
    { id: "fs.home.permissions", path: config.home, what: "LURKBOT_HOME (config, credentials, data, logs)" },
    { id: "fs.credentials-dir.permissions", path: dirname(config.nats.credentialsFile), what: "the credentials directory (NATS passwords, channel secrets)" },
    { id: "fs.data-dir.permissions", path: config.dataDir, what: "the data directory (transcripts, pairing, approvals and their signing key)" },
    { id: "fs.nats-dir.permissions", path: dirname(natsConfPath(config)), what: "the NATS directory (the JetStream store: messages, the lurk_auth bucket's OAuth tokens, media)" },
    { id: "fs.logs-dir.permissions", path: logsDir(config), what: "the log directory" },
  ];
  const out: AuditFinding[] = [];
  const seen = new Set<string>();
  for (const d of dirs) {
    if (seen.has(d.path)) continue;
    seen.add(d.path);
    const found = statBoth(d.path);
    if (!found || (found.st.mode & 0o077) === 0) continue;
    const { link, st } = found;
    const writable = (st.mode & 0o022) !== 0;
    out.push(finding({
      id: d.id, level: writable ? "critical" : "warning",
      title: `${d.path}${link ? " (a symlink)" : ""} is open to other users (mode ${octal(st.mode)})`,
      detail: `${d.what}: other local users can ${writable ? "replace files in it (the config, the credentials)" : "list it and read whatever in it is not mode 600"}.${link ? " It is a symlink, which --fix does not follow." : ""}`,
      fix: `chmod 700 ${link ? `"$(readlink -f ${d.path})"` : d.path}`,
      ...(link || !st.isDirectory() ? {} : { repair: { path: d.path, mode: 0o700 } }),
    }));
  }
  return out;
}

function secretFileChecks({ config }: AuditContext): AuditFinding[] {
  const files = [
    { id: "fs.credentials.nats-json", path: config.nats.credentialsFile, what: "every NATS user's password (admin included): whoever reads it can act as any actor on the bus" },
    { id: "fs.credentials.channels-json", path: channelSecretsPath(config), what: "the web/openai-http tokens and the webhook secrets" },
    { id: "fs.credentials.secrets-json", path: join(config.home, "credentials", "secrets.json"), what: "the API keys and channel tokens `lurkbot onboard` stored" },
    { id: "fs.approvals.signing-key", path: join(config.dataDir, "approvals", "signing-key.pem"), what: "the approvals actor's signing key: whoever reads it can sign approvals for any tool call" },
  ];
  const out: AuditFinding[] = [];
  for (const f of files) {
    const found = statBoth(f.path);
    if (!found) continue;
    const { link, st } = found;
    let problem: string | undefined;
    try {
      // the actors' own start-up check: the same condition, the same message
      checkCredentialsMode(f.path);
    } catch (err) {
      problem = (err as Error).message;
    }
    if (!problem) continue;
    out.push(finding({
      id: f.id, level: "critical",
      title: `${f.path}${link ? " (a symlink)" : ""} is readable by other users (mode ${octal(st.mode)})`,
      detail: `It holds ${f.what}.${f.id === "fs.approvals.signing-key" ? " The approvals actor sets it to 600 when it starts." : " The actors that read it refuse to start until it is mode 600."}${link ? " It is a symlink, which --fix does not follow." : ""}`,
      fix: `chmod 600 ${f.path}`,
      ...(link ? {} : { repair: { path: f.path, mode: 0o600 } }),
    }));
  }
  return out;
}

function configFileChecks(ctx: AuditContext): AuditFinding[] {
  const found = statBoth(ctx.configPath);
  if (!found || !found.st.isFile()) return [];
  const { link, st } = found;
  const writable = (st.mode & 0o022) !== 0;
  const readable = (st.mode & 0o044) !== 0;
  if (!writable && !readable) return [];
  const secrets = configSecretKeys(ctx.rawConfig).length > 0;
  const level = writable || secrets ? "critical" : "info";
  return [finding({
    id: "fs.config.permissions", level,
    title: `${ctx.configPath}${link ? " (a symlink)" : ""} is ${writable ? "writable" : "readable"} by other users (mode ${octal(st.mode)})`,
    detail: writable
      ? "Other local users can change the tool policy, the channels and the agents' models: everything the agent may do."
      : secrets
        ? "It holds secrets (see secrets.config-plaintext), which other local users can read."
        : "It holds no secrets, but tells other local users the channels, policies and agents.",
    fix: `chmod 600 ${ctx.configPath}`,
    ...(link ? {} : { repair: { path: ctx.configPath, mode: 0o600 } }),
  })];
}

const SECRET_KEYS = new Set(["apiKey", "token", "secret", "botToken", "appToken", "accessToken", "refreshToken", "webhookSecret", "clientSecret", "password", "appSecret", "verifyToken"]);

/** Whether a config key holds a secret (the rule of this audit, `lurkbot config set` and `get`'s redaction). */
export const isSecretKey = (key: string): boolean => SECRET_KEYS.has(key);

/** The string values under secret-named keys of config.json, each with its JSON path. */
export function configSecretEntries(raw: unknown, path = ""): [path: string, value: string][] {
  if (Array.isArray(raw)) return raw.flatMap((v, i) => configSecretEntries(v, `${path}[${i}]`));
  if (!raw || typeof raw !== "object") return [];
  return Object.entries(raw as Record<string, unknown>).flatMap(([key, value]): [string, string][] => {
    const at = path ? `${path}.${key}` : key;
    if (typeof value === "string") return SECRET_KEYS.has(key) && value.length > 0 ? [[at, value]] : [];
    return configSecretEntries(value, at);
  });
}

/** The JSON paths of those values (what findings name; never the values). */
const configSecretKeys = (raw: unknown): string[] => configSecretEntries(raw).map(([at]) => at);

/** The environment variable that can hold this config key's secret instead, if there is one. */
export function envFor(key: string): string | undefined {
  if (key === "providers.openai.apiKey") return "OPENAI_API_KEY";
  if (key === "providers.anthropic.apiKey") return "ANTHROPIC_API_KEY";
  if (key === "tts.elevenlabs.apiKey") return "ELEVENLABS_API_KEY";
  const m = /^channels\.([a-z-]+)\.([A-Za-z]+)$/.exec(key);
  if (!m) return undefined;
  const [, channel, field] = m;
  if (CHANNEL_SECRET_ENV[channel!]?.field === field) return CHANNEL_SECRET_ENV[channel!]!.env;
  return CHANNEL_TOKEN_ENV.find((t) => t.channel === channel && t.field === field)?.env;
}

function plaintextSecretChecks(ctx: AuditContext): AuditFinding[] {
  const keys = configSecretKeys(ctx.rawConfig);
  if (keys.length === 0) return [];
  const withEnv = keys.filter((k) => envFor(k));
  const without = keys.filter((k) => !envFor(k));
  const moves = withEnv.map((k) => `${k} → ${envFor(k)}`);
  return [finding({
    id: "secrets.config-plaintext", level: withEnv.length > 0 ? "warning" : "info",
    title: `config.json holds ${keys.length} secret${keys.length === 1 ? "" : "s"} in plain text`,
    detail: `${keys.join(", ")}. Every actor reads config.json, so each of them holds these secrets, while a secret from the environment reaches only the actor that needs it (the launcher and the systemd env files hand them out one by one); config.json is also what gets copied to other hosts and into backups.${without.length ? ` No environment variable exists for ${without.join(", ")}: keep config.json mode 600 and out of shared copies.` : ""}`,
    fix: withEnv.length ? `move them to the environment (${moves.join("; ")}) and delete them from config.json` : `keep ${ctx.configPath} at mode 600 (\`chmod 600 ${ctx.configPath}\`) and off hosts that do not run the actors these secrets are for`,
  })];
}
