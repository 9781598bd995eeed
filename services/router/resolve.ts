/**
 * Which agent and which session an inbound message belongs to. Bindings (peer, guild, team,
 * account, channel) are a later issue; today: an explicit agent the channel names if it exists,
 * else the default agent. Session keys follow the seeds (shared/contract/session-keys.ts):
 * direct messages share the agent's main session unless the channel names a session
 * (the terminal channel's --session), groups/topics/threads get their own.
 */
import { buildSessionKey, LurkError, type InboundMessage, type SessionType } from "../../shared/contract/index.js";
import type { LurkConfig } from "../../shared/runtime/config.js";
import { defaultAgent } from "../../shared/runtime/config.js";

export interface Route {
  agentId: string;
  sessionKey: string;
  sessionType: SessionType;
}

export function routeInbound(msg: InboundMessage, config: LurkConfig): Route {
  const agentId = pickAgent(msg, config);
  const { peer, channel } = msg;
  switch (peer.kind) {
    case "dm":
      if (msg.sessionName) return { agentId, sessionType: "dm", sessionKey: buildSessionKey({ type: "dm", agentId, channel, peerId: msg.sessionName }) };
      return { agentId, sessionType: "main", sessionKey: buildSessionKey({ type: "main", agentId }) };
    case "group":
    case "channel":
      if (peer.topicId) return { agentId, sessionType: "topic", sessionKey: buildSessionKey({ type: "topic", agentId, channel, groupId: peer.id, topicId: peer.topicId }) };
      if (peer.threadId) return { agentId, sessionType: "thread", sessionKey: buildSessionKey({ type: "thread", agentId, channel, channelId: peer.id, threadId: peer.threadId }) };
      return { agentId, sessionType: "group", sessionKey: buildSessionKey({ type: "group", agentId, channel, groupId: peer.id }) };
    case "topic":
      return { agentId, sessionType: "topic", sessionKey: buildSessionKey({ type: "topic", agentId, channel, groupId: peer.id, topicId: peer.topicId ?? peer.id }) };
    case "thread":
      return { agentId, sessionType: "thread", sessionKey: buildSessionKey({ type: "thread", agentId, channel, channelId: peer.id, threadId: peer.threadId ?? peer.id }) };
  }
}

function pickAgent(msg: InboundMessage, config: LurkConfig): string {
  if (msg.agentId) {
    if (!config.agents.some((a) => a.id === msg.agentId)) {
      throw new LurkError("NOT_FOUND", `no agent "${msg.agentId}"; configured agents: ${config.agents.map((a) => a.id).join(", ")}`);
    }
    return msg.agentId;
  }
  return defaultAgent(config).id;
}
