/**
 * Discord REST calls of the channel (through @discordjs/rest, which itself waits out 429s and
 * retries 5xx): send, send a file (multipart: `files[0]` + `payload_json`), edit, delete, typing,
 * channel lookups (cached: is it a thread, and whose).
 * Errors become DeliveryErrors: 4xx other than 429 are permanent (missing access, unknown
 * channel, message too long), the rest retryable.
 */
import { DiscordAPIError, HTTPError, RateLimitError, type REST } from "@discordjs/rest";
import { Routes } from "discord-api-types/v10";
import { DeliveryError, type OutboundFile } from "../../shared/runtime/channel/index.js";
import type { DcChannelInfo } from "./inbound.js";

const THREAD_TYPES = new Set([10, 11, 12]);

export function toDeliveryError(err: unknown): DeliveryError {
  if (err instanceof DeliveryError) return err;
  if (err instanceof RateLimitError) return new DeliveryError(`Discord rate limit on ${err.route}`, { retryAfterMs: err.retryAfter, cause: err });
  if (err instanceof DiscordAPIError) {
    return new DeliveryError(`Discord refused the request (${err.status} ${err.code}): ${err.message}`, { permanent: err.status >= 400 && err.status < 500 && err.status !== 429, cause: err });
  }
  if (err instanceof HTTPError) return new DeliveryError(`Discord HTTP ${err.status}: ${err.message}`, { permanent: err.status >= 400 && err.status < 500 && err.status !== 429, cause: err });
  return new DeliveryError(`cannot reach Discord: ${(err as Error)?.message ?? String(err)}`, { cause: err });
}

export class DiscordApi {
  private readonly channels = new Map<string, Promise<DcChannelInfo>>();

  constructor(private readonly rest: REST) {}

  async send(channelId: string, content: string, replyTo?: string, signal?: AbortSignal): Promise<string> {
    try {
      const body = { content, allowed_mentions: { parse: [] as string[] }, ...(replyTo ? { message_reference: { message_id: replyTo, fail_if_not_exists: false } } : {}) };
      const sent = (await this.rest.post(Routes.channelMessages(channelId), { body, ...(signal ? { signal } : {}) })) as { id: string };
      return sent.id;
    } catch (err) {
      throw toDeliveryError(err);
    }
  }

  /** Posts one file as its own message (no text); returns the message id. */
  async sendFile(channelId: string, file: OutboundFile, replyTo?: string, signal?: AbortSignal): Promise<string> {
    try {
      const body = {
        allowed_mentions: { parse: [] as string[] }, attachments: [{ id: 0, filename: file.name }],
        ...(replyTo ? { message_reference: { message_id: replyTo, fail_if_not_exists: false } } : {}),
      };
      const files = [{ name: file.name, data: file.bytes, contentType: file.mime }];
      const sent = (await this.rest.post(Routes.channelMessages(channelId), { body, files, ...(signal ? { signal } : {}) })) as { id: string };
      return sent.id;
    } catch (err) {
      throw toDeliveryError(err);
    }
  }

  async edit(channelId: string, messageId: string, content: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.rest.patch(Routes.channelMessage(channelId, messageId), { body: { content }, ...(signal ? { signal } : {}) });
    } catch (err) {
      throw toDeliveryError(err);
    }
  }

  async remove(channelId: string, messageId: string): Promise<void> {
    await this.rest.delete(Routes.channelMessage(channelId, messageId));
  }

  async typing(channelId: string): Promise<void> {
    try {
      await this.rest.post(Routes.channelTyping(channelId));
    } catch (err) {
      throw toDeliveryError(err);
    }
  }

  /** Whether a channel is a thread (and its parent); asked once per channel. */
  channelInfo(channelId: string): Promise<DcChannelInfo> {
    let info = this.channels.get(channelId);
    if (!info) {
      info = (this.rest.get(Routes.channel(channelId)) as Promise<{ id: string; type: number; parent_id?: string | null }>).then(
        (c) => ({ id: c.id, isThread: THREAD_TYPES.has(c.type), ...(c.parent_id ? { parentId: c.parent_id } : {}) }),
        (err) => {
          this.channels.delete(channelId);
          throw err;
        },
      );
      this.channels.set(channelId, info);
    }
    return info;
  }
}
