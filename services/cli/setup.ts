/**
 * `lurkbot setup`: the home directory, the workspace, the NATS credentials (one password per
 * actor, mode 0600) and the rendered nats.conf. Idempotent: what exists is kept (missing
 * passwords are added), and it says what it did. `--systemd DIR` also renders the unit
 * templates of deploy/systemd/ and one env file per actor (that actor's password only).
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { delimiter, join, resolve } from "node:path";
import { userInfo } from "node:os";
import { passwordEnvName, renderNatsConf } from "../../shared/contract/index.js";
import type { LurkConfig } from "../../shared/runtime/config.js";
import { allUsers, checkCredentialsMode, ensureCredentials, readCredentials, type Credentials } from "../../shared/runtime/credentials.js";
import { defaultStoreDir, parseNatsUrl } from "../../shared/runtime/nats-server.js";
import { REPO_ROOT } from "../../shared/scripts/paths.js";
import { ACTOR_SECRETS, actorGetsSecret, LAUNCHER_ACTORS, launcherActors } from "./actors.js";
import { CHANNEL_SECRET_ENV, CHANNEL_TOKEN_ENV, enabledChannels } from "../../shared/runtime/config-channels.js";
import { ensureChannelSecret } from "../../shared/runtime/channel/secrets.js";
import { CliError } from "./errors.js";

export interface SetupResult {
  credentials: Credentials;
  /** the nats.conf the launcher starts nats-server with */
  confPath: string;
  logsDir: string;
  storeDir: string;
}

export const logsDir = (config: LurkConfig) => join(config.home, "logs");
export const natsConfPath = (config: LurkConfig) => config.nats.serverConfig ?? join(config.home, "nats", "nats.conf");

function ensureDir(path: string, what: string, say: (line: string) => void, mode = 0o700): void {
  if (existsSync(path)) return;
  try {
    mkdirSync(path, { recursive: true, mode });
  } catch (err) {
    throw new CliError(`cannot create ${what} ${path}: ${(err as Error).message}. Set LURKBOT_HOME to a writable directory.`);
  }
  say(`created ${what} ${path}`);
}

export function runSetup(config: LurkConfig, say: (line: string) => void): SetupResult {
  ensureDir(config.home, "LurkBot home", say);
  ensureDir(config.workspace, "workspace", say);
  ensureDir(config.dataDir, "data directory", say);
  ensureDir(logsDir(config), "log directory", say);

  const file = config.nats.credentialsFile;
  const had = existsSync(file) ? { ...readCredentials(file).users } : null;
  const credentials = ensureCredentials(file, config.nats.prefix);
  checkCredentialsMode(file);
  if (had === null) say(`generated NATS credentials for ${Object.keys(credentials.users).length} users in ${file} (mode 600)`);
  else {
    const changed = allUsers(config.nats.prefix).filter((u) => had[u] !== credentials.users[u]);
    say(changed.length ? `added NATS passwords for ${changed.join(", ")} to ${file} (restart nats-server to use them)` : `NATS credentials ok: ${file}`);
  }

  ensureChannelSecrets(config, say);

  const confPath = natsConfPath(config);
  ensureDir(join(confPath, ".."), "nats directory", say);
  const conf = renderNatsConf(config.nats.prefix);
  const current = existsSync(confPath) ? readFileSync(confPath, "utf8") : null;
  if (current !== conf) {
    writeFileSync(confPath, conf, { mode: 0o600 });
    say(`${current === null ? "wrote" : "updated"} ${confPath} (passwords stay in the credentials file)`);
  } else {
    say(`nats.conf ok: ${confPath}`);
  }
  return { credentials, confPath, logsDir: logsDir(config), storeDir: defaultStoreDir(config.home) };
}

/**
 * For every enabled channel: a secret LurkBot makes itself (web/openai-http token, webhook
 * secret) is generated when none is configured; a platform token (Telegram, Discord, Slack) is
 * never invented: when it is missing, setup says which variable or config key to set and where
 * the platform issues it.
 */
function ensureChannelSecrets(config: LurkConfig, say: (line: string) => void): void {
  const settings = config.channels as Record<string, Record<string, unknown> | undefined>;
  for (const channel of enabledChannels(config.channels)) {
    const spec = CHANNEL_SECRET_ENV[channel];
    if (spec) {
      const configured = settings[channel]?.[spec.field] as string | undefined;
      const { source, path } = ensureChannelSecret(config, channel, spec.field, configured);
      if (source === "generated") say(`generated the ${channel} channel's ${spec.field} in ${path} (mode 600; or set ${spec.env})`);
    }
    for (const token of CHANNEL_TOKEN_ENV.filter((t) => t.channel === channel)) {
      if (settings[channel]?.[token.field]) say(`${channel} channel: ${token.field} is set`);
      else say(`${channel} channel: ${token.field} is missing: set ${token.env} (or channels.${channel}.${token.field} in config.json); ${token.where}. The channel will not start without it.`);
    }
  }
}

