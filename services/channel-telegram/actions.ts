/**
 * The `message` tool's actions on Telegram (the kit resolved and checked them: actions.ts):
 * react with setMessageReaction (one emoji; `remove` sends an empty list), edit with
 * editMessageText (HTML, plain when Telegram cannot parse it), delete with deleteMessage.
 * A message id is `<chatId>:<messageId>` and must be in the conversation's chat.
 */
import type { Api } from "grammy";
import type { ReactionTypeEmoji } from "grammy/types";
import { DeliveryError, type ActionRequest, type DeliveryContext } from "../../shared/runtime/channel/index.js";
import { targetOf } from "./inbound.js";
import { editText, tgSignal, toDeliveryError } from "./send.js";

export const TELEGRAM_ACTIONS = ["react", "edit", "delete"] as const;

/** The message number of `platformMessageId` in `chatId`; permanent error for another chat's. */
function messageIn(chatId: number, platformMessageId: string): number {
  const m = /^(-?\d+):(\d+)$/.exec(platformMessageId);
  if (!m) throw new DeliveryError(`"${platformMessageId}" is not a Telegram message id (<chatId>:<messageId>)`, { permanent: true });
  if (Number(m[1]) !== chatId) throw new DeliveryError(`message ${platformMessageId} is not in this conversation`, { permanent: true });
  return Number(m[2]);
}

export async function telegramAct(api: Api, req: ActionRequest, ctx: DeliveryContext): Promise<void> {
  const { chatId } = targetOf(req.message.conversation);
  try {
    if (req.op === "react") {
      const reaction = req.remove ? [] : [{ type: "emoji", emoji: req.emoji } as ReactionTypeEmoji];
      await api.setMessageReaction(chatId, messageIn(chatId, req.platformMessageId), reaction, {}, tgSignal(ctx.signal));
    } else if (req.op === "edit") {
      await editText(api, chatId, messageIn(chatId, req.platformMessageId), req.text, true, ctx.signal);
    } else {
      for (const id of req.platformMessageIds) await api.deleteMessage(chatId, messageIn(chatId, id), tgSignal(ctx.signal));
    }
  } catch (err) {
    throw toDeliveryError(err);
  }
}
