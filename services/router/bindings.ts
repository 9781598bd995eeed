/**
 * Which agent answers a message (seeds 001 §6.3), most specific binding first:
 *   1 peer (the DM partner or the group/channel, a thread's or topic's parent included)
 *   2 guild (Discord)  3 team (Slack)  4 account (the channel's account)  5 channel
 *   6 the default agent (agents[].default, else the first).
 * Every field a binding names must match; within a tier the first binding in config order wins.
 * An explicit agent the channel names (e.g. a CLI flag) comes before all bindings.
 */
import { LurkError, type InboundMessage } from "../../shared/contract/index.js";
import type { Binding } from "../../shared/runtime/config-routing.js";
import { defaultAgent, type LurkConfig } from "../../shared/runtime/config.js";

export type BindingTier = "explicit" | "peer" | "guild" | "team" | "account" | "channel" | "default";

export interface AgentChoice {
  agentId: string;
  tier: BindingTier;
  /** index of the binding in routing.bindings */
  binding?: number;
}

type RoutingFields = Pick<InboundMessage, "channel" | "accountId" | "peer" | "agentId">;

/** The tier of a binding: its most specific field. */
export function bindingTier(binding: Binding): Exclude<BindingTier, "explicit" | "default"> {
  const m = binding.match;
  if (m.peer) return "peer";
  if (m.guildId) return "guild";
  if (m.teamId) return "team";
  if (m.accountId) return "account";
  return "channel";
}

/** Group-like peers (group, channel, thread, topic) match a binding of kind group or channel. */
function peerKindMatches(want: "dm" | "group" | "channel" | undefined, kind: InboundMessage["peer"]["kind"]): boolean {
  if (!want) return true;
  if (want === "dm") return kind === "dm";
  return kind !== "dm";
}

export function bindingMatches(binding: Binding, msg: RoutingFields): boolean {
  const m = binding.match;
  if (m.channel !== undefined && m.channel !== msg.channel) return false;
  if (m.accountId !== undefined && m.accountId !== msg.accountId) return false;
  if (m.guildId !== undefined && m.guildId !== msg.peer.guildId) return false;
  if (m.teamId !== undefined && m.teamId !== msg.peer.teamId) return false;
  if (m.peer) {
    if (!peerKindMatches(m.peer.kind, msg.peer.kind)) return false;
    const ids = [msg.peer.id, msg.peer.threadId, msg.peer.topicId].filter((x): x is string => x !== undefined);
    if (!ids.includes(m.peer.id)) return false;
  }
  return true;
}

const TIERS: Array<Exclude<BindingTier, "explicit" | "default">> = ["peer", "guild", "team", "account", "channel"];

export function resolveAgent(msg: RoutingFields, config: LurkConfig): AgentChoice {
  if (msg.agentId) {
    if (!config.agents.some((a) => a.id === msg.agentId)) {
      throw new LurkError("NOT_FOUND", `no agent "${msg.agentId}"; configured agents: ${config.agents.map((a) => a.id).join(", ")}`);
    }
    return { agentId: msg.agentId, tier: "explicit" };
  }
  const bindings = config.routing.bindings;
  for (const tier of TIERS) {
    const index = bindings.findIndex((b) => bindingTier(b) === tier && bindingMatches(b, msg));
    if (index >= 0) return { agentId: bindings[index]!.agentId, tier, binding: index };
  }
  return { agentId: defaultAgent(config).id, tier: "default" };
}

/** Config contradictions the schema cannot see: bindings and broadcasts naming unknown agents. */
export function checkRoutingConfig(config: LurkConfig): void {
  const known = new Set(config.agents.map((a) => a.id));
  const problems: string[] = [];
  config.routing.bindings.forEach((b, i) => {
    if (!known.has(b.agentId)) problems.push(`routing.bindings[${i}].agentId "${b.agentId}" is not in agents[]`);
  });
  for (const [peer, ids] of Object.entries(config.routing.broadcast.peers)) {
    for (const id of ids) if (!known.has(id)) problems.push(`routing.broadcast.peers["${peer}"] names "${id}", which is not in agents[]`);
  }
  if (problems.length > 0) throw new LurkError("CONFIG_INVALID", `${problems.join("; ")}. Add the agent to agents[] or fix the id.`);
}
