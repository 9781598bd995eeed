/**
 * Slack Web API calls of the channel (through @slack/web-api's WebClient, told to reject rate
 * limited calls so the kit waits them out durably): post (into a thread when the target has
 * one), upload a file (the same), update, delete, approval blocks. Errors become DeliveryErrors: `ratelimited` -> retry
 * after Retry-After; a channel that is gone, archived or not joined, a bad token or scope ->
 * permanent; network and 5xx -> retryable.
 */
import { ErrorCode, type WebClient } from "@slack/web-api";
import { DeliveryError, type OutboundFile } from "../../shared/runtime/channel/index.js";
import { APPROVE_ACTION, DENY_ACTION, type SlackTarget } from "./inbound.js";

/** Platform errors that no retry can fix. */
const PERMANENT = new Set([
  "channel_not_found", "not_in_channel", "is_archived", "msg_too_long", "no_text", "invalid_blocks", "message_not_found",
  "cant_update_message", "invalid_auth", "not_authed", "account_inactive", "token_revoked", "missing_scope", "restricted_action",
]);
/** a section block's text limit */
const SECTION_TEXT_MAX = 3000;

export function toDeliveryError(err: unknown): DeliveryError {
  if (err instanceof DeliveryError) return err;
  const e = err as { code?: string; retryAfter?: number; data?: { error?: string }; statusCode?: number; message?: string };
  if (e?.code === ErrorCode.RateLimitedError) return new DeliveryError("Slack rate limit", { retryAfterMs: (e.retryAfter ?? 1) * 1000, cause: err });
  if (e?.code === ErrorCode.PlatformError) {
    const code = e.data?.error ?? "unknown";
    if (code === "ratelimited") return new DeliveryError("Slack rate limit", { retryAfterMs: 1000, cause: err });
    return new DeliveryError(`Slack refused the request: ${code}`, { permanent: PERMANENT.has(code), cause: err });
  }
  if (e?.code === ErrorCode.HTTPError) {
    const status = e.statusCode ?? 0;
    return new DeliveryError(`Slack HTTP ${status}`, { permanent: status >= 400 && status < 500 && status !== 429, cause: err });
  }
  return new DeliveryError(`cannot reach Slack: ${e?.message ?? String(err)}`, { cause: err });
}

/** Block Kit for an approval: the text, then Approve / Deny buttons carrying the approval id. */
export function approvalBlocks(mrkdwn: string, approvalId: string): Record<string, unknown>[] {
  const text = mrkdwn.length > SECTION_TEXT_MAX ? `${mrkdwn.slice(0, SECTION_TEXT_MAX - 1)}…` : mrkdwn;
  return [
    { type: "section", text: { type: "mrkdwn", text } },
    {
      type: "actions", block_id: "lurk_approval",
      elements: [
        { type: "button", action_id: APPROVE_ACTION, value: approvalId, style: "primary", text: { type: "plain_text", text: "Approve" } },
        { type: "button", action_id: DENY_ACTION, value: approvalId, style: "danger", text: { type: "plain_text", text: "Deny" } },
      ],
    },
  ];
}

export class SlackApi {
  constructor(private readonly web: WebClient) {}

  /** Posts one message; returns its ts. */
  async post(target: SlackTarget, mrkdwn: string, blocks?: Record<string, unknown>[]): Promise<string> {
    try {
      const sent = await this.web.chat.postMessage({
        channel: target.channel, text: mrkdwn, ...(target.threadTs ? { thread_ts: target.threadTs } : {}),
        ...(blocks ? { blocks } : {}), unfurl_links: false, unfurl_media: false,
      });
      if (!sent.ts) throw new DeliveryError("chat.postMessage returned no ts");
      return sent.ts;
    } catch (err) {
      throw toDeliveryError(err);
    }
  }

  /**
   * Uploads one file into the target with Slack's external upload (filesUploadV2:
   * files.getUploadURLExternal, the bytes to its upload_url, files.completeUploadExternal with
   * channel_id and thread_ts). Returns the file id, and the ts of the message sharing it when
   * Slack already reports one.
   */
  async upload(target: SlackTarget, file: OutboundFile): Promise<{ fileId: string; ts?: string }> {
    try {
      const upload = { file: Buffer.from(file.bytes.buffer, file.bytes.byteOffset, file.bytes.byteLength), filename: file.name, title: file.name };
      const res = await this.web.filesUploadV2(target.threadTs
        ? { ...upload, channel_id: target.channel, thread_ts: target.threadTs }
        : { ...upload, channel_id: target.channel });
      const uploaded = res.files[0]?.files?.[0];
      if (!uploaded?.id) throw new DeliveryError("files.completeUploadExternal returned no file");
      // `shares` has `public` (channels) or `private` (DMs, private channels), by channel id
      const shares = uploaded.shares as Record<string, Record<string, { ts?: string }[]> | undefined> | undefined;
      const ts = Object.values(shares ?? {}).flatMap((byChannel) => byChannel?.[target.channel] ?? []).find((share) => share.ts)?.ts;
      return { fileId: uploaded.id, ...(ts ? { ts } : {}) };
    } catch (err) {
      throw toDeliveryError(err);
    }
  }

  /** Replaces a message's text (a draft becoming the reply); `blocks: []` removes buttons. */
  async update(channel: string, ts: string, mrkdwn: string, blocks?: Record<string, unknown>[]): Promise<void> {
    try {
      await this.web.chat.update({ channel, ts, text: mrkdwn, ...(blocks ? { blocks } : {}) });
    } catch (err) {
      throw toDeliveryError(err);
    }
  }

  async remove(channel: string, ts: string): Promise<void> {
    try {
      await this.web.chat.delete({ channel, ts });
    } catch (err) {
      throw toDeliveryError(err);
    }
  }
}
