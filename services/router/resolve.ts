/**
 * Which agent(s) and which session an inbound message belongs to. The agent comes from the
 * bindings (bindings.ts); a broadcast peer (routing.broadcast.peers) names several agents.
 * Session keys follow the seeds (shared/contract/session-keys.ts, 001 §6.4):
 *   DMs: routing.dmScope "main" -> agent:<a>:main (one shared session), "per-peer" ->
 *        agent:<a>:dm:<peer> (a peer linked in routing.identityLinks by its canonical name, so one
 *        person's DMs on several channels share it), "per-channel-peer" ->
 *        agent:<a>:<channel>:dm:<peer>; a session
 *        the channel names (the terminal channel's --session) -> agent:<a>:<channel>:dm:<name>.
 *   groups/channels: agent:<a>:<channel>:group:<id>, with :topic:<id> for forum topics;
 *   threads: agent:<a>:<channel>:channel:<id>:thread:<id>.
 */
import { buildSessionKey, type InboundMessage, type SessionType } from "../../shared/contract/index.js";
import type { LurkConfig } from "../../shared/runtime/config.js";
import { resolveAgent, type BindingTier } from "./bindings.js";

export interface Route {
  agentId: string;
  sessionKey: string;
  sessionType: SessionType;
  tier: BindingTier | "broadcast";
}

type KeyFields = Pick<InboundMessage, "channel" | "peer" | "sessionName">;

/** The canonical name of a linked sender (routing.identityLinks), else its peer id. */
function identityOf(channel: string, peerId: string, links: LurkConfig["routing"]["identityLinks"]): string {
  const entry = `${channel}:${peerId}`;
  for (const [name, entries] of Object.entries(links)) if (entries.includes(entry)) return name;
  return peerId;
}

export function sessionFor(agentId: string, msg: KeyFields, routing: Pick<LurkConfig["routing"], "dmScope" | "identityLinks">): { sessionKey: string; sessionType: SessionType } {
  const { peer, channel } = msg;
  const { dmScope } = routing;
  switch (peer.kind) {
    case "dm":
      if (msg.sessionName) return { sessionType: "dm", sessionKey: buildSessionKey({ type: "dm", agentId, channel, peerId: msg.sessionName }) };
      if (dmScope === "per-peer") return { sessionType: "dm", sessionKey: buildSessionKey({ type: "dm", agentId, peerId: identityOf(channel, peer.id, routing.identityLinks) }) };
      if (dmScope === "per-channel-peer") return { sessionType: "dm", sessionKey: buildSessionKey({ type: "dm", agentId, channel, peerId: peer.id }) };
      return { sessionType: "main", sessionKey: buildSessionKey({ type: "main", agentId }) };
    case "group":
    case "channel":
      if (peer.topicId) return { sessionType: "topic", sessionKey: buildSessionKey({ type: "topic", agentId, channel, groupId: peer.id, topicId: peer.topicId }) };
      if (peer.threadId) return { sessionType: "thread", sessionKey: buildSessionKey({ type: "thread", agentId, channel, channelId: peer.id, threadId: peer.threadId }) };
      return { sessionType: "group", sessionKey: buildSessionKey({ type: "group", agentId, channel, groupId: peer.id }) };
    case "topic":
      return { sessionType: "topic", sessionKey: buildSessionKey({ type: "topic", agentId, channel, groupId: peer.id, topicId: peer.topicId ?? peer.id }) };
    case "thread":
      return { sessionType: "thread", sessionKey: buildSessionKey({ type: "thread", agentId, channel, channelId: peer.id, threadId: peer.threadId ?? peer.id }) };
  }
}

/** The one agent and session of a message (bindings only, no broadcast). */
export function routeInbound(msg: InboundMessage, config: LurkConfig): Route {
  const choice = resolveAgent(msg, config);
  return { agentId: choice.agentId, tier: choice.tier, ...sessionFor(choice.agentId, msg, config.routing) };
}

/** The broadcast agents of a message's peer ("<channel>:<peerId>" before "<peerId>"), if any. */
export function broadcastAgents(msg: Pick<InboundMessage, "channel" | "peer" | "agentId">, config: LurkConfig): string[] | undefined {
  if (msg.agentId) return undefined;
  const peers = config.routing.broadcast.peers;
  return peers[`${msg.channel}:${msg.peer.id}`] ?? peers[msg.peer.id];
}

/** Every agent and session a message goes to: the broadcast group, else the bound agent. */
export function routesFor(msg: InboundMessage, config: LurkConfig): Route[] {
  const agents = broadcastAgents(msg, config);
  if (!agents) return [routeInbound(msg, config)];
  return [...new Set(agents)].map((agentId) => ({ agentId, tier: "broadcast" as const, ...sessionFor(agentId, msg, config.routing) }));
}
