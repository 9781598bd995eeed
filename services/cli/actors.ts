/**
 * The actors the launcher runs, in start order, and the environment each one gets: its own
 * NATS password and only the secrets it needs. Every actor lives in `services/<name>/` with a
 * `main.ts` (its process) and an `actor.ts` exporting `definition: ActorDefinition`.
 */
import { join } from "node:path";
import { CHANNELS, passwordEnvName } from "../../shared/contract/index.js";
import type { LurkConfig } from "../../shared/runtime/config.js";
import { enabledChannels } from "../../shared/runtime/config-channels.js";
import { anyMcpServerEnabled } from "../../shared/runtime/config-mcp.js";
import type { Credentials } from "../../shared/runtime/credentials.js";
import { isSecretEnvName, MCP_SECRET_PREFIX } from "../../shared/runtime/secret-env.js";
import { DIST_ROOT } from "../../shared/scripts/paths.js";
import { UsageError } from "./errors.js";

/**
 * `hooks` (services/hooks) after the actors whose events it follows: it fires gateway:startup when it starts.
 * `browser` (services/browser): it starts no Chromium until a call needs one, and serves no tool when `browser.enabled` is false
 * `mcp` (services/mcp) last, and only while `mcp.servers` has an enabled server (launcherActors; `--only mcp` runs it anyway)
 */
export const LAUNCHER_ACTORS = ["sessions", "approvals", "tools", "router", "agent-runner", "subagents", "heartbeat", "cron", "hooks", "browser", "mcp"] as const;

/**
 * The launcher actors `lurkbot start` runs for this config (and `lurkbot status` expects, and the
 * systemd units enable): every one but `mcp` unless an MCP server is enabled, as channels run only
 * when enabled (an idle mcp actor would be one more process for nothing). Without a config: the
 * ones that always run.
 */
export function launcherActors(config?: Pick<LurkConfig, "mcp">): string[] {
  return LAUNCHER_ACTORS.filter((a) => a !== "mcp" || (config !== undefined && anyMcpServerEnabled(config.mcp)));
}

/** Secrets an actor gets from the launcher's environment, beyond its own NATS password. */
export const ACTOR_SECRETS: Record<string, readonly string[]> = {
  "channel-openai-http": ["LURKBOT_OPENAI_HTTP_TOKEN"],
  "channel-webhook": ["LURKBOT_WEBHOOK_SECRET"],
  "channel-telegram": ["TELEGRAM_BOT_TOKEN"],
  "channel-discord": ["DISCORD_BOT_TOKEN"],
  "channel-slack": ["SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"],
  "channel-matrix": ["LURKBOT_MATRIX_ACCESS_TOKEN"],
  "channel-whatsapp": ["WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN"],
  "channel-web": ["LURKBOT_WEB_TOKEN"],
  // ELEVENLABS_API_KEY / XI_API_KEY: voice replies through ElevenLabs (tts.provider)
  "agent-runner": ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ELEVENLABS_API_KEY", "XI_API_KEY"],
};

/**
 * Secrets an actor gets by name prefix: the mcp actor every `LURKBOT_MCP_*` variable, which its
 * servers' `env` and `headers` name as `${LURKBOT_MCP_…}` (shared/runtime/config-mcp.ts).
 */
export const ACTOR_SECRET_PREFIXES: Record<string, string> = { mcp: MCP_SECRET_PREFIX };

/** Whether `name` is a secret the launcher hands to `actor` (ACTOR_SECRETS, ACTOR_SECRET_PREFIXES). */
export function actorGetsSecret(actor: string, name: string): boolean {
  const prefix = ACTOR_SECRET_PREFIXES[actor];
  return (ACTOR_SECRETS[actor] ?? []).includes(name) || (prefix !== undefined && name.startsWith(prefix) && name.length > prefix.length);
}

/**
 * Channel actors the launcher runs after the core: `channel-<name>` (its NATS user and its folder
 * services/channel-<name>/) for every `channels.<name>.enabled` in the config.
 */
export function configuredChannelActors(config: LurkConfig): string[] {
  return enabledChannels(config.channels).map((name) => `channel-${name}`);
}

/** Every channel actor name of the contract (the terminal channel is the CLI, not an actor). */
export const CHANNEL_ACTORS: readonly string[] = CHANNELS.filter((c) => c !== "cli").map((c) => `channel-${c}`);

/** Names that hold secrets (shared/runtime/secret-env.ts): never passed to an actor unless ACTOR_SECRETS grants them. */
export { isSecretEnvName };

/**
 * The environment of one actor: the launcher's environment without any secret, plus the
 * actor's own NATS password and the secrets it is granted; LURKBOT_HOME pinned to the
 * launcher's home so every actor reads the same configuration.
 */
export function actorEnv(actor: string, base: Record<string, string | undefined>, credentials: Credentials, home: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) {
    if (value !== undefined && (!isSecretEnvName(name) || (value && actorGetsSecret(actor, name)))) env[name] = value;
  }
  const password = credentials.users[actor];
  if (!password) throw new Error(`the credentials have no password for "${actor}"; run \`npx lurkbot setup\` to add it.`);
  env[passwordEnvName(actor)] = password;
  env.LURKBOT_HOME = home;
  return env;
}

export const actorModulePath = (actor: string) => join(DIST_ROOT, "services", actor, "actor.js");

/** Parses `--only a,b`: known actor names only (`mcp` too, with or without a server), launcher order kept. */
export function selectActors(only: string): string[] {
  const wanted = only.split(",").map((s) => s.trim()).filter(Boolean);
  const order: string[] = [...LAUNCHER_ACTORS, ...CHANNEL_ACTORS];
  const known = new Set(order);
  const unknown = wanted.filter((a) => !known.has(a));
  if (unknown.length || wanted.length === 0) {
    throw new UsageError(`--only: ${unknown.length ? `unknown actor ${unknown.map((a) => `"${a}"`).join(", ")}` : "no actor named"}; choose from ${order.join(", ")}.`, "start");
  }
  return [...new Set(wanted)].sort((a, b) => order.indexOf(a) - order.indexOf(b));
}
