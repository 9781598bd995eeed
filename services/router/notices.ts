/**
 * The router's own deliveries: command answers, pairing codes and directive errors, as an
 * outbound message of kind "notice" (or "error") on `lurk.out.<channel>.<conversation>`
 * (stream OUTBOUND). `Nats-Msg-Id` is derived from the inbound message id, so a redelivered
 * command never answers twice.
 */
import type { InboundMessage, OutboundMessage } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";

export type NoticeTarget = Pick<InboundMessage, "channel" | "conversation" | "accountId" | "peer"> & { id?: string };

export async function publishNotice(rt: ActorRuntime, to: NoticeTarget, text: string, opts: { kind?: "notice" | "error"; deliveryId: string; sessionKey?: string; errorCode?: string }): Promise<void> {
  const message: OutboundMessage = {
    type: "lurk.outbound.message.v1",
    id: opts.deliveryId,
    ts: Date.now(),
    channel: to.channel,
    conversation: to.conversation,
    kind: opts.kind ?? "notice",
    replyTo: to.id ? [to.id] : [],
    text,
    attachments: [],
    ...(to.id ? { causationId: to.id } : {}),
    ...(opts.sessionKey ? { sessionKey: opts.sessionKey } : {}),
    ...(to.accountId ? { accountId: to.accountId } : {}),
    ...(to.peer ? { peer: to.peer } : {}),
    ...(opts.errorCode ? { errorCode: opts.errorCode } : {}),
  };
  await rt.js.publish(rt.subjects.outbound(to.channel, to.conversation), JSON.stringify(message), { msgID: opts.deliveryId });
}

/** The delivery id of the notice answering an inbound message. */
export function noticeId(msg: Pick<InboundMessage, "channel" | "id">, what = "notice"): string {
  return `${what}:${msg.channel}:${msg.id}`.slice(0, 200);
}
