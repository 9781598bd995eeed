/**
 * Delivery to the callback URL: one signed POST per part, `X-Lurkbot-Delivery: <deliveryId>:<part>`
 * as the receiver's idempotency key. An attachment part carries its file with the bytes (files.ts). 2xx = accepted; 408, 429 and 5xx or a network error are
 * retried (Retry-After honoured); any other status is permanent.
 */
import { decodeToken } from "../../shared/contract/index.js";
import { DeliveryError, type DeliverResult, type OutboundPart } from "../../shared/runtime/channel/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { MediaStore } from "../../shared/runtime/media.js";
import { callbackContent } from "./files.js";
import type { CallbackAttachment, WebhookCallback } from "./request.js";
import { DELIVERY_HEADER, sign, SIGNATURE_HEADER, TIMESTAMP_HEADER } from "./signature.js";

export interface CallbackTarget {
  url: string | undefined;
  secret: string;
  timeoutMs: number;
  media: MediaStore;
  log: Logger;
}

export function callbackBody(part: OutboundPart, content: { text: string; attachments: CallbackAttachment[] }): WebhookCallback {
  const m = part.message;
  return {
    type: "lurkbot.webhook.delivery.v1",
    deliveryId: m.id,
    part: { index: part.index, count: part.count },
    conversation: decodeToken(m.conversation),
    kind: m.kind,
    text: content.text,
    replyTo: m.replyTo,
    ...(part.replyToMessageId ? { replyToMessageId: part.replyToMessageId } : {}),
    ...(m.runId ? { runId: m.runId } : {}),
    ...(m.sessionKey ? { sessionKey: m.sessionKey } : {}),
    ...(m.errorCode ? { errorCode: m.errorCode } : {}),
    ...(m.approval ? { approval: m.approval } : {}),
    ...(m.note ? { note: m.note } : {}),
    attachments: content.attachments,
  };
}

export async function postCallback(target: CallbackTarget, part: OutboundPart, signal: AbortSignal): Promise<DeliverResult> {
  if (!target.url) throw new DeliveryError("channels.webhook.callbackUrl is not configured: replies cannot be delivered", { permanent: true });
  const body = JSON.stringify(callbackBody(part, await callbackContent(target.media, part, target.log)));
  const timestamp = Math.floor(Date.now() / 1000);
  const key = `${part.message.id}:${part.index}`;
  let res: Response;
  try {
    res = await fetch(target.url, {
      method: "POST",
      headers: { "content-type": "application/json", [TIMESTAMP_HEADER]: String(timestamp), [SIGNATURE_HEADER]: sign(target.secret, timestamp, body), [DELIVERY_HEADER]: key },
      body,
      signal: AbortSignal.any([signal, AbortSignal.timeout(target.timeoutMs)]),
    });
  } catch (err) {
    throw new DeliveryError(`callback POST failed: ${(err as Error).message}`, { cause: err });
  }
  const text = await res.text().catch(() => "");
  if (res.ok) return { platformMessageId: key };
  const retryAfter = Number(res.headers.get("retry-after"));
  const retryable = res.status === 408 || res.status === 429 || res.status >= 500;
  throw new DeliveryError(`callback answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ""}`, {
    permanent: !retryable,
    ...(retryable && Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
  });
}
