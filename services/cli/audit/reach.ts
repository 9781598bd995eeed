/**
 * Who can talk to which agent, in which kind of session, according to the config: the router's
 * own access rules (shared/runtime/access-policy.ts dmRules/groupRules, reused, not copied) applied
 * to every enabled chat channel whose senders are platform users. Left out: the terminal (the
 * owner), the web chat (every sender holds a token; its exposure is a network check) and the
 * API channels openai-http and webhook (authenticated by token or signature, policies do not
 * apply to them).
 */
import type { SessionType } from "../../../shared/contract/index.js";
import { defaultAgent, type AgentConfig, type LurkConfig } from "../../../shared/runtime/config.js";
import { enabledChannels } from "../../../shared/runtime/config-channels.js";
import { dmRules, groupRules } from "../../../shared/runtime/access-policy.js";

/** chat channels whose senders are anyone on the platform who finds the bot */
export const PLATFORM_CHANNELS = ["telegram", "discord", "slack", "matrix", "signal", "whatsapp"] as const;
export const GROUP_SESSION_TYPES: readonly SessionType[] = ["group", "topic", "thread"];

export interface Exposure {
  channel: string;
  kind: "dm" | "group";
  /** anyone on the platform: an open policy, or "*" in its allow list (or among the owners) */
  open: boolean;
  /** DMs: the policy ("pairing", "allowlist", "open") */
  policy: string;
  /** session types these messages run in */
  sessionTypes: SessionType[];
  agents: AgentConfig[];
}

/** Agents a message on `channel` can reach: bindings for it (or for any channel), broadcast peers, else the default agent. */
export function agentsOn(config: LurkConfig, channel: string): AgentConfig[] {
  const ids = new Set<string>();
  const bindings = config.routing.bindings.filter((b) => b.match.channel === undefined || b.match.channel === channel);
  for (const b of bindings) ids.add(b.agentId);
  // a binding that names only this channel takes every message no narrower binding takes: the default agent gets none
  const channelWide = bindings.some((b) => b.match.channel === channel && Object.values(b.match).filter((v) => v !== undefined).length === 1);
  if (!channelWide) ids.add(defaultAgent(config).id);
  for (const [peer, agents] of Object.entries(config.routing.broadcast.peers)) {
    if (!peer.includes(":") || peer.startsWith(`${channel}:`)) for (const a of agents) ids.add(a);
  }
  return config.agents.filter((a) => ids.has(a.id));
}

/** Every (channel, DM or group) through which platform users reach agents. */
export function exposures(config: LurkConfig): Exposure[] {
  const out: Exposure[] = [];
  const ownersOpen = config.routing.commands.owners.includes("*");
  for (const channel of enabledChannels(config.channels).filter((c) => (PLATFORM_CHANNELS as readonly string[]).includes(c))) {
    const agents = agentsOn(config, channel);
    const dm = dmRules(channel, config);
    if (dm.policy !== "disabled") {
      out.push({
        channel, kind: "dm", policy: dm.policy, agents,
        open: dm.policy === "open" || dm.allowFrom.includes("*") || ownersOpen,
        sessionTypes: [config.routing.dmScope === "main" ? "main" : "dm"],
      });
    }
    const groups = groupRules(channel, config);
    if (groups.policy !== "disabled") {
      out.push({ channel, kind: "group", policy: groups.policy, agents, open: groups.policy === "open" || groups.allowFrom.includes("*"), sessionTypes: [...GROUP_SESSION_TYPES] });
    }
  }
  return out;
}
