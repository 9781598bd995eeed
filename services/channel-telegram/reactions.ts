/**
 * Telegram `message_reaction` updates -> the kit's reaction events (pure; the kit filters and
 * stores them, shared/runtime/channel/reactions.ts). One update holds a user's old and new
 * reactions on one message: each emoji in the new list only is "added", each in the old list only
 * "removed" (custom emoji by their id, `custom:<id>`; paid stars are skipped). The event id is
 * `<update_id>:<added|removed>:<emoji>`, so a redelivered update is stored once. Anonymous
 * reactions (a group's anonymous admins, `actor_chat` without `user`) and the bot's own are not
 * taken; neither is an update whose fields are not as Telegram sends them (returned: none).
 * Telegram sends these only when `message_reaction` is in allowed_updates, and in groups only to
 * a bot that is an administrator. The update names no forum topic: the kit takes the topic from
 * its sent-ledger for the assistant's own messages.
 */
import type { ReactionEvent } from "../../shared/runtime/channel/index.js";
import { conversationOf, fullName, peerOf, platformMessageId, targetOf, type BotIdentity, type TgMessage, type TgUser } from "./inbound.js";

interface TgReactionType { type?: string; emoji?: string; custom_emoji_id?: string }
export interface TgMessageReaction {
  chat?: { id?: unknown; type?: unknown };
  message_id?: unknown;
  user?: TgUser;
  date?: unknown;
  old_reaction?: TgReactionType[];
  new_reaction?: TgReactionType[];
}

/** the chats whose reactions are taken (a channel's are not: its posts are no conversation) */
const CHAT_TYPES = new Set(["private", "group", "supergroup"]);

function emojiOf(r: TgReactionType): string | undefined {
  if (r?.type === "emoji" && typeof r.emoji === "string") return r.emoji;
  if (r?.type === "custom_emoji" && typeof r.custom_emoji_id === "string") return `custom:${r.custom_emoji_id}`;
  return undefined;
}

const emojis = (list: unknown): string[] => (Array.isArray(list) ? list.map((r) => emojiOf(r as TgReactionType)).filter((e): e is string => e !== undefined) : []);

/** The reaction events of one update (none for what is not taken, see the file comment). */
export function reactionEvents(updateId: number, r: TgMessageReaction, bot: BotIdentity): ReactionEvent[] {
  const chatId = r.chat?.id;
  const chatType = r.chat?.type;
  if (typeof chatId !== "number" || typeof chatType !== "string" || !CHAT_TYPES.has(chatType)) return [];
  if (typeof r.message_id !== "number" || typeof r.user?.id !== "number") return [];
  const user = r.user;
  const before = emojis(r.old_reaction);
  const after = emojis(r.new_reaction);
  const chat = { id: chatId, type: chatType as TgMessage["chat"]["type"] };
  const name = fullName(user) || user.username;
  const base = {
    messageId: platformMessageId(chatId, r.message_id),
    conversation: conversationOf({ chatId }),
    peer: peerOf(chat),
    sender: { id: String(user.id), ...(name ? { name } : {}) },
    fromBot: user.id === bot.id,
    ...(typeof r.date === "number" ? { ts: r.date * 1000 } : {}),
    peerOf: (conversation: string) => {
      const target = targetOf(conversation);
      return target.chatId === chatId ? peerOf(chat, target.threadId) : undefined;
    },
  };
  return [
    ...after.filter((e) => !before.includes(e)).map((emoji): ReactionEvent => ({ ...base, eventId: `${updateId}:added:${emoji}`, action: "added", emoji })),
    ...before.filter((e) => !after.includes(e)).map((emoji): ReactionEvent => ({ ...base, eventId: `${updateId}:removed:${emoji}`, action: "removed", emoji })),
  ];
}