// --- systemd ---------------------------------------------------------------------------------

const SYSTEMD_TEMPLATES = join(REPO_ROOT, "deploy", "systemd");

/** `KEY=value` lines for an EnvironmentFile, values quoted when needed. */
export function envFile(vars: Record<string, string>, comments: string[] = []): string {
  const quote = (v: string) => (/^[A-Za-z0-9_@%+=:,./~-]*$/.test(v) ? v : `"${v.replace(/(["\\$`])/g, "\\$1")}"`);
  return [...comments.map((c) => `# ${c}`), ...Object.entries(vars).map(([k, v]) => `${k}=${quote(v)}`)].join("\n") + "\n";
}

function findBinary(name: string, fallback: string): string {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return fallback;
}

export function writeSystemdFiles(dir: string, config: LurkConfig, setup: SetupResult, say: (line: string) => void, env: Record<string, string | undefined> = process.env): void {
  if (!existsSync(SYSTEMD_TEMPLATES)) throw new CliError(`the unit templates are missing (${SYSTEMD_TEMPLATES}); restore deploy/systemd/ from the repository.`);
  const out = resolve(dir);
  const envDir = join(out, "env");
  mkdirSync(envDir, { recursive: true, mode: 0o700 });
  chmodSync(envDir, 0o700);
  const { host, port } = parseNatsUrl(config.nats.url);
  const common = {
    LURKBOT_HOME: config.home,
    LURKBOT_NATS_URL: config.nats.url,
    LURKBOT_NATS_PREFIX: config.nats.prefix,
  };
  const write = (name: string, text: string) => {
    const path = join(envDir, name);
    writeFileSync(path, text, { mode: 0o600 });
    chmodSync(path, 0o600);
    say(`wrote ${path} (mode 600)`);
  };

  const passwords: Record<string, string> = {};
  for (const [user, password] of Object.entries(setup.credentials.users)) passwords[passwordEnvName(user)] = password;
  write("nats.env", envFile({ ...common, LURKBOT_NATS_HOST: host, LURKBOT_NATS_PORT: String(port), LURKBOT_NATS_STORE: setup.storeDir, ...passwords },
    ["lurkbot-nats.service: every user's password (nats-server checks them) and the admin's for `lurkbot streams`."]));

  for (const actor of LAUNCHER_ACTORS) {
    const password = setup.credentials.users[actor];
    if (!password) continue;
    const vars: Record<string, string> = { ...common, [passwordEnvName(actor)]: password };
    const comments = [`lurkbot@${actor}.service: ${actor}'s own NATS password only.`];
    for (const secret of ACTOR_SECRETS[actor] ?? []) {
      const value = env[secret];
      if (value) vars[secret] = value;
      else comments.push(`${secret}=...   (uncomment and set if you use that provider)`);
    }
    // by prefix (ACTOR_SECRET_PREFIXES: the mcp actor's LURKBOT_MCP_* for its servers' ${…} references)
    for (const [name, value] of Object.entries(env)) if (value && actorGetsSecret(actor, name)) vars[name] = value;
    write(`${actor}.env`, envFile(vars, comments));
  }

  const values: Record<string, string> = {
    NODE: process.execPath,
    REPO: REPO_ROOT,
    USER: userInfo().username,
    ENV_DIR: envDir,
    NATS_SERVER: findBinary("nats-server", "/usr/sbin/nats-server"),
    NATS_CONF: setup.confPath,
    LURKBOT_HOME: config.home,
  };
  for (const name of readdirSync(SYSTEMD_TEMPLATES).filter((n) => n.endsWith(".service")).sort()) {
    const text = readFileSync(join(SYSTEMD_TEMPLATES, name), "utf8").replace(/\{\{([A-Z_]+)\}\}/g, (m, key: string) => values[key] ?? m);
    writeFileSync(join(out, name), text);
    say(`wrote ${join(out, name)}`);
  }
  say("");
  say("to install (as root):");
  say(`  cp ${join(out, "*.service")} /etc/systemd/system/ && systemctl daemon-reload`);
  // the actors `lurkbot start` would run for this config (mcp only with an enabled MCP server); every one has its env file
  const enabled = launcherActors(config);
  say(`  systemctl enable --now lurkbot-nats ${enabled.map((a) => `lurkbot@${a}`).join(" ")}`);
  if (!enabled.includes("mcp")) say("  (lurkbot@mcp too once mcp.servers has an enabled server: its env file is written)");
  say("the env files hold passwords: keep them where they are (mode 600) or move them to /etc/lurkbot/ and edit EnvironmentFile=.");
  say("on one host without root: `lurkbot daemon install` runs the whole of LurkBot as your own systemd user service instead (deploy/USER_SERVICE.md).");
}
