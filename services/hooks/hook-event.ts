/**
 * The hook events LurkBot fires, built from what crosses the bus (pure):
 *   command:<name>   `lurk.evt.router.command` (every chat command the router handled)
 *   session:start    `lurk.evt.sessions.created` (the sessions actor created the session's entry)
 *   session:reset    `lurk.evt.sessions.reset` (a command, `lurkbot sessions reset`, daily/idle policy)
 *   agent:bootstrap  `lurk.hooks.bootstrap` (an agent-runner asks before it builds a run's prompt)
 *   agent:run_end    `lurk.run.evt.<runId>.done|error` (terminal events only)
 *   gateway:startup  the hooks actor started (once per configured agent)
 * Each event belongs to one agent (its hooks run) and says where pushed messages go.
 */
import { buildSessionKey, parseSessionKey, type Peer, type RouterCommandData, type SessionsCreatedData, type SessionsResetData } from "../../shared/contract/index.js";
import type { TerminalRunEvent } from "../../shared/runtime/run-ends.js";
import type { HookEventData } from "./task.js";

const RESULT_CHARS = 2000;

export interface HookEvent extends HookEventData {
  /** unique per event, part of the delivery ids of what its hooks send */
  id: string;
  agentId: string;
  /** where pushed messages go (a command's conversation); undefined: the session's last origin */
  origin?: { channel: string; conversation: string; accountId?: string; peer?: Peer; replyTo?: string };
}

export function commandEvent(d: RouterCommandData, ts: number): HookEvent {
  return {
    id: `cmd-${d.channel}-${d.messageId}`.slice(0, 120),
    type: "command", action: d.command, agentId: d.agentId, sessionKey: d.sessionKey, timestamp: ts,
    context: {
      command: d.command, args: d.args, ok: d.ok, agentId: d.agentId,
      channel: d.channel, conversation: d.conversation, peer: d.peer, sender: d.sender, senderId: d.sender.id,
      messageId: d.messageId,
      ...(d.accountId ? { accountId: d.accountId } : {}),
      ...(d.previousSessionId ? { previousSessionId: d.previousSessionId } : {}),
      ...(d.sessionId ? { sessionId: d.sessionId } : {}),
    },
    origin: { channel: d.channel, conversation: d.conversation, peer: d.peer, replyTo: d.messageId, ...(d.accountId ? { accountId: d.accountId } : {}) },
  };
}

/** null for a session that belongs to no agent (`global`) */
export function resetEvent(d: SessionsResetData, ts: number, eventId: string): HookEvent | null {
  const agentId = parseSessionKey(d.sessionKey)?.agentId;
  if (!agentId) return null;
  return {
    id: `reset-${eventId}`.slice(0, 120),
    type: "session", action: "reset", agentId, sessionKey: d.sessionKey, timestamp: ts,
    context: {
      agentId, reason: d.reason ?? "reset",
      ...(d.previousSessionId ? { previousSessionId: d.previousSessionId } : {}),
      ...(d.sessionId ? { sessionId: d.sessionId } : {}),
    },
  };
}

/** `session:start`: pushed messages go where the session first talked (else its last origin, read then) */
export function createdEvent(d: SessionsCreatedData, ts: number): HookEvent {
  const o = d.origin;
  return {
    id: `start-${d.sessionId}`.slice(0, 120),
    type: "session", action: "start", agentId: d.agentId, sessionKey: d.sessionKey, timestamp: ts,
    context: {
      agentId: d.agentId, sessionId: d.sessionId, sessionType: d.sessionType,
      ...(d.channel ?? o?.channel ? { channel: d.channel ?? o?.channel } : {}),
      ...(o ? { conversation: o.conversation, ...(o.accountId ? { accountId: o.accountId } : {}), ...(o.peer ? { peer: o.peer } : {}), ...(o.sender ? { sender: o.sender, senderId: o.sender.id } : {}) } : {}),
      ...(d.parentSessionKey ? { parentSessionKey: d.parentSessionKey } : {}),
      ...(d.label ? { label: d.label } : {}),
    },
    ...(o ? { origin: { channel: o.channel, conversation: o.conversation, ...(o.accountId ? { accountId: o.accountId } : {}), ...(o.peer ? { peer: o.peer } : {}) } } : {}),
  };
}

export function runEndEvent(runId: string, sessionKey: string, e: TerminalRunEvent, ts: number): HookEvent | null {
  const agentId = parseSessionKey(sessionKey)?.agentId;
  if (!agentId) return null;
  const result = e.kind === "done"
    ? { status: "done", text: cap(e.text), turns: e.turns, usage: e.usage, silent: e.silent }
    : { status: "error", code: e.code, message: cap(e.message) };
  return { id: `run-${runId}`.slice(0, 120), type: "agent", action: "run_end", agentId, sessionKey, timestamp: ts, context: { agentId, runId, ...result } };
}

/** `agent:bootstrap` for one run (bootstrap.ts adds `bootstrapFiles` per hook); `workspace`: the agent's here when the runner named none */
export function bootstrapEvent(req: { agentId: string; sessionKey: string; runId: string; sessionType: string; workspace?: string }, workspace: string, ts: number): HookEvent {
  return {
    id: `bootstrap-${req.runId}`.slice(0, 120),
    type: "agent", action: "bootstrap", agentId: req.agentId, sessionKey: req.sessionKey, timestamp: ts,
    context: { agentId: req.agentId, sessionKey: req.sessionKey, runId: req.runId, sessionType: req.sessionType, workspaceDir: req.workspace ?? workspace },
  };
}

export function startupEvent(agentId: string, workspace: string, startedAt: number): HookEvent {
  return {
    id: `startup-${agentId}-${startedAt}`,
    type: "gateway", action: "startup", agentId, sessionKey: buildSessionKey({ type: "main", agentId }), timestamp: startedAt,
    context: { agentId, workspace },
  };
}

function cap(text: string): string {
  return text.length > RESULT_CHARS ? `${text.slice(0, RESULT_CHARS)}…` : text;
}
