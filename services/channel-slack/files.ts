/**
 * Files of the Slack channel, through the media store (shared/runtime/channel/media.ts):
 *  - in: each file of a message event is downloaded (url_private_download, else url_private) with
 *    `Authorization: Bearer <bot token>` (Slack's files are private to the workspace) into the
 *    store before the message is published; the message carries the ref, never a url or the
 *    token, or `error` when the file is above media.maxFileMb (the size Slack announces is checked
 *    first: not downloaded) or the download failed. The token goes only to Slack's own hosts (or
 *    the configured apiUrl's); Slack's HTML sign-in page (its answer to a request it does not
 *    authorize) counts as a failed download, not as the file;
 *  - out: an attachment part is loaded from the store and uploaded (SlackApi.upload); a file the
 *    store cannot give for good (expired, too large) is sent as the fallback text instead; a
 *    store that is down is a retryable DeliveryError.
 */
import type { Attachment } from "../../shared/contract/index.js";
import {
  downloadCapped, outboundFileOrFallback, storeInboundFile, toSlackMrkdwn, type ChannelContext, } from "../../shared/runtime/channel/index.js";
import type { SlackChannelConfig } from "../../shared/runtime/config-channels.js";
import { downloadUrlOf, platformFileOf, platformMessageId, type SlackFile, type SlackTarget } from "./inbound.js";
import type { SlackApi } from "./send.js";

type Ctx = ChannelContext<SlackChannelConfig>;

/** Whether the bot token may go to `url`: https on slack.com (or a subdomain), or the apiUrl's origin. */
export function mayCarryToken(url: string, apiUrl: string): boolean {
  try {
    const u = new URL(url);
    if (u.origin === new URL(apiUrl).origin) return true;
    return u.protocol === "https:" && (u.hostname === "slack.com" || u.hostname.endsWith(".slack.com"));
  } catch {
    return false;
  }
}

/** The event's files, stored (never throws: a file that fails has `error`). */
export function storeFiles(ctx: Ctx, files: SlackFile[]): Promise<Attachment[]> {
  return Promise.all(files.map((f) => storeInboundFile(ctx.rt.media, platformFileOf(f), async (maxBytes, signal) => {
    const url = downloadUrlOf(f);
    if (!url) throw new Error("Slack gave no download url for the file");
    if (!mayCarryToken(url, ctx.settings.apiUrl)) throw new Error(`the file is not on a Slack host (${new URL(url).hostname}); the bot token is not sent there`);
    const got = await downloadCapped(url, { maxBytes, signal, headers: { Authorization: `Bearer ${ctx.settings.botToken}` } });
    if (got.mime === "text/html" && f.mimetype !== "text/html") throw new Error("Slack answered with its sign-in page: the bot token may not read the file (scope files:read)");
    return got;
  }, ctx.log)));
}

/** Uploads one attachment into the target (or posts its fallback text); returns the platform message id. */
export async function sendAttachment(ctx: Ctx, api: SlackApi, target: SlackTarget, a: Attachment): Promise<string> {
  const loaded = await outboundFileOrFallback(ctx.rt.media, a, ctx.log);
  if ("fallback" in loaded) return platformMessageId(target.channel, await api.post(target, toSlackMrkdwn(loaded.fallback)));
  const uploaded = await api.upload(target, loaded.file);
  return uploaded.ts ? platformMessageId(target.channel, uploaded.ts) : uploaded.fileId;
}
