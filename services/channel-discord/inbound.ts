/**
 * Discord MESSAGE_CREATE -> inbound messages (pure). Messages without a guild are DMs; guild
 * text channels are `channel` peers with the guild id (bindings can match the guild); threads
 * are `thread` peers (parent channel + thread id), each its own session. The bot is mentioned by
 * `<@id>`/`<@!id>`, by a reply to its message, or in a DM; its own mention is cut from the text so
 * `@Lurk /new` reads as `/new`. The platform message id is the message's snowflake.
 * Attachments are mapped without their CDN url: the actor downloads each into the media store
 * (files.ts) and the published message carries the ref.
 */
import type { InboundInput, PlatformFile } from "../../shared/runtime/channel/index.js";
import { attachmentKind } from "../../shared/runtime/media.js";

export interface DcUser { id: string; username?: string; global_name?: string | null; bot?: boolean }
export interface DcAttachment { id: string; filename: string; content_type?: string; size?: number; url?: string }
export interface DcMessage {
  id: string;
  channel_id: string;
  guild_id?: string;
  author: DcUser;
  content: string;
  mentions?: DcUser[];
  referenced_message?: { id: string; author?: DcUser } | null;
  attachments?: DcAttachment[];
  webhook_id?: string;
  timestamp?: string;
}
/** What the channel knows about the channel a message is in (threads need their parent). */
export interface DcChannelInfo { id: string; isThread: boolean; parentId?: string }

export function messageToInbound(msg: DcMessage, botId: string, channel: DcChannelInfo): InboundInput | undefined {
  if (msg.author.bot || msg.webhook_id || msg.author.id === botId) return undefined;
  const text = msg.content.replace(new RegExp(`<@!?${botId}>`, "g"), "").replace(/\s{2,}/g, " ").trim();
  const attachments: NonNullable<InboundInput["attachments"]> = (msg.attachments ?? []).map((a) => {
    const mime = a.content_type ?? "application/octet-stream";
    return { kind: attachmentKind(mime), mime, name: a.filename, ...(a.size !== undefined ? { size: a.size } : {}) };
  });
  if (!text && attachments.length === 0) return undefined;
  const dm = msg.guild_id === undefined;
  const mentioned = dm || new RegExp(`<@!?${botId}>`).test(msg.content) || (msg.mentions ?? []).some((u) => u.id === botId) || msg.referenced_message?.author?.id === botId;
  return {
    id: msg.id,
    conversation: msg.channel_id,
    peer: peerOf(msg.guild_id, msg.channel_id, msg.author.id, channel),
    sender: senderOf(msg.author),
    text,
    attachments,
    mentioned,
    ...(msg.referenced_message ? { replyToMessageId: msg.referenced_message.id } : {}),
    ...(msg.timestamp ? { ts: Date.parse(msg.timestamp) } : {}),
  };
}

/**
 * Who the router talks to for something said in `channelId` (a message, or a slash command in
 * interactions.ts): no guild = a DM with the user; a thread = `thread` (parent + thread id);
 * else the guild channel.
 */
export function peerOf(guildId: string | undefined, channelId: string, userId: string, channel: DcChannelInfo): InboundInput["peer"] {
  if (guildId === undefined) return { kind: "dm", id: userId };
  return channel.isThread && channel.parentId
    ? { kind: "thread", id: channel.parentId, threadId: channelId, guildId }
    : { kind: "channel", id: channelId, guildId };
}

export function senderOf(user: DcUser): InboundInput["sender"] {
  const name = user.global_name ?? user.username;
  return { id: user.id, ...(name ? { name } : {}) };
}

/** What the media kit needs of a Discord attachment; the size Discord announces caps the download. */
export function attachmentFile(a: DcAttachment): PlatformFile {
  return { name: a.filename, ...(a.content_type ? { mime: a.content_type } : {}), ...(a.size !== undefined ? { size: a.size } : {}) };
}
