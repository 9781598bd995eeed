/**
 * Files of the Discord channel, through the media store (shared/runtime/channel/media.ts):
 *  - in: each attachment of a message is downloaded from Discord's CDN (its signed url needs no
 *    token) into the store before the message is published; the message carries the ref, never
 *    the url, or `error` when the file is above media.maxFileMb (the size Discord announces is
 *    checked first: not downloaded) or the download failed;
 *  - out: an attachment part is loaded from the store and posted as a file message (OGG/Opus
 *    audio as a native voice message, a plain file when Discord refuses that); a file the
 *    store cannot give for good (expired, too large) is sent as the fallback text instead; a
 *    store that is down is a retryable DeliveryError.
 */
import { DiscordAPIError } from "@discordjs/rest";
import type { Attachment } from "../../shared/contract/index.js";
import {
  downloadCapped, outboundFileOrFallback, storeInboundFile, type ChannelContext, } from "../../shared/runtime/channel/index.js";
import type { DiscordChannelConfig } from "../../shared/runtime/config-channels.js";
import { attachmentFile, type DcAttachment } from "./inbound.js";
import { toDeliveryError, type DiscordApi } from "./send.js";
import { voiceMessageOf } from "./voice-message.js";

type Ctx = ChannelContext<DiscordChannelConfig>;

/** The message's attachments, stored (never throws: a file that fails has `error`). */
export function storeAttachments(ctx: Ctx, attachments: DcAttachment[]): Promise<Attachment[]> {
  return Promise.all(attachments.map((a) => storeInboundFile(ctx.rt.media, attachmentFile(a), async (maxBytes, signal) => {
    if (!a.url) throw new Error("Discord sent the attachment without a url");
    return downloadCapped(a.url, { maxBytes, signal });
  }, ctx.log)));
}

/**
 * Posts one attachment (or its fallback text); returns the Discord message id. OGG/Opus audio
 * goes as a native voice message (voice-message.ts); when Discord refuses that (400: the voice
 * message's metadata or content; 403: no permission to send voice messages here, 50173) it goes
 * again as a plain file.
 */
export async function sendAttachment(ctx: Ctx, api: DiscordApi, channelId: string, a: Attachment, replyTo?: string, signal?: AbortSignal): Promise<string> {
  const loaded = await outboundFileOrFallback(ctx.rt.media, a, ctx.log);
  if ("fallback" in loaded) return api.send(channelId, loaded.fallback, replyTo, signal);
  const voice = voiceMessageOf(loaded.file);
  if (voice) {
    try {
      return await api.sendVoiceMessage(channelId, loaded.file, voice, replyTo, signal);
    } catch (err) {
      if (!(err instanceof DiscordAPIError) || (err.status !== 400 && err.status !== 403)) throw toDeliveryError(err);
      ctx.log.info({ channelId, status: err.status, code: err.code, reason: err.message }, "Discord refused the voice message; sending the audio as a file");
    }
  }
  return api.sendFile(channelId, loaded.file, replyTo, signal);
}
