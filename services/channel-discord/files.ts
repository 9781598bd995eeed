/**
 * Files of the Discord channel, through the media store (shared/runtime/channel/media.ts):
 *  - in: each attachment of a message is downloaded from Discord's CDN (its signed url needs no
 *    token) into the store before the message is published; the message carries the ref, never
 *    the url, or `error` when the file is above media.maxFileMb (the size Discord announces is
 *    checked first: not downloaded) or the download failed;
 *  - out: an attachment part is loaded from the store and posted as a file message; a file the
 *    store cannot give for good (expired, too large) is sent as the fallback text instead; a
 *    store that is down is a retryable DeliveryError.
 */
import type { Attachment } from "../../shared/contract/index.js";
import {
  downloadCapped, outboundFileOrFallback, storeInboundFile, type ChannelContext, } from "../../shared/runtime/channel/index.js";
import type { DiscordChannelConfig } from "../../shared/runtime/config-channels.js";
import { attachmentFile, type DcAttachment } from "./inbound.js";
import type { DiscordApi } from "./send.js";

type Ctx = ChannelContext<DiscordChannelConfig>;

/** The message's attachments, stored (never throws: a file that fails has `error`). */
export function storeAttachments(ctx: Ctx, attachments: DcAttachment[]): Promise<Attachment[]> {
  return Promise.all(attachments.map((a) => storeInboundFile(ctx.rt.media, attachmentFile(a), async (maxBytes, signal) => {
    if (!a.url) throw new Error("Discord sent the attachment without a url");
    return downloadCapped(a.url, { maxBytes, signal });
  }, ctx.log)));
}

/** Posts one attachment (or its fallback text); returns the Discord message id. */
export async function sendAttachment(ctx: Ctx, api: DiscordApi, channelId: string, a: Attachment, replyTo?: string, signal?: AbortSignal): Promise<string> {
  const loaded = await outboundFileOrFallback(ctx.rt.media, a, ctx.log);
  if ("fallback" in loaded) return api.send(channelId, loaded.fallback, replyTo, signal);
  return api.sendFile(channelId, loaded.file, replyTo, signal);
}
