/**
 * Slack `reaction_added` / `reaction_removed` events -> the kit's reaction events (pure; the kit
 * filters and stores them, shared/runtime/channel/reactions.ts). The app needs the `reactions:read`
 * scope and the two bot events subscribed. Only reactions to messages are taken (not to files).
 * The emoji is Slack's name, `:thumbsup:`. The event id is the envelope's `event_id` (the same
 * for Slack's retries), so a redelivery is stored once. The reacted message is the bot's when
 * `item_user` is the bot (the kit also asks its sent-ledger, which knows the thread of the
 * assistant's message: the event names only the channel). The bot's own reactions are ignored.
 * Slack gives no name with the event: the user is named by id. An event without its user,
 * reaction or item is not taken (undefined).
 */
import type { Peer } from "../../shared/contract/index.js";
import type { ReactionEvent } from "../../shared/runtime/channel/index.js";
import { conversationOf, platformMessageId, targetOf, type BotIdentity } from "./inbound.js";

export interface SlackReactionEvent {
  type?: unknown;
  user?: unknown;
  reaction?: unknown;
  item_user?: unknown;
  item?: { type?: unknown; channel?: unknown; ts?: unknown };
  event_ts?: unknown;
}

export const isReactionEvent = (type: unknown) => type === "reaction_added" || type === "reaction_removed";

const isSlackId = (v: unknown): v is string => typeof v === "string" && /^[A-Z0-9]{2,40}$/.test(v);

export function reactionEvent(ev: SlackReactionEvent, eventId: unknown, bot: BotIdentity): ReactionEvent | undefined {
  const item = ev.item;
  if (!isReactionEvent(ev.type) || !isSlackId(ev.user) || typeof ev.reaction !== "string" || !item || item.type !== "message") return undefined;
  if (!isSlackId(item.channel) || typeof item.ts !== "string" || !/^\d+\.\d+$/.test(item.ts)) return undefined;
  const channel = item.channel;
  const user = ev.user;
  const team = bot.teamId ? { teamId: bot.teamId } : {};
  const action = ev.type === "reaction_added" ? "added" : "removed";
  const dm = channel.startsWith("D");
  const peer: Peer = dm ? { kind: "dm", id: user } : { kind: "channel", id: channel, ...team };
  const id = typeof eventId === "string" && eventId ? eventId : `${channel}:${item.ts}:${user}:${ev.reaction}:${action}:${String(ev.event_ts ?? "")}`;
  return {
    eventId: id, action, emoji: ev.reaction ? `:${ev.reaction}:` : "",
    messageId: platformMessageId(channel, item.ts),
    conversation: conversationOf({ channel }),
    peer,
    sender: { id: user },
    fromBot: user === bot.userId,
    ...(ev.item_user === bot.userId ? { botMessage: true } : {}),
    ...(typeof ev.event_ts === "string" && Number.parseFloat(ev.event_ts) > 0 ? { ts: Math.round(Number.parseFloat(ev.event_ts) * 1000) } : {}),
    peerOf: (conversation) => {
      const target = targetOf(conversation);
      if (target.channel !== channel) return undefined;
      return dm || !target.threadTs ? peer : { kind: "thread", id: channel, threadId: target.threadTs, ...team };
    },
  };
}
