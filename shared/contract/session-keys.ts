/**
 * Session keys in the seeds' format (001 §3.5, §6.4):
 *   main                 agent:<agentId>:main
 *   dm (per peer)        agent:<agentId>:dm:<peerId>            (dmScope per-peer)
 *   dm (channel, peer)   agent:<agentId>:<channel>:dm:<peerId>  (dmScope per-channel-peer, named sessions)
 *   group                agent:<agentId>:<channel>:group:<groupId>
 *   topic (forum topic)  agent:<agentId>:<channel>:group:<groupId>:topic:<topicId>
 *   thread               agent:<agentId>:<channel>:channel:<channelId>:thread:<threadId>
 *   subagent             agent:<agentId>:subagent:<childId>
 *   cron (isolated run)  agent:<agentId>:cron:<jobId>
 * Ids that contain ':' or whitespace are encoded with encodeToken.
 */
import type { SessionType } from "./common.js";
import { encodeToken } from "./subjects.js";

const part = (value: string) => encodeToken(value);

export type SessionKeySpec =
  | { type: "main"; agentId: string }
  | { type: "dm"; agentId: string; channel?: string; peerId: string }
  | { type: "group"; agentId: string; channel: string; groupId: string }
  | { type: "topic"; agentId: string; channel: string; groupId: string; topicId: string }
  | { type: "thread"; agentId: string; channel: string; channelId: string; threadId: string }
  | { type: "subagent"; agentId: string; childId: string }
  | { type: "cron"; agentId: string; jobId: string };

export function buildSessionKey(spec: SessionKeySpec): string {
  const head = `agent:${part(spec.agentId)}`;
  switch (spec.type) {
    case "main": return `${head}:main`;
    case "dm": return spec.channel === undefined ? `${head}:dm:${part(spec.peerId)}` : `${head}:${part(spec.channel)}:dm:${part(spec.peerId)}`;
    case "group": return `${head}:${part(spec.channel)}:group:${part(spec.groupId)}`;
    case "topic": return `${head}:${part(spec.channel)}:group:${part(spec.groupId)}:topic:${part(spec.topicId)}`;
    case "thread": return `${head}:${part(spec.channel)}:channel:${part(spec.channelId)}:thread:${part(spec.threadId)}`;
    case "subagent": return `${head}:subagent:${part(spec.childId)}`;
    case "cron": return `${head}:cron:${part(spec.jobId)}`;
  }
}

/** The agent id and session type a key encodes (null when it is not a LurkBot key). */
export function parseSessionKey(key: string): { agentId: string; type: SessionType } | null {
  const parts = key.split(":");
  if (parts[0] !== "agent" || parts.length < 3) return null;
  const agentId = parts[1]!;
  if (parts[2] === "main" && parts.length === 3) return { agentId, type: "main" };
  if (parts[2] === "subagent") return { agentId, type: "subagent" };
  if (parts[2] === "cron") return { agentId, type: "cron" };
  if (parts[2] === "dm") return { agentId, type: "dm" };
  if (parts.includes("thread")) return { agentId, type: "thread" };
  if (parts.includes("topic")) return { agentId, type: "topic" };
  if (parts[3] === "group") return { agentId, type: "group" };
  if (parts[3] === "dm") return { agentId, type: "dm" };
  return null;
}

export function isSubagentSessionKey(key: string): boolean {
  return key.includes(":subagent:");
}
