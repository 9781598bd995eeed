/**
 * Sending to Telegram through grammy's Api: HTML rendering (markdown.ts) with a plain-text
 * retry when Telegram cannot parse the entities, forum topics, reply quotes, approval buttons,
 * and Bot API errors mapped to DeliveryError (429 -> retry after `retry_after`; 400/403 ->
 * permanent: the chat is gone, the bot was blocked or the request is wrong).
 */
import { GrammyError, HttpError, type Api } from "grammy";
import { DeliveryError, toTelegramHtml } from "../../shared/runtime/channel/index.js";
import type { TgTarget } from "./inbound.js";

export interface SendOptions {
  replyTo?: number;
  /** approval buttons: callback data `approve:<id>` / `deny:<id>` */
  approvalId?: string;
  /** send the text as it is (no markdown rendering) */
  plain?: boolean;
}

/** grammy types its signals with the abort-controller package's AbortSignal; Node's is the same at run time */
export const tgSignal = (signal?: AbortSignal) => signal as unknown as Parameters<Api["getMe"]>[0];

const isParseError = (err: unknown) => err instanceof GrammyError && err.error_code === 400 && /can't parse entities|can't find end/i.test(err.description);

export function toDeliveryError(err: unknown): DeliveryError {
  if (err instanceof DeliveryError) return err;
  if (err instanceof GrammyError) {
    const retryAfter = err.parameters?.retry_after;
    if (err.error_code === 429) return new DeliveryError(`Telegram rate limit: ${err.description}`, { ...(retryAfter ? { retryAfterMs: retryAfter * 1000 } : {}), cause: err });
    const permanent = err.error_code === 400 || err.error_code === 403 || err.error_code === 404;
    return new DeliveryError(`Telegram refused the message (${err.error_code}): ${err.description}`, { permanent, cause: err });
  }
  if (err instanceof HttpError) return new DeliveryError(`cannot reach the Telegram Bot API: ${err.message}`, { cause: err });
  return new DeliveryError((err as Error)?.message ?? String(err), { cause: err });
}

/** The options every send takes: the forum topic, a reply quote, approval buttons. */
export function extra(target: TgTarget, opts: SendOptions) {
  return {
    ...(target.threadId !== undefined ? { message_thread_id: target.threadId } : {}),
    ...(opts.replyTo !== undefined ? { reply_parameters: { message_id: opts.replyTo, allow_sending_without_reply: true } } : {}),
    ...(opts.approvalId
      ? { reply_markup: { inline_keyboard: [[{ text: "Approve", callback_data: `approve:${opts.approvalId}` }, { text: "Deny", callback_data: `deny:${opts.approvalId}` }]] } }
      : {}),
  };
}

/** Sends one message (HTML, or plain text when asked or when Telegram cannot parse it); returns its message id. */
export async function sendText(api: Api, target: TgTarget, markdown: string, opts: SendOptions = {}, signal?: AbortSignal): Promise<number> {
  if (!opts.plain) {
    try {
      const sent = await api.sendMessage(target.chatId, toTelegramHtml(markdown), { parse_mode: "HTML", ...extra(target, opts) }, tgSignal(signal));
      return sent.message_id;
    } catch (err) {
      if (!isParseError(err)) throw toDeliveryError(err);
    }
  }
  try {
    const sent = await api.sendMessage(target.chatId, markdown, extra(target, opts), tgSignal(signal));
    return sent.message_id;
  } catch (err) {
    throw toDeliveryError(err);
  }
}

/** Replaces a message's text (a draft becoming the final reply). "message is not modified" is success. */
export async function editText(api: Api, chatId: number, messageId: number, markdown: string, html: boolean, signal?: AbortSignal): Promise<void> {
  try {
    if (html) await api.editMessageText(chatId, messageId, toTelegramHtml(markdown), { parse_mode: "HTML" }, tgSignal(signal));
    else await api.editMessageText(chatId, messageId, markdown, {}, tgSignal(signal));
  } catch (err) {
    if (err instanceof GrammyError && /message is not modified/i.test(err.description)) return;
    if (html && isParseError(err)) return editText(api, chatId, messageId, markdown, false, signal);
    throw toDeliveryError(err);
  }
}
