/**
 * Users' reactions on WhatsApp -> the kit's reaction events (shared/runtime/channel/reactions.ts
 * filters them by `reactionNotifications` and stores them). A reaction is a message of its own
 * (`type: "reaction"`, `reaction: { message_id, emoji }`, its own `wamid`, the event id); an
 * empty or missing emoji means the user took their reaction back. WhatsApp does not say which
 * emoji that was: the channel remembers each user's emoji per message (seen.ts) and reports the
 * removal of that one; a removal of a reaction it never saw is dropped (logged). A reaction is
 * recorded as taken (`r:<wamid>`) once handled, so Meta's redeliveries are skipped.
 */
import type { ChannelContext } from "../../shared/runtime/channel/index.js";
import type { WhatsAppChannelConfig } from "../../shared/runtime/config-channels.js";
import { conversationOf, type Taken } from "./inbound.js";
import type { SeenStore } from "./seen.js";

type Reaction = Extract<Taken, { kind: "reaction" }>;

/** Takes one reaction (stored once, or filtered, or dropped). Throws when the bus is unavailable. */
export async function takeReaction(ctx: ChannelContext<WhatsAppChannelConfig>, seen: SeenStore, r: Reaction): Promise<void> {
  const key = `r:${r.id}`;
  if (seen.has(key)) {
    ctx.log.info({ eventId: r.id }, "whatsapp reaction already taken: a redelivery, skipped");
    return;
  }
  const emojiKey = `e:${r.from}:${r.messageId}`;
  const removed = r.emoji === "";
  const emoji = removed ? seen.get(emojiKey)?.emoji : r.emoji;
  if (!emoji) {
    ctx.log.info({ eventId: r.id }, "a WhatsApp reaction was taken back that the channel never saw; dropped");
    await seen.add(key);
    return;
  }
  const outcome = await ctx.publishReaction({
    eventId: r.id,
    action: removed ? "removed" : "added",
    emoji,
    messageId: r.messageId,
    conversation: conversationOf(r.from),
    peer: { kind: "dm", id: r.from },
    sender: { id: r.from, ...(r.name ? { name: r.name } : {}) },
    ...(r.ts ? { ts: r.ts } : {}),
  });
  if (removed) await seen.remove(emojiKey);
  else await seen.add(emojiKey, { emoji });
  await seen.add(key);
  ctx.log.debug({ eventId: r.id, outcome }, "whatsapp reaction");
}
