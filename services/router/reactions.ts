/**
 * Users' reactions (an inbound message with `reaction`, channel kit reactions.ts): never a run,
 * never an answer. The access policy is the one of a message from that user there, except mention
 * gating (a reaction is not traffic that needs a mention): a refused reaction is dropped silently
 * (`refused` event, no pairing code, no notice). Otherwise, for each route (the bound agent, or a
 * broadcast's agents), it is recorded as a pending system event of the session the conversation
 * maps to (system-events.ts: a repeat of the last pending text is dropped, at most 20 reach the
 * prompt), which the session's next run shows the model, e.g.
 *   Reaction added on telegram: 👍 by "Ada" (id 42) on msg 555:12, your message "Sure, I'll…"
 * The display name and the excerpt are untrusted: quoted on one line and capped (prompt-text.ts);
 * ids and the emoji are reduced to safe characters. It is recorded through PendingEvents
 * (pending-events.ts), as non-waking injects are: never while a run holds the session's lane (the
 * message stays unacked until recorded). The record id comes from the message and its stream
 * sequence, so a redelivery of the stored message records it once.
 */
import { createHash } from "node:crypto";
import type { InboundMessage, InboundReaction } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { decideAccess } from "../../shared/runtime/access-policy.js";
import { oneLineText, PROMPT_NAME_MAX_CHARS, quotedText } from "../../shared/runtime/prompt-text.js";
import type { PairingStore } from "./pairing.js";
import type { PendingEvents } from "./pending-events.js";
import { routesFor } from "./resolve.js";

/** an excerpt of the reacted message in the event text is at most this long */
export const REACTION_EXCERPT_CHARS = 80;

export interface ReactionDeps {
  rt: ActorRuntime;
  pairing: Pick<PairingStore, "isApproved">;
  /** where pending system events are recorded (non-waking injects too) */
  events: Pick<PendingEvents, "record">;
}

/** ids and emoji from the platform, reduced to characters that cannot break the sentence */
const token = (text: string, max: number) => oneLineText(text, max).replace(/["\\]/g, "").replace(/\s+/g, "_") || "?";

/** The transcript record id of a stored reaction (hashed when too long for a record id). */
export function reactionRecordId(channel: string, messageId: string, streamSeq: number): string {
  const id = `reaction:${channel}:${messageId}:${streamSeq}`;
  return id.length <= 200 ? id : `reaction:${createHash("sha256").update(`${channel}:${messageId}`).digest("hex")}:${streamSeq}`;
}

/** The system event's text (see the file comment). */
export function reactionText(channel: string, sender: InboundMessage["sender"], reaction: InboundReaction): string {
  const who = sender.name ? `${quotedText(sender.name, PROMPT_NAME_MAX_CHARS)} (id ${token(sender.id, 100)})` : `id ${token(sender.id, 100)}`;
  const excerpt = reaction.excerpt ? quotedText(reaction.excerpt, REACTION_EXCERPT_CHARS) : undefined;
  const which = reaction.ownMessage ? `, your message${excerpt ? ` ${excerpt}` : ""}` : excerpt ? `, message ${excerpt}` : "";
  return `Reaction ${reaction.action} on ${token(channel, 40)}: ${token(reaction.emoji, 64)} by ${who} on msg ${token(reaction.messageId, 200)}${which}`;
}

export async function handleReaction(deps: ReactionDeps, msg: InboundMessage & { reaction: InboundReaction }, streamSeq: number): Promise<void> {
  const { rt } = deps;
  const access = decideAccess(msg, rt.config, (c, s) => deps.pairing.isApproved(c, s));
  if (!access.allow && access.reason !== "not-mentioned") {
    rt.emit("refused", { channel: msg.channel, reason: access.reason, peerKind: msg.peer.kind, reaction: true }, "debug");
    return;
  }
  let routes;
  try {
    routes = routesFor(msg, rt.config);
  } catch (err) {
    rt.log.warn({ err, channel: msg.channel, messageId: msg.id }, "a reaction names no configured agent; dropped");
    return;
  }
  const text = reactionText(msg.channel, msg.sender, msg.reaction);
  const recordId = reactionRecordId(msg.channel, msg.id, streamSeq);
  for (const route of routes) {
    const recorded = await deps.events.record(route, { recordId, ts: msg.ts, text, source: "reaction" });
    rt.emit("reaction_recorded", { channel: msg.channel, sessionKey: route.sessionKey, action: msg.reaction.action, recorded }, "debug");
  }
}
