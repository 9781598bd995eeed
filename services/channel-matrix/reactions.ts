/**
 * Users' reactions on Matrix -> the kit's reaction events (shared/runtime/channel/reactions.ts
 * filters them by `reactionNotifications` and stores them). An `m.reaction` event of a room member
 * (not the bot) is an annotation (`m.relates_to: { rel_type: "m.annotation", event_id, key }`):
 * "added", the emoji is `key`, the message the annotated event id, the event id the reaction's
 * own. Taking it back is a redaction of that reaction event (`m.room.redaction`, `redacts` in the
 * content since room version 11, at the top level before): the channel keeps each reaction the kit
 * stored (reaction event id -> room, annotated event, key, reacting user; LMDB
 * `<dataDir>/channel-matrix/reactions/`, KEEP_MS), so the redaction is reported "removed" (its
 * event id the redaction's); a redaction of anything else is not a reaction. The conversation and
 * peer are the room's (a DM: the user; else the room); when the sent-ledger knows the reacted
 * message is the assistant's in a thread, the kit takes the thread's topic session (`peerOf`).
 * An m.reaction whose content is not an annotation of an event id is logged and dropped; one
 * with an empty or over-long key is refused by the kit (dropped). The caller skips encrypted
 * rooms (like their messages).
 */
import { ExpiringDb, type ChannelContext, type ReactionEvent } from "../../shared/runtime/channel/index.js";
import type { MatrixChannelConfig } from "../../shared/runtime/config-channels.js";
import { conversationOf, isEventId, roomPeer, targetOf, type BotIdentity } from "./inbound.js";
import { reactionContentSchema, type RoomEvent } from "./wire.js";

/** a reaction taken back later than this after it was made is not reported */
const KEEP_MS = 30 * 24 * 3600_000;

export interface KeptReaction { roomId: string; target: string; key: string; sender: string; at: number }

/** The users' reactions the kit stored, by reaction event id (to report their redaction). */
export class ReactionLog extends ExpiringDb<KeptReaction> {
  constructor(path: string, now: () => number = Date.now) {
    super(path, "reactions", { keepMs: KEEP_MS, sweepEveryMs: 3600_000, stampOf: (e) => e.at, now });
  }

  /** Durable when the promise resolves. */
  async keep(reactionId: string, entry: Omit<KeptReaction, "at">): Promise<void> {
    await this.db.put(reactionId, { ...entry, at: this.now() });
  }

  async forget(reactionId: string): Promise<void> {
    await this.db.remove(reactionId);
  }
}

/** The annotated event and key of an m.reaction; undefined when its content is not an annotation of an event id. */
export function annotationOf(ev: RoomEvent): { target: string; key: string } | undefined {
  const rel = reactionContentSchema.safeParse(ev.content).data?.["m.relates_to"];
  return rel && isEventId(rel.event_id) ? { target: rel.event_id, key: rel.key } : undefined;
}

/** The event an m.room.redaction takes back (`content.redacts`, else the top-level field of older room versions). */
export function redactedOf(ev: RoomEvent): string | undefined {
  const id = typeof ev.content.redacts === "string" ? ev.content.redacts : ev.redacts;
  return id && isEventId(id) ? id : undefined;
}

export interface ReactionFacts {
  roomId: string;
  direct: boolean;
  /** this platform event: the m.reaction's id ("added") or the redaction's ("removed") */
  eventId: string;
  action: ReactionEvent["action"];
  target: string;
  key: string;
  sender: string;
  senderName?: string | undefined;
  ts?: number | undefined;
}

/** The kit's event of one reaction (pure). */
export function reactionEvent(f: ReactionFacts): ReactionEvent {
  return {
    eventId: f.eventId, action: f.action, emoji: f.key, messageId: f.target,
    conversation: conversationOf(f.roomId),
    peer: roomPeer(f.roomId, f.direct, f.sender),
    sender: { id: f.sender, ...(f.senderName ? { name: f.senderName.slice(0, 200) } : {}) },
    ...(f.ts ? { ts: f.ts } : {}),
    // the assistant's message in a thread of this room: the thread's session (a DM's thread keeps the DM's);
    // a conversation that is no Matrix room throws, and the kit keeps the event's peer
    peerOf: (conversation) => {
      const target = targetOf(conversation);
      return target.roomId === f.roomId ? roomPeer(f.roomId, f.direct, f.sender, target.threadRoot) : undefined;
    },
  };
}

export interface ReactionDeps {
  ctx: ChannelContext<MatrixChannelConfig>;
  log: ReactionLog;
  bot: BotIdentity;
  isDirect(roomId: string): Promise<boolean>;
  nameOf(roomId: string, userId: string): string | undefined;
}

/** One m.reaction or m.room.redaction of a room's timeline (not of an encrypted room); throws only when the bus is unavailable. */
export async function takeReaction(d: ReactionDeps, roomId: string, ev: RoomEvent): Promise<void> {
  if (!ev.event_id) return;
  if (ev.type === "m.reaction") {
    if (ev.sender === d.bot.userId) return; // the bot's own (the kit would ignore it too)
    const annotation = annotationOf(ev);
    if (!annotation) {
      // a reaction redacted before the sync saw it has no content left: nothing to say
      if (ev.unsigned?.redacted_because === undefined) d.ctx.log.warn({ roomId, eventId: ev.event_id }, "a malformed m.reaction (not an m.annotation of an event with a key); dropped");
      return;
    }
    const outcome = await d.ctx.publishReaction(reactionEvent({
      roomId, direct: await d.isDirect(roomId), eventId: ev.event_id, action: "added", ...annotation,
      sender: ev.sender, senderName: d.nameOf(roomId, ev.sender), ts: ev.origin_server_ts,
    }));
    if (outcome === "stored" || outcome === "duplicate") await d.log.keep(ev.event_id, { roomId, ...annotation, sender: ev.sender });
    return;
  }
  if (ev.type !== "m.room.redaction") return;
  const redacted = redactedOf(ev);
  const kept = redacted ? d.log.get(redacted) : undefined;
  if (!redacted || !kept || kept.roomId !== roomId) return;
  await d.ctx.publishReaction(reactionEvent({
    roomId, direct: await d.isDirect(roomId), eventId: ev.event_id, action: "removed", target: kept.target, key: kept.key,
    sender: kept.sender, senderName: d.nameOf(roomId, kept.sender), ts: ev.origin_server_ts,
  }));
  await d.log.forget(redacted);
}
