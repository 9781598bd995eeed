/**
 * Discord MESSAGE_REACTION_ADD / MESSAGE_REACTION_REMOVE -> the kit's reaction events (pure; the
 * kit filters and stores them, shared/runtime/channel/reactions.ts). The gateway sends them with
 * the GUILD_MESSAGE_REACTIONS and DIRECT_MESSAGE_REACTIONS intents. A unicode emoji is itself, a
 * custom one `<:name:id>` (`<a:name:id>` animated). Discord gives a reaction event no id of its
 * own: the event id is `<message>:<user>:<emoji>:<add|remove>`, so a replay after a gateway resume
 * is stored once (within JetStream's duplicate window). The bot's own reactions are ignored; the
 * reacted message is the bot's when `message_author_id` says so (ADD only; the kit also asks its
 * sent-ledger). The reacting user's name comes with ADD in guilds (`member`); otherwise only the id.
 * A payload without the ids or the emoji is not taken (none returned).
 */
import type { ReactionEvent } from "../../shared/runtime/channel/index.js";
import { peerOf, senderOf, type DcChannelInfo, type DcUser } from "./inbound.js";

export interface DcReaction {
  user_id?: unknown;
  channel_id?: unknown;
  message_id?: unknown;
  guild_id?: unknown;
  member?: { user?: DcUser; nick?: string | null };
  emoji?: { id?: string | null; name?: string | null; animated?: boolean };
  message_author_id?: unknown;
}

const isId = (v: unknown): v is string => typeof v === "string" && /^\d{1,25}$/.test(v);

export function emojiText(emoji: DcReaction["emoji"]): string | undefined {
  if (!emoji || typeof emoji.name !== "string" || emoji.name === "") return undefined;
  return typeof emoji.id === "string" && emoji.id ? `<${emoji.animated ? "a" : ""}:${emoji.name}:${emoji.id}>` : emoji.name;
}

/** Whether the payload has what a reaction event needs (then `reactionEvent` maps it). */
export function isReaction(d: DcReaction): d is DcReaction & { user_id: string; channel_id: string; message_id: string } {
  return isId(d.user_id) && isId(d.channel_id) && isId(d.message_id) && emojiText(d.emoji) !== undefined && (d.guild_id === undefined || isId(d.guild_id));
}

export function reactionEvent(d: DcReaction & { user_id: string; channel_id: string; message_id: string }, action: "added" | "removed", botId: string, channel: DcChannelInfo): ReactionEvent {
  const emoji = emojiText(d.emoji)!;
  const guildId = typeof d.guild_id === "string" ? d.guild_id : undefined;
  const user = d.member?.user?.id === d.user_id ? d.member.user : undefined;
  return {
    eventId: `${d.message_id}:${d.user_id}:${emoji}:${action === "added" ? "add" : "remove"}`,
    action, emoji,
    messageId: d.message_id,
    conversation: d.channel_id,
    peer: peerOf(guildId, d.channel_id, d.user_id, channel),
    sender: user ? senderOf(user) : { id: d.user_id },
    fromBot: d.user_id === botId,
    ...(d.message_author_id === botId ? { botMessage: true } : {}),
  };
}
