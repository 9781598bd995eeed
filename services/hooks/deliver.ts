/**
 * What a hook asked for, on the bus:
 *  - each pushed message is an outbound notice to the event's conversation (a command's), or to
 *    the session's last origin (`sessions.get`), on `lurk.out.<channel>.<conversation>` (OUTBOUND);
 *  - each `ctx.runAgent(text)` is a system event that wakes the agent in the session (the event's,
 *    or the agent's main session), on `lurk.inject.<agentId>` (INBOUND), as heartbeat and cron do;
 *    the router runs it and delivers the answer to the session's last origin.
 * Delivery ids derive from the event, the hook and the position: a repeat is deduplicated.
 */
import { buildSessionKey, envelope, outboundMessageSchema, parseSessionKey, systemInjectSchema } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { HookEvent } from "./hook-event.js";

export async function sendMessages(rt: ActorRuntime, event: HookEvent, hook: string, messages: string[]): Promise<string | undefined> {
  if (messages.length === 0) return undefined;
  const to = event.origin ?? (await lastOrigin(rt, event.sessionKey));
  if (!to) return `no conversation to send ${messages.length} message(s) to: the session ${event.sessionKey ?? "(none)"} has no last origin yet`;
  for (const [i, text] of messages.entries()) {
    const id = `hook:${hook}:${event.id}:${i}`.slice(0, 200);
    const message = outboundMessageSchema.parse({
      type: "lurk.outbound.message.v1", id, ts: Date.now(), channel: to.channel, conversation: to.conversation,
      kind: "notice", replyTo: to.replyTo ? [to.replyTo] : [], text, attachments: [],
      ...(event.sessionKey ? { sessionKey: event.sessionKey } : {}),
      ...(to.accountId ? { accountId: to.accountId } : {}),
      ...(to.peer ? { peer: to.peer } : {}),
    });
    await rt.js.publish(rt.subjects.outbound(to.channel, to.conversation), JSON.stringify(message), { msgID: id });
  }
  return undefined;
}

export async function startRuns(rt: ActorRuntime, event: HookEvent, hook: string, runs: Array<{ text: string; sessionKey?: string }>): Promise<string | undefined> {
  for (const [i, run] of runs.entries()) {
    const sessionKey = run.sessionKey ?? event.sessionKey ?? buildSessionKey({ type: "main", agentId: event.agentId });
    if (parseSessionKey(sessionKey)?.agentId !== event.agentId) return `ctx.runAgent: ${sessionKey} is not a session of agent ${event.agentId}`;
    const id = `hook:${hook}:${event.id}:run${i}`.slice(0, 200);
    const inject = systemInjectSchema.parse(envelope("lurk.inject.v1", {
      id, agentId: event.agentId, sessionKey, source: "system" as const, text: run.text,
      wake: "now" as const, trigger: "system" as const, deliverTo: "last" as const,
    }));
    await rt.js.publish(rt.subjects.inject(event.agentId), JSON.stringify(inject), { msgID: id });
  }
  return undefined;
}

async function lastOrigin(rt: ActorRuntime, sessionKey: string | undefined): Promise<HookEvent["origin"]> {
  if (!sessionKey) return undefined;
  const { session } = await rt.client.call("sessions", "get", { sessionKey });
  const o = session?.lastOrigin;
  return o ? { channel: o.channel, conversation: o.conversation, ...(o.accountId ? { accountId: o.accountId } : {}), ...(o.peer ? { peer: o.peer } : {}) } : undefined;
}
