/**
 * Users' reactions -> the agent (an inbound message with `reaction`, stream LURK_INBOUND): the
 * adapter maps one platform event (an emoji added or removed by one user on one message) to a
 * ReactionEvent; `publishReaction` does the rest, the same for every channel:
 * - the bot's own reactions (`fromBot`) are ignored;
 * - `reactionNotifications` (channel setting): "off" ignores all, "own" (default) keeps only
 *   reactions to the assistant's own messages, "all" keeps every one. A message is the
 *   assistant's own when the sent-ledger holds its platform id (the ledger also gives its
 *   conversation, e.g. a thread or topic the platform event does not name, and a text excerpt)
 *   or the platform says so (`botMessage`: Discord's message_author_id, Slack's item_user);
 * - the inbound id is `reaction:<eventId>` (hashed when longer than the bus takes), so the same
 *   platform event delivered twice is stored once (JetStream's duplicate window) and recorded once
 *   (the router's record id);
 * - a malformed event (e.g. an empty emoji) is refused by the contract and dropped with a warning
 *   ("dropped"): the adapter acknowledges it to the platform like any other.
 * The router then applies the access policy (a stranger's reaction is dropped as a stranger's
 * message is) and records it as a pending system event of the session: it never starts a run.
 */
import { createHash } from "node:crypto";
import type { Peer } from "../../contract/index.js";
import type { ReactionNotifications } from "../config-channels.js";
import type { Logger } from "../logger.js";
import { isUnstorable, type InboundInput, type PublishedInbound } from "./inbound.js";
import type { SentLedger } from "./ledger.js";

export interface ReactionEvent {
  /** this platform event, stable across the platform's redeliveries (e.g. Telegram's update id) */
  eventId: string;
  action: "added" | "removed";
  emoji: string;
  /** the platform message id reacted to, in the form the channel's inbound messages use */
  messageId: string;
  /** where the reaction happened, as the adapter maps the platform event */
  conversation: string;
  peer: Peer;
  /** the reacting user */
  sender: InboundInput["sender"];
  /** the session name the conversation's messages carry (a channel whose chats name their session: the web chat); dropped when the ledger moves the event to another conversation */
  sessionName?: string;
  accountId?: string;
  ts?: number;
  /** the reacting user is this bot: ignored */
  fromBot?: boolean;
  /** the platform says the reacted message was written by this bot */
  botMessage?: boolean;
  /** the reacted message's text, when the platform gives it */
  excerpt?: string;
  /**
   * the peer of another conversation of the same chat (the ledger knows the thread or topic the
   * assistant's message is in, which the platform event may not say); undefined keeps the event's
   */
  peerOf?(conversation: string): Peer | undefined;
}

export type ReactionOutcome = "stored" | "duplicate" | "ignored" | "dropped";

export interface ReactionDeps {
  mode: ReactionNotifications;
  ledger: Pick<SentLedger, "sentMessage">;
  publish(input: InboundInput): Promise<PublishedInbound>;
  log: Logger;
}

const MAX_ID = 200;
/** the contract's cap on `reaction.excerpt` (UTF-16 code units, as zod counts) */
const MAX_EXCERPT = 200;

/** The longest start of `text` of at most `max` UTF-16 code units that does not split a character. */
function fitUnits(text: string, max: number): string {
  if (text.length <= max) return text;
  let out = "";
  for (const ch of text) {
    if (out.length + ch.length > max) break;
    out += ch;
  }
  return out;
}

/** The adapter's peer of the conversation the ledger names; a throwing adapter keeps the event's (a throw would block the platform's update loop). */
function otherPeer(ev: ReactionEvent, conversation: string, log: Logger): Peer | undefined {
  try {
    return ev.peerOf?.(conversation);
  } catch (err) {
    log.debug({ err, eventId: ev.eventId }, "the reacted message's conversation is not one the adapter maps; keeping the event's");
    return undefined;
  }
}

/** `reaction:<eventId>`, or its hash when that is longer than an inbound id may be. */
export function reactionInboundId(eventId: string): string {
  const id = `reaction:${eventId}`;
  return id.length <= MAX_ID ? id : `reaction:h:${createHash("sha256").update(eventId).digest("hex")}`;
}

/** Filters, then stores one reaction (see the file comment); throws only when the bus is unavailable. */
export async function publishReaction(deps: ReactionDeps, ev: ReactionEvent): Promise<ReactionOutcome> {
  if (ev.fromBot || deps.mode === "off") return "ignored";
  const sent = deps.ledger.sentMessage(ev.messageId);
  const ownMessage = sent !== undefined || ev.botMessage === true;
  if (deps.mode === "own" && !ownMessage) return "ignored";
  let { conversation, peer } = ev;
  let sessionName = ev.sessionName;
  if (sent?.conversation && sent.conversation !== conversation) {
    const other = otherPeer(ev, sent.conversation, deps.log);
    // the event's session name is its conversation's, not the one it moves to
    if (other) ({ conversation, peer, sessionName } = { conversation: sent.conversation, peer: other, sessionName: undefined });
  }
  const excerpt = sent?.excerpt || ev.excerpt;
  const input: InboundInput = {
    id: reactionInboundId(ev.eventId),
    conversation, peer, sender: ev.sender, text: "",
    ...(ev.accountId ? { accountId: ev.accountId } : {}),
    ...(sessionName ? { sessionName } : {}),
    ...(ev.ts !== undefined ? { ts: ev.ts } : {}),
    reaction: { action: ev.action, emoji: ev.emoji, messageId: ev.messageId, ownMessage, ...(excerpt ? { excerpt: fitUnits(excerpt, MAX_EXCERPT) } : {}) },
  };
  try {
    const stored = await deps.publish(input);
    return stored.duplicate ? "duplicate" : "stored";
  } catch (err) {
    if (!isUnstorable(err)) throw err;
    deps.log.warn({ err, eventId: ev.eventId }, "a reaction cannot be stored (malformed); dropped");
    return "dropped";
  }
}
