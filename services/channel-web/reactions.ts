/**
 * The user's reactions from the page (a `react` frame: an emoji added or removed on the kept line
 * `seq` of one of the signed-in user's chats; protocol.ts caps and checks it). The line must be a
 * message or reply still kept in THAT user's chat (another user's lines cannot be named: chats
 * are per user, user-scope.ts). Per chat, one change at a time:
 * - the same add twice (or a remove of an emoji the user has not put there) changes nothing and
 *   publishes nothing ("unchanged");
 * - otherwise the change goes to the kit's `publishReaction` (filtered by
 *   `channels.web.reactionNotifications`: "own" keeps reactions to the assistant's lines only),
 *   with the chat's session name, so it becomes a system event of the chat's session. The event
 *   id names the line, its change count and the change (emoji, added or removed), so each change
 *   is one event, also when the bus stored one whose answer was lost and the user tries again;
 * - then the line's `userReactions` is changed in the chat's history (a reload shows it) and the
 *   `update` goes to the user's pages showing the chat, whatever the filter decided.
 * A bus that cannot store the event throws (the socket gets an `error`; nothing is changed).
 */
import { LurkError } from "../../shared/contract/index.js";
import type { ChannelContext } from "../../shared/runtime/channel/index.js";
import type { WebChannelConfig } from "../../shared/runtime/config-channels.js";
import { KeyedSerial } from "../../shared/runtime/keyed-serial.js";
import type { Hub } from "./hub.js";
import { MAX_USER_REACTIONS, type ReactFrame, type ReactOutcome, type ServerFrame } from "./protocol.js";
import { scoped, sessionNameOf, webChat, type WebChat } from "./user-scope.js";
import type { WebUser } from "./users.js";

export class UserReactions {
  /** changes of one chat (conversation) run one after the other */
  private readonly serial = new KeyedSerial();

  constructor(private readonly ctx: ChannelContext<WebChannelConfig>, private readonly hub: Hub) {}

  /** One `react` frame of `user`: the `reacted` answer; a LurkError (NOT_FOUND, VALIDATION_FAILED, LIMIT_EXCEEDED, UNAVAILABLE) otherwise. */
  async react(user: WebUser, frame: ReactFrame): Promise<ServerFrame & { type: "reacted" }> {
    const c = webChat(user, frame.chat);
    return this.serial.run(c.conversation, () => this.apply(c, frame));
  }

  private async apply(c: WebChat, frame: ReactFrame): Promise<ServerFrame & { type: "reacted" }> {
    const { hub, ctx } = this;
    const { user } = c;
    const answer = (outcome: ReactOutcome) => ({ type: "reacted" as const, chat: frame.chat, seq: frame.seq, emoji: frame.emoji, remove: frame.remove, outcome });
    const entry = hub.entry(c, frame.seq);
    if (!entry || entry.deleted) throw new LurkError("NOT_FOUND", `message ${frame.seq} is not in this chat (or no longer kept)`);
    if (entry.kind !== "message" && entry.kind !== "reply") throw new LurkError("VALIDATION_FAILED", `only messages and replies take reactions (message ${frame.seq} is ${entry.kind === "approval" ? "an approval" : `a ${entry.kind}`})`);
    const had = entry.userReactions ?? [];
    if (had.includes(frame.emoji) !== frame.remove) return answer("unchanged");
    if (!frame.remove && had.length >= MAX_USER_REACTIONS) throw new LurkError("LIMIT_EXCEEDED", `at most ${MAX_USER_REACTIONS} reactions on one message: remove one first`);
    const action = frame.remove ? "removed" : "added";
    const sessionName = sessionNameOf(c);
    const outcome = await ctx.publishReaction({
      // the change itself too: a change whose store answer was lost (a timeout: the line kept as it
      // was) and is then tried again is one event, a different change after it is one of its own
      eventId: `${c.conversation}:${entry.seq}:${entry.reactionRev ?? 0}:${frame.emoji}:${action}`,
      action,
      emoji: frame.emoji,
      // the ids the message tool and the sent-ledger know the line by (actions.ts)
      messageId: entry.role === "assistant" ? `${c.conversation}:${entry.seq}` : scoped(user, entry.id),
      conversation: c.conversation,
      peer: { kind: "dm", id: user.id },
      sender: { id: user.id, name: user.name },
      botMessage: entry.role === "assistant",
      ...(entry.text ? { excerpt: entry.text } : {}),
      ...(sessionName ? { sessionName } : {}),
    });
    const changed = await hub.change(c, entry.seq, (e) => {
      const others = (e.userReactions ?? []).filter((r) => r !== frame.emoji);
      return { ...e, userReactions: frame.remove ? others : [...others, frame.emoji], reactionRev: (e.reactionRev ?? 0) + 1 };
    });
    if (!changed) throw new LurkError("NOT_FOUND", `message ${frame.seq} is no longer kept in this chat`);
    ctx.log.debug({ user: user.id, chat: frame.chat, seq: frame.seq, remove: frame.remove, outcome }, "user reaction");
    return answer(outcome);
  }
}
