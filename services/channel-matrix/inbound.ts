/**
 * Matrix room events -> inbound messages (pure). A room is a DM when it has exactly two joined
 * members or `m.direct` lists it; any other room is a `group` peer (the room id). The platform
 * message id is the event id (unique across rooms), the conversation the encoded room id.
 * Taken: `m.room.message` with msgtype m.text, m.emote, m.image, m.audio, m.file, m.video (and
 * any other msgtype that has a body). Ignored: the bot's own events, m.notice (what bots send:
 * answering them makes two bots talk forever), users' edits (`m.replace`: the original was answered),
 * redacted events (no msgtype) and encrypted files. A reply's fallback (the quoted `> <@user> …`
 * lines of `body`, `<mx-reply>` of the HTML) is cut; the replied-to event becomes `replyToMessageId`.
 * Mentioned: in a DM always; else `m.mentions.user_ids` naming the bot, the bot's user id or
 * display name in the text, or a matrix.to link to it in the HTML. A leading mention of the bot
 * ("Lurk: /new") is cut, so commands read the same in rooms.
 * Threads (`m.relates_to.rel_type: "m.thread"`, `event_id` the thread's root), with `threads:
 * "thread"` (the default): the conversation is the room and the root (`<roomId>,<rootId>`, so the
 * reply goes into the thread), and in a group room the peer carries `topicId: <rootId>` (the
 * router's `topic` session: one per thread); a DM room's thread keeps the DM's session. A thread
 * message's `m.in_reply_to` with `is_falling_back` is no reply (clients put the thread's last event
 * there). `threads: "room"`: threads are the room's conversation (answered in the room).
 */
import { decodeToken, encodeToken, type Attachment, type Peer } from "../../shared/contract/index.js";
import type { InboundInput } from "../../shared/runtime/channel/index.js";
import { attachmentKind, mimeFromName } from "../../shared/runtime/media.js";
import { messageContentSchema, type MessageContent, type RoomEvent } from "./wire.js";

export interface BotIdentity { userId: string; displayName?: string | undefined }

/** A file a message carries (downloaded by files.ts). */
export interface MatrixFile { mxc: string; kind: Attachment["kind"]; mime: string; name?: string; size?: number }

/** Where replies go: a room, and the root of the thread in it when there is one. */
export interface MatrixTarget { roomId: string; threadRoot?: string }

const EVENT_ID = /^\$[^\s,]{1,254}$/;
/** whether `id` looks like an event id (`$…`, no whitespace or comma) */
export const isEventId = (id: string) => EVENT_ID.test(id);

/** The conversation of a room, or of a thread in it (`<roomId>,<rootEventId>`: a server name has no comma). */
export const conversationOf = (roomId: string, threadRoot?: string) => encodeToken(threadRoot ? `${roomId},${threadRoot}` : roomId);

/** Reverses conversationOf; throws on a conversation that is not a Matrix room (or thread). */
export function targetOf(conversation: string): MatrixTarget {
  const m = /^(![^\s:]+:[^\s,]+)(?:,(\$[^\s,]{1,254}))?$/.exec(decodeToken(conversation));
  if (!m) throw new Error(`"${conversation}" is not a Matrix room`);
  return { roomId: m[1]!, ...(m[2] ? { threadRoot: m[2] } : {}) };
}

/** The peer of a conversation of a room: a DM's user (its threads too), else the room, a thread's with `topicId` (a session of its own). */
export const roomPeer = (roomId: string, direct: boolean, sender: string, threadRoot?: string): Peer =>
  direct ? { kind: "dm", id: sender } : { kind: "group", id: roomId, ...(threadRoot ? { topicId: threadRoot } : {}) };

/** The room of a conversation (a thread's: its room). */
export const roomOf = (conversation: string): string => targetOf(conversation).roomId;

const FILE_KINDS: Record<string, Attachment["kind"]> = { "m.image": "image", "m.audio": "audio", "m.video": "video", "m.file": "file" };
const DEFAULT_MIME: Record<string, string> = { "m.image": "image/png", "m.audio": "audio/ogg", "m.video": "video/mp4", "m.file": "application/octet-stream" };

/** `body` without a reply fallback: the leading `> ` lines and the blank line after them. */
export function stripReplyFallback(body: string): string {
  if (!body.startsWith("> ")) return body;
  const lines = body.split("\n");
  let i = 0;
  while (i < lines.length && lines[i]!.startsWith(">")) i++;
  if (i < lines.length && lines[i]!.trim() === "") i++;
  return lines.slice(i).join("\n");
}

