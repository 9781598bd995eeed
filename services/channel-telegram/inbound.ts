/**
 * Telegram updates -> inbound messages (pure). Private chats are DMs; groups and supergroups are
 * groups, and a forum topic's messages (`is_topic_message`) carry the topic id, so each topic
 * gets its own session. The bot counts as mentioned when a `@username` mention or a text_mention
 * names it, when the message replies to one of its messages, or in a private chat. `/cmd@Bot`
 * becomes `/cmd`, so commands read the same in groups. The platform message id is
 * `<chatId>:<messageId>` (message ids are unique per chat only). The files a message carries
 * (`filesOf`) are downloaded by files.ts; the caption is the message's text.
 */
import { decodeToken, encodeToken, type Attachment } from "../../shared/contract/index.js";
import type { InboundInput } from "../../shared/runtime/channel/index.js";
import { mimeFromName } from "../../shared/runtime/media.js";

export interface TgUser { id: number; is_bot?: boolean; first_name?: string; last_name?: string; username?: string }
export interface TgEntity { type: string; offset: number; length: number; user?: TgUser }
export interface TgMessage {
  message_id: number;
  chat: { id: number; type: "private" | "group" | "supergroup" | "channel"; title?: string; is_forum?: boolean };
  from?: TgUser;
  date?: number;
  text?: string;
  caption?: string;
  entities?: TgEntity[];
  caption_entities?: TgEntity[];
  message_thread_id?: number;
  is_topic_message?: boolean;
  reply_to_message?: { message_id: number; from?: TgUser };
  photo?: { file_id: string; file_size?: number }[];
  document?: TgFileMeta;
  voice?: TgFileMeta;
  audio?: TgFileMeta;
  video?: TgFileMeta;
}
interface TgFileMeta { file_id: string; file_name?: string; mime_type?: string; file_size?: number }

/** A file a message carries: the file id for getFile, and what Telegram announced about it. */
export interface TgFile {
  fileId: string;
  /** undefined: from the MIME type (a PNG sent as a document is an image) */
  kind?: Attachment["kind"];
  mime: string;
  name?: string;
  size?: number;
}
export interface BotIdentity { id: number; username: string }

/** Where replies go: the chat, and the forum topic when there is one. */
export interface TgTarget { chatId: number; threadId?: number }

export function conversationOf(target: TgTarget): string {
  return encodeToken(target.threadId !== undefined ? `${target.chatId}:${target.threadId}` : String(target.chatId));
}

/** Reverses conversationOf; throws on a conversation that is not one of ours. */
export function targetOf(conversation: string): TgTarget {
  const decoded = decodeToken(conversation);
  const match = /^(-?\d+)(?::(\d+))?$/.exec(decoded);
  if (!match) throw new Error(`"${conversation}" is not a Telegram conversation`);
  return { chatId: Number(match[1]), ...(match[2] ? { threadId: Number(match[2]) } : {}) };
}

export const platformMessageId = (chatId: number, messageId: number) => `${chatId}:${messageId}`;

/** A private chat is a DM; any other chat a group (with the forum topic, when there is one). */
export function peerOf(chat: Pick<TgMessage["chat"], "id" | "type">, topic?: number): InboundInput["peer"] {
  return chat.type === "private"
    ? { kind: "dm", id: String(chat.id) }
    : { kind: "group", id: String(chat.id), ...(topic !== undefined ? { topicId: String(topic) } : {}) };
}

export const fullName = (user: TgUser) => [user.first_name, user.last_name].filter(Boolean).join(" ");

function mentionsBot(msg: TgMessage, text: string, bot: BotIdentity): boolean {
  if (msg.chat.type === "private") return true;
  if (msg.reply_to_message?.from?.id === bot.id) return true;
  const handle = `@${bot.username}`.toLowerCase();
  for (const e of [...(msg.entities ?? []), ...(msg.caption_entities ?? [])]) {
    if (e.type === "mention" && text.slice(e.offset, e.offset + e.length).toLowerCase() === handle) return true;
    if (e.type === "text_mention" && e.user?.id === bot.id) return true;
    if (e.type === "bot_command" && text.slice(e.offset, e.offset + e.length).toLowerCase().endsWith(handle)) return true;
  }
  return false;
}

/** `/new@MyBot rest` -> `/new rest` (only for this bot's name). */
export function normalizeCommand(text: string, bot: BotIdentity): string {
  const m = /^(\/[A-Za-z0-9_]+)@([A-Za-z0-9_]+)(.*)$/s.exec(text);
  return m && m[2]!.toLowerCase() === bot.username.toLowerCase() ? `${m[1]}${m[3]}` : text;
}

function fileOf(meta: TgFileMeta, kind: Attachment["kind"] | undefined, defaultMime: string): TgFile {
  return {
    fileId: meta.file_id, ...(kind ? { kind } : {}), mime: meta.mime_type || defaultMime,
    ...(meta.file_name ? { name: meta.file_name } : {}), ...(meta.file_size ? { size: meta.file_size } : {}),
  };
}

/**
 * The files of a message: the largest size of a photo (Telegram photos are JPEG), a document
 * (its name and MIME type kept), voice, audio, video.
 */
export function filesOf(msg: TgMessage): TgFile[] {
  const files: TgFile[] = [];
  const largest = msg.photo?.at(-1);
  if (largest) files.push(fileOf(largest, "image", "image/jpeg"));
  if (msg.document) files.push(fileOf(msg.document, undefined, mimeFromName(msg.document.file_name ?? "")));
  if (msg.voice) files.push(fileOf(msg.voice, "audio", "audio/ogg"));
  if (msg.audio) files.push(fileOf(msg.audio, "audio", "audio/mpeg"));
  if (msg.video) files.push(fileOf(msg.video, "video", "video/mp4"));
  return files;
}

/**
 * The inbound message for a Telegram message, without its files (the caller downloads
 * `filesOf(msg)` into `attachments`); undefined for what LurkBot does not take (channel posts,
 * bots, nothing said and no file).
 */
export function messageToInbound(msg: TgMessage, bot: BotIdentity): InboundInput | undefined {
  if (msg.chat.type === "channel" || !msg.from || msg.from.is_bot) return undefined;
  const raw = msg.text ?? msg.caption ?? "";
  if (!raw && filesOf(msg).length === 0) return undefined;
  const chatId = msg.chat.id;
  const topic = msg.is_topic_message && msg.message_thread_id !== undefined ? msg.message_thread_id : undefined;
  const sender = msg.from;
  const name = fullName(sender) || sender.username;
  return {
    id: platformMessageId(chatId, msg.message_id),
    conversation: conversationOf({ chatId, ...(topic !== undefined ? { threadId: topic } : {}) }),
    peer: peerOf(msg.chat, topic),
    sender: { id: String(sender.id), ...(name ? { name } : {}) },
    text: normalizeCommand(raw, bot),
    mentioned: mentionsBot(msg, raw, bot),
    ...(msg.reply_to_message ? { replyToMessageId: platformMessageId(chatId, msg.reply_to_message.message_id) } : {}),
    ...(msg.date ? { ts: msg.date * 1000 } : {}),
  };
}
