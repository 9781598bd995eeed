/** For process tools that talk to other actors: the runtime and the calling session, or a clear failure; where their messages go. */
import { LurkError, outboundMessageSchema, systemInjectSchema, type Attachment, type MessageAction, type Origin } from "../../../shared/contract/index.js";
import type { z } from "zod";
import type { ActorRuntime } from "../../../shared/runtime/actor.js";
import type { ToolCallInfo, ToolContext } from "../tool.js";

export function busOf(ctx: ToolContext): { rt: ActorRuntime; call: ToolCallInfo } {
  const rt = ctx.host?.rt;
  if (!rt) throw new LurkError("TOOL_FAILED", "this tool runs in the tools actor process only (it needs the bus)");
  if (!ctx.call) throw new LurkError("TOOL_FAILED", "this tool needs the calling session");
  return { rt, call: ctx.call };
}

/** Where a message of this call goes by default: the run's origin, else the session's last one. */
export type MessageTarget = Pick<Origin, "channel" | "conversation" | "accountId" | "peer">;

export async function defaultTarget(rt: ActorRuntime, call: ToolCallInfo): Promise<MessageTarget> {
  const origin = call.origin ?? (await rt.client.call("sessions", "get", { sessionKey: call.sessionKey }, { timeoutMs: 5_000 })).session?.lastOrigin;
  if (!origin) throw new LurkError("NOT_FOUND", "this run has no conversation to answer (it was not started from a chat); give channel and conversation");
  return origin;
}

/**
 * Queues a message of this call for `target` (stream OUTBOUND) with `id` as its `Nats-Msg-Id`
 * (derived from the tool call id, so a repeated call delivers once); resolves with whether it was
 * a duplicate. A failure to queue is a retryable UNAVAILABLE naming `what`.
 */
export async function queueMessage(
  rt: ActorRuntime, call: ToolCallInfo, target: MessageTarget, id: string,
  content: { kind: "notice" | "reply"; text: string; attachments: Attachment[] } | { kind: "action"; text: ""; attachments: []; action: MessageAction }, what: string,
): Promise<{ duplicate: boolean }> {
  const message = outboundMessageSchema.parse({
    type: "lurk.outbound.message.v1", id, ts: Date.now(), runId: call.runId, sessionKey: call.sessionKey,
    channel: target.channel, conversation: target.conversation, replyTo: [], ...content,
    ...(target.accountId ? { accountId: target.accountId } : {}),
    ...(target.peer ? { peer: target.peer } : {}),
  });
  return rt.js.publish(rt.subjects.outbound(target.channel, target.conversation), JSON.stringify(message), { msgID: id, timeout: 5_000 })
    .catch((err: unknown) => {
      throw new LurkError("UNAVAILABLE", `${what} could not be queued for ${target.channel}: ${(err as Error).message}`, { retryable: true });
    });
}

/**
 * Queues a system event of this call on `lurk.inject.<agentId>` (stream INBOUND) with `id` as its
 * `Nats-Msg-Id` (derived from the tool call id, so a repeated call lands once); resolves with
 * whether it was a duplicate. A failure to queue is a retryable UNAVAILABLE naming `what`.
 */
export async function queueSystemEvent(
  rt: ActorRuntime, call: ToolCallInfo, id: string, event: Omit<z.input<typeof systemInjectSchema>, "type" | "id" | "ts" | "causationId">, what: string,
): Promise<{ duplicate: boolean }> {
  const inject = systemInjectSchema.parse({ type: "lurk.inject.v1", id, ts: Date.now(), causationId: call.runId, ...event });
  return rt.js.publish(rt.subjects.inject(event.agentId), JSON.stringify(inject), { msgID: id, timeout: 5_000 }).catch((err: unknown) => {
    throw new LurkError("UNAVAILABLE", `${what} could not be queued: ${(err as Error).message}`, { retryable: true });
  });
}