/** The HTML without its `<mx-reply>` block. */
export const stripMxReply = (html: string) => html.replace(/<mx-reply>[\s\S]*?<\/mx-reply>/gi, "");

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

function mentions(content: MessageContent, text: string, bot: BotIdentity): boolean {
  if (content["m.mentions"]?.user_ids?.includes(bot.userId)) return true;
  if (text.toLowerCase().includes(bot.userId.toLowerCase())) return true;
  if (bot.displayName && new RegExp(`(^|[^\\p{L}\\p{N}_])${escapeRe(bot.displayName)}($|[^\\p{L}\\p{N}_])`, "iu").test(text)) return true;
  const html = content.formatted_body ? stripMxReply(content.formatted_body) : "";
  return html.includes(`matrix.to/#/${bot.userId}`) || html.includes(`matrix.to/#/${encodeURIComponent(bot.userId)}`);
}

/** "Lurk: /new" -> "/new" (the bot's display name or user id, then `:` or `,`, at the start). */
function withoutLeadingMention(text: string, bot: BotIdentity): string {
  const names = [bot.userId, bot.displayName].filter((n): n is string => !!n).map(escapeRe).join("|");
  return text.replace(new RegExp(`^\\s*@?(?:${names})\\s*[:,]?\\s+`, "iu"), "");
}

export interface MappedMessage {
  inbound: InboundInput;
  files: MatrixFile[];
}

export interface MapOptions {
  /** `channels.matrix.threads` (default "thread") */
  threads?: "thread" | "room";
}

/** The thread root of a message in a thread (undefined for one that is not, or a root the conversation cannot hold). */
function threadRootOf(content: MessageContent, roomId: string): string | undefined {
  const relation = content["m.relates_to"];
  if (relation?.rel_type !== "m.thread" || !relation.event_id || !EVENT_ID.test(relation.event_id)) return undefined;
  try {
    conversationOf(roomId, relation.event_id); // throws beyond a subject token's 128 characters
    return relation.event_id;
  } catch {
    return undefined;
  }
}

/** The inbound message (and its files) of a room event; undefined for what LurkBot does not take. */
export function eventToInbound(ev: RoomEvent, roomId: string, direct: boolean, bot: BotIdentity, senderName?: string, opts: MapOptions = {}): MappedMessage | undefined {
  if (ev.type !== "m.room.message" || !ev.event_id || ev.sender === bot.userId) return undefined;
  const parsed = messageContentSchema.safeParse(ev.content);
  if (!parsed.success) return undefined;
  const content = parsed.data;
  const relation = content["m.relates_to"];
  if (content.msgtype === "m.notice" || relation?.rel_type === "m.replace" || content["m.new_content"] !== undefined) return undefined;
  const files: MatrixFile[] = [];
  let raw = stripReplyFallback(content.body);
  const kind = FILE_KINDS[content.msgtype];
  if (kind) {
    if (!content.url || content.file !== undefined) return undefined; // encrypted media: not supported
    const name = content.filename ?? (content.body || undefined);
    const mime = content.info?.mimetype || (name ? mimeFromName(name) : "") || DEFAULT_MIME[content.msgtype]!;
    files.push({ mxc: content.url, kind: kind === "file" ? attachmentKind(mime) : kind, mime, ...(name ? { name } : {}), ...(content.info?.size !== undefined ? { size: content.info.size } : {}) });
    // the body is the caption only when a filename is given apart from it
    raw = content.filename && content.body !== content.filename ? raw : "";
  }
  const mentioned = direct || mentions(content, raw, bot);
  const text = (content.msgtype === "m.emote" ? `* ${raw}` : withoutLeadingMention(raw, bot)).trim();
  if (!text && files.length === 0) return undefined;
  const threadRoot = (opts.threads ?? "thread") === "thread" ? threadRootOf(content, roomId) : undefined;
  // in a thread, a falling-back m.in_reply_to is the thread's last event, not what the user answers
  const inReplyTo = threadRoot && relation?.is_falling_back === true ? undefined : relation?.["m.in_reply_to"]?.event_id;
  return {
    files,
    inbound: {
      id: ev.event_id,
      conversation: conversationOf(roomId, threadRoot),
      peer: roomPeer(roomId, direct, ev.sender, threadRoot),
      sender: { id: ev.sender, ...(senderName ? { name: senderName.slice(0, 200) } : {}) },
      text,
      mentioned,
      ...(inReplyTo ? { replyToMessageId: inReplyTo } : {}),
      ...(ev.origin_server_ts ? { ts: ev.origin_server_ts } : {}),
    },
  };
}
