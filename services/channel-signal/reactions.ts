/**
 * Users' reactions on Signal -> the kit's reaction events (shared/runtime/channel/reactions.ts
 * filters them by `reactionNotifications` and stores them). signal-cli delivers a reaction as an
 * envelope whose `dataMessage.reaction` is `{ emoji, targetAuthor, targetAuthorNumber,
 * targetAuthorUuid, targetSentTimestamp, isRemove }` (a group's with `groupInfo`): "added", or
 * "removed" with `isRemove`. The reacted message is named as the channel names messages,
 * `<author>:<timestamp>` (inbound.ts): the bot's own as `<account>:<timestamp>` (what the
 * sent-ledger keeps for the assistant's messages), a user's by their uuid, else number. The event
 * id is `<sender>:<envelope timestamp>` (a reaction is a Signal message of its own). Sync messages
 * (the account's other devices) are not taken, as for messages; the bot's own reactions are
 * ignored by the kit. A reaction missing its emoji, target author or timestamp is "malformed":
 * logged and dropped (an empty emoji: refused by the kit, dropped). Like messages, a reaction is
 * recorded in the seen ledger (`reaction:<event id>`) once handled, so signal-cli's replays after
 * its restart are skipped.
 */
import type { ChannelContext, ReactionEvent } from "../../shared/runtime/channel/index.js";
import type { SignalChannelConfig } from "../../shared/runtime/config-channels.js";
import { conversationOf, isBot, platformMessageId, type BotIdentity, type SignalReceive, type SignalTarget } from "./inbound.js";
import type { SeenMessages } from "./seen.js";

interface SignalReaction {
  emoji?: unknown;
  targetAuthor?: unknown;
  targetAuthorNumber?: unknown;
  targetAuthorUuid?: unknown;
  targetSentTimestamp?: unknown;
  isRemove?: unknown;
}

const text = (v: unknown): string | undefined => (typeof v === "string" && v ? v : undefined);
const isTimestamp = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v > 0;

/** The reaction event of a receive event; undefined when it is no user's reaction, "malformed" when one lacks what it needs. */
export function reactionOf(ev: SignalReceive, bot: BotIdentity): ReactionEvent | "malformed" | undefined {
  const env = ev?.envelope;
  const data = env?.dataMessage;
  if (!env || !data || env.syncMessage || data.reaction === undefined || data.reaction === null) return undefined;
  if (typeof data.reaction !== "object") return "malformed";
  const r = data.reaction as SignalReaction;
  const sender = text(env.sourceUuid) ?? text(env.sourceNumber) ?? text(env.source);
  const at = isTimestamp(env.timestamp) ? env.timestamp : data.timestamp;
  const targetNumber = text(r.targetAuthorNumber) ?? text(r.targetAuthor);
  const targetUuid = text(r.targetAuthorUuid);
  const author = isBot(bot, targetNumber, targetUuid) ? bot.number : targetUuid ?? targetNumber;
  if (!sender || !isTimestamp(at) || typeof r.emoji !== "string" || !author || !isTimestamp(r.targetSentTimestamp)) return "malformed";
  const groupId = data.groupInfo?.groupId || undefined;
  const target: SignalTarget = groupId ? { kind: "group", groupId } : { kind: "dm", recipient: sender };
  const name = text(env.sourceName);
  return {
    eventId: platformMessageId(sender, at),
    action: r.isRemove === true ? "removed" : "added",
    emoji: r.emoji,
    messageId: platformMessageId(author, r.targetSentTimestamp),
    conversation: conversationOf(target),
    peer: groupId ? { kind: "group", id: groupId } : { kind: "dm", id: sender },
    sender: { id: sender, ...(name ? { name: name.slice(0, 200) } : {}) },
    ts: at,
    fromBot: isBot(bot, text(env.sourceNumber) ?? text(env.source), text(env.sourceUuid)),
  };
}

/** Takes the receive event when it is a reaction (true; stored once, or dropped); false for anything else. Throws when the bus is unavailable. */
export async function takeReaction(ctx: ChannelContext<SignalChannelConfig>, seen: SeenMessages, bot: BotIdentity, data: unknown): Promise<boolean> {
  const reaction = reactionOf(data as SignalReceive, bot);
  if (reaction === undefined) return false;
  if (reaction === "malformed") {
    ctx.log.warn("a malformed Signal reaction (no sender, emoji, target author or timestamp); dropped");
    return true;
  }
  const key = `reaction:${reaction.eventId}`;
  if (seen.has(key)) {
    ctx.log.info({ eventId: reaction.eventId }, "signal reaction already taken: a replayed event, skipped");
    return true;
  }
  const outcome = await ctx.publishReaction(reaction);
  if (outcome !== "ignored") await seen.add(key);
  return true;
}
