/**
 * Config-derived inputs of two system prompt sections (full mode):
 * - Model Aliases: every configured alias (`models.aliases`), then the built-in aliases
 *   (shared/runtime/models.ts) that a configured one does not shadow and whose provider is set up
 *   (a key, token, OAuth client or endpoint in `providers`, the environment included; or the
 *   provider of the run's own model), as `- alias: provider/model`, sorted by alias within each
 *   group, at most MAX_ALIAS_LINES lines (then one "… more" line);
 * - User Identity: when the run knows its sender (`origin.sender`), whether that sender is an
 *   owner (shared/runtime/access-policy.ts `isOwner`, from the channel and id only: the terminal
 *   channel always is) and its display name; the owners (`routing.commands.owners`) only for an
 *   owner in a direct conversation (`ownersShown`).
 */
import type { Origin } from "../../shared/contract/index.js";
import { isOwner } from "../../shared/runtime/access-policy.js";
import type { LurkConfig } from "../../shared/runtime/config.js";
import { providerProfiles } from "../../shared/runtime/config-providers.js";
import { BUILTIN_ALIASES } from "../../shared/runtime/models.js";
import { compareCodeUnits } from "../../shared/runtime/order.js";
import type { UserIdentity } from "./system-prompt.js";

export const MAX_ALIAS_LINES = 20;

export function modelAliasLines(config: Pick<LurkConfig, "models" | "providers">, runModel?: string): string[] {
  const configured = Object.entries(config.models?.aliases ?? {}).sort(([a], [b]) => compareCodeUnits(a, b));
  const runProvider = runModel?.split("/")[0];
  const setUp = new Map<string, boolean>();
  const usable = (provider: string) => {
    if (!setUp.has(provider)) setUp.set(provider, provider === runProvider || providerSetUp(config, provider));
    return setUp.get(provider)!;
  };
  const builtin = Object.entries(BUILTIN_ALIASES)
    .filter(([alias, ref]) => !Object.hasOwn(config.models?.aliases ?? {}, alias) && usable(ref.split("/")[0]!))
    .sort(([a], [b]) => compareCodeUnits(a, b));
  const lines = [...configured, ...builtin].map(([alias, ref]) => `- ${alias}: ${ref}`);
  if (lines.length <= MAX_ALIAS_LINES) return lines;
  return [...lines.slice(0, MAX_ALIAS_LINES), `- … and ${lines.length - MAX_ALIAS_LINES} more (models.aliases in the config)`];
}

/** a provider with a credential or an endpoint of its own (Ollama's implicit localhost profile does not count) */
function providerSetUp(config: Pick<LurkConfig, "providers">, provider: string): boolean {
  if (!config.providers) return false;
  try {
    return providerProfiles(config.providers, provider).profiles.some((p) => p.apiKey || p.token || p.oauth || p.baseUrl);
  } catch {
    return false;
  }
}

/**
 * The User Identity input. The owner verdict comes from the sender's channel and id alone
 * (`isOwner`); the display name is carried for the prompt to show as unverified data. The
 * owners' ids are given only where an owner talks to the bot directly (`ownersShown`).
 */
export function userIdentity(config: Pick<LurkConfig, "routing">, origin: Origin | undefined, sessionType?: string): UserIdentity {
  const sender = origin?.sender;
  if (!origin || !sender) return {};
  const owner = isOwner({ channel: origin.channel, sender }, config as LurkConfig);
  return {
    ...(ownersShown(sessionType, origin, owner) ? { owners: [...config.routing.commands.owners] } : {}),
    sender: { id: `${origin.channel}:${sender.id}`, ...(sender.name ? { name: sender.name } : {}), owner },
  };
}

/**
 * Whether a run's prompt may list the owners' ids (`routing.commands.owners`, phone numbers
 * among them): only for an owner in a direct conversation (a "main" or "dm" session whose
 * peer, if any, is a DM). Group, topic, thread, cron and subagent runs, a non-owner's DM and
 * runs without a known sender get no list.
 */
export function ownersShown(sessionType: string | undefined, origin: Pick<Origin, "peer"> | undefined, senderIsOwner: boolean): boolean {
  return senderIsOwner && (sessionType === "main" || sessionType === "dm") && (!origin?.peer || origin.peer.kind === "dm");
}
