/**
 * The Matrix Client-Server API v3 as the channel reads it, as zod schemas: every response body is
 * validated before use (an unknown field is kept out, a missing required one is an error the
 * caller logs). Events are parsed loosely (`content` stays a record) and their content with the
 * schema of their type, so one odd event cannot break a whole /sync batch.
 */
import { z } from "zod";

/** `{ errcode, error, retry_after_ms? }`: a Matrix error body. */
export const matrixErrorSchema = z.object({
  errcode: z.string().max(200),
  error: z.string().max(2000).optional(),
  retry_after_ms: z.number().int().nonnegative().optional(),
});

export const whoamiSchema = z.object({ user_id: z.string().min(1), device_id: z.string().optional() });
export const displayNameSchema = z.object({ displayname: z.string().max(500).nullish() });
export const eventIdSchema = z.object({ event_id: z.string().min(1).max(255) });
export const roomIdSchema = z.object({ room_id: z.string().min(1).max(255) });
export const uploadSchema = z.object({ content_uri: z.string().startsWith("mxc://") });
export const joinedMembersSchema = z.object({ joined: z.record(z.string(), z.object({ display_name: z.string().nullish() }).loose()) });

/** A room event (timeline or state): what the channel uses of it. */
export const roomEventSchema = z.object({
  type: z.string().max(255),
  event_id: z.string().max(255).optional(),
  sender: z.string().max(255),
  origin_server_ts: z.number().optional(),
  state_key: z.string().max(255).optional(),
  content: z.record(z.string(), z.unknown()).default({}),
  unsigned: z.record(z.string(), z.unknown()).optional(),
  /** an m.room.redaction's target in room versions before 11 (since 11: `content.redacts`) */
  redacts: z.string().max(255).optional(),
});
export type RoomEvent = z.infer<typeof roomEventSchema>;

const eventList = z.object({ events: z.array(z.unknown()).default([]) }).loose();

export const joinedRoomSchema = z.object({
  summary: z.object({
    "m.joined_member_count": z.number().int().nonnegative().optional(),
    "m.invited_member_count": z.number().int().nonnegative().optional(),
    "m.heroes": z.array(z.string()).optional(),
  }).loose().optional(),
  state: eventList.optional(),
  timeline: eventList.extend({ limited: z.boolean().optional(), prev_batch: z.string().optional() }).optional(),
}).loose();
export type JoinedRoom = z.infer<typeof joinedRoomSchema>;

/** GET /rooms/{roomId}/messages: a page of events (`dir=b`: newest first); no `end`: nothing more */
export const messagesSchema = z.object({
  chunk: z.array(z.unknown()).default([]),
  start: z.string().max(4096).optional(),
  end: z.string().max(4096).optional(),
}).loose();
export type MessagesPage = z.infer<typeof messagesSchema>;

export const invitedRoomSchema = z.object({ invite_state: eventList.optional() }).loose();

/** GET /_matrix/client/v3/sync */
export const syncResponseSchema = z.object({
  next_batch: z.string().min(1).max(4096),
  rooms: z.object({
    join: z.record(z.string(), joinedRoomSchema).default({}),
    invite: z.record(z.string(), invitedRoomSchema).default({}),
    leave: z.record(z.string(), z.unknown()).default({}),
  }).loose().optional(),
  account_data: eventList.optional(),
}).loose();
export type SyncResponse = z.infer<typeof syncResponseSchema>;

/**
 * `m.relates_to` of a message: a reply (`m.in_reply_to`) or another relation (`rel_type`, e.g.
 * m.replace, m.thread with `event_id` the thread's root; in a thread `is_falling_back: true` says
 * the `m.in_reply_to` is only there for clients without threads, not a real reply).
 */
const relatesToSchema = z.object({
  rel_type: z.string().optional(),
  event_id: z.string().optional(),
  // a malformed one is as absent (not a reason to drop the message)
  is_falling_back: z.boolean().optional().catch(undefined),
  "m.in_reply_to": z.object({ event_id: z.string().min(1).max(255) }).loose().optional(),
}).loose();

/** GET /_matrix/client/v1/rooms/{roomId}/relations/{eventId}/{relType}/{eventType}: a page of the events relating to one */
export const relationsSchema = z.object({
  chunk: z.array(z.unknown()).default([]),
  next_batch: z.string().max(4096).optional(),
}).loose();

/** `m.reaction` content: an annotation (`key`: the emoji) of `event_id` */
export const reactionContentSchema = z.object({
  "m.relates_to": z.object({ rel_type: z.literal("m.annotation"), event_id: z.string(), key: z.string() }).loose(),
}).loose();

const mediaInfoSchema = z.object({
  mimetype: z.string().max(200).optional(),
  size: z.number().int().nonnegative().optional(),
  w: z.number().optional(),
  h: z.number().optional(),
  duration: z.number().optional(),
}).loose();

/** The content of an `m.room.message` event (msgtype m.text, m.notice, m.emote, m.image, m.audio, m.file, m.video). */
export const messageContentSchema = z.object({
  msgtype: z.string().max(100),
  body: z.string().max(200_000).default(""),
  format: z.string().optional(),
  formatted_body: z.string().max(400_000).optional(),
  /** a file's name when `body` is its caption (spec v1.10) */
  filename: z.string().max(500).optional(),
  url: z.string().max(2000).optional(),
  /** an encrypted file (E2EE rooms only): not supported */
  file: z.unknown().optional(),
  info: mediaInfoSchema.optional(),
  "m.relates_to": relatesToSchema.optional(),
  "m.mentions": z.object({ user_ids: z.array(z.string()).optional(), room: z.boolean().optional() }).loose().optional(),
  "m.new_content": z.unknown().optional(),
}).loose();
export type MessageContent = z.infer<typeof messageContentSchema>;

/** `m.room.member` content */
export const memberContentSchema = z.object({ membership: z.string(), displayname: z.string().nullish(), is_direct: z.boolean().optional() }).loose();

/** `m.direct` account data: user id -> DM room ids */
export const directContentSchema = z.record(z.string(), z.array(z.string()));
