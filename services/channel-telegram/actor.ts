/**
 * channel-telegram: a Telegram bot (Bot API through grammy's Api) <-> the bus, on the channel kit.
 * In: long polling (poller.ts) or a webhook (webhook.ts), as `mode` says (updates.ts) -> inbound.ts,
 * the message's files downloaded into the media store (files.ts) -> LURK_INBOUND, before the
 * update is confirmed (the next offset, or the webhook's 200); approval buttons come back as `/approve ID` / `/deny ID` from the person who pressed them;
 * users' reactions (`message_reaction`, reactions.ts) go to the kit's publishReaction.
 * Out: the kit's durable deliveries, chunked at 4096 characters (tables as code blocks), rendered
 * as Telegram HTML, then each attachment uploaded as its own message (files.ts); the message
 * tool's react/edit/delete (actions.ts);
 * while a run writes, a draft message is edited (the kit's DraftMessages, its id kept across
 * restarts) and becomes the reply; or, with `streaming: "block"`, finished paragraphs are sent.
 * Groups: the router decides by the `mentioned` flag (mention gating); forum topics are their
 * own conversations and sessions.
 */
import { Api } from "grammy";
import type { Update } from "grammy/types";
import { LurkError } from "../../shared/contract/index.js";
import { channelDrafts, defineChannelActor, DraftMessages, publishWithDraft, type ChannelContext } from "../../shared/runtime/channel/index.js";
import { telegramChannelSchema, type TelegramChannelConfig } from "../../shared/runtime/config-channels.js";
import { sendAttachment, storeMessageFiles, type BotAccess } from "./files.js";
import { conversationOf, filesOf, fullName, messageToInbound, peerOf, platformMessageId, targetOf, type BotIdentity, type TgMessage, type TgTarget } from "./inbound.js";
import { TELEGRAM_ACTIONS, telegramAct } from "./actions.js";
import { editText, sendText, toDeliveryError } from "./send.js";
import { receiveUpdates } from "./updates.js";
import { reactionEvents, type TgMessageReaction } from "./reactions.js";

export const TELEGRAM_TEXT_LIMIT = 4096;

async function handleUpdate(ctx: ChannelContext<TelegramChannelConfig>, access: BotAccess, bot: BotIdentity, drafts: DraftMessages<TgTarget>, update: Update): Promise<void> {
  const { api } = access;
  if (update.message) {
    const message = update.message as unknown as TgMessage;
    const inbound = messageToInbound(message, bot);
    if (!inbound) return;
    // downloaded before the message is stored: it carries the files' refs
    const attachments = await storeMessageFiles(ctx.rt.media, access, filesOf(message), ctx.log);
    await publishWithDraft({ ctx, drafts, target: targetOf(inbound.conversation) }, { ...inbound, attachments });
    return;
  }
  const reaction = (update as { message_reaction?: TgMessageReaction }).message_reaction;
  if (reaction) {
    // stored (or filtered out, or dropped as malformed) before the update is confirmed
    for (const event of reactionEvents(update.update_id, reaction, bot)) await ctx.publishReaction(event);
    return;
  }
  const query = update.callback_query;
  if (query?.data && query.message) {
    const decision = /^(approve|deny):(.+)$/.exec(query.data);
    if (!decision) return;
    const chat = query.message.chat;
    const threadId = (query.message as { message_thread_id?: number; is_topic_message?: boolean }).is_topic_message
      ? (query.message as { message_thread_id?: number }).message_thread_id
      : undefined;
    const name = fullName(query.from);
    await ctx.publishInbound({
      id: `cb:${query.id}`,
      conversation: conversationOf({ chatId: chat.id, ...(threadId !== undefined ? { threadId } : {}) }),
      peer: peerOf(chat, threadId),
      sender: { id: String(query.from.id), ...(name ? { name } : {}) },
      text: `/${decision[1]} ${decision[2]}`,
      mentioned: true,
    });
    await api.answerCallbackQuery(query.id, { text: decision[1] === "approve" ? "Approval sent" : "Denial sent" }).catch(() => undefined);
  }
}

export const definition = defineChannelActor({
  channel: "telegram",
  description: "Telegram bot (Bot API long polling or webhook) <-> bus",
  schema: telegramChannelSchema,
  metadata: (s) => ({ apiRoot: new URL(s.apiRoot).origin, mode: s.mode }),
  async start(ctx) {
    const { settings, log } = ctx;
    if (!settings.botToken) {
      throw new LurkError("CONFIG_INVALID", "channels.telegram.botToken is not set: create a bot with @BotFather and set TELEGRAM_BOT_TOKEN (or channels.telegram.botToken in config.json)");
    }
    const api = new Api(settings.botToken, { apiRoot: settings.apiRoot });
    const me = await api.getMe();
    if (!me.username) throw new LurkError("CONFIG_INVALID", "the Telegram bot has no username; check the token");
    const bot: BotIdentity = { id: me.id, username: me.username };
    const drafts = channelDrafts<TgTarget>(ctx, {
      maxChars: 4_000,
      send: async (t, text) => String((await api.sendMessage(t.chatId, text, t.threadId !== undefined ? { message_thread_id: t.threadId } : {})).message_id),
      edit: async (t, id, text) => void (await api.editMessageText(t.chatId, Number(id), text)),
      remove: async (t, id) => void (await api.deleteMessage(t.chatId, Number(id))),
    });
    const access: BotAccess = { api, apiRoot: settings.apiRoot, token: settings.botToken };
    const stopReceiving = await receiveUpdates(ctx, api, (u) => handleUpdate(ctx, access, bot, drafts, u));
    log.info({ bot: bot.username, mode: settings.mode }, settings.mode === "webhook" ? "telegram channel receiving by webhook" : "telegram channel polling");
    return {
      textLimit: TELEGRAM_TEXT_LIMIT,
      tables: "code",
      actions: TELEGRAM_ACTIONS,
      act: (req, dctx) => telegramAct(api, req, dctx),
      async deliver(part, dctx) {
        const target = targetOf(part.message.conversation);
        const draftId = await drafts.takeFor(part);
        const [chat, message] = (part.replyToMessageId ?? "").split(":");
        const replyTo = chat === String(target.chatId) && message ? Number(message) : undefined;
        const file = part.attachments[0];
        if (file) {
          // a reply of files only: its draft (if any) has no text to become
          if (draftId !== undefined) await api.deleteMessage(target.chatId, Number(draftId)).catch(() => undefined);
          const id = await sendAttachment(api, ctx.rt.media, ctx.log, target, file, replyTo ? { replyTo } : {}, dctx.signal);
          return { platformMessageId: platformMessageId(target.chatId, id) };
        }
        if (draftId !== undefined) {
          await editText(api, target.chatId, Number(draftId), part.text, true, dctx.signal);
          return { platformMessageId: platformMessageId(target.chatId, Number(draftId)) };
        }
        const approvalId = part.message.kind === "approval" ? part.message.approval?.approvalId : undefined;
        const id = await sendText(api, target, part.text, { ...(replyTo ? { replyTo } : {}), ...(approvalId ? { approvalId } : {}) }, dctx.signal);
        return { platformMessageId: platformMessageId(target.chatId, id) };
      },
      async typing(msg) {
        const target = targetOf(msg.conversation);
        await api.sendChatAction(target.chatId, "typing", target.threadId !== undefined ? { message_thread_id: target.threadId } : {}).catch((err) => {
          throw toDeliveryError(err);
        });
      },
      async stop() {
        await stopReceiving();
      },
    };
  },
});
