/**
 * Discord REST calls of the channel (through @discordjs/rest, which itself waits out 429s and
 * retries 5xx): send, send a file (multipart: `files[0]` + `payload_json`), a voice message, edit, delete, typing,
 * channel lookups (cached: is it a thread, and whose), interaction answers and their webhook
 * messages (authorized by the interaction token, not the bot token).
 * Errors become DeliveryErrors: 4xx other than 429 are permanent (missing access, unknown
 * channel, message too long), the rest retryable.
 */
import { DiscordAPIError, HTTPError, RateLimitError, type REST } from "@discordjs/rest";
import { Routes } from "discord-api-types/v10";
import { DeliveryError, type OutboundFile } from "../../shared/runtime/channel/index.js";
import type { DcChannelInfo } from "./inbound.js";
import { IS_VOICE_MESSAGE, type VoiceMessageMeta } from "./voice-message.js";

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

  /**
   * Posts an OGG/Opus file as a native voice message (voice-message.ts): flag IS_VOICE_MESSAGE,
   * the attachment's duration_secs and waveform, no text (Discord refuses any with it). Returns
   * the message id. Errors are raw (files.ts tells a refusal of the voice message from the rest).
   */
  async sendVoiceMessage(channelId: string, file: OutboundFile, voice: VoiceMessageMeta, replyTo?: string, signal?: AbortSignal): Promise<string> {
    const body = {
      flags: IS_VOICE_MESSAGE, allowed_mentions: { parse: [] as string[] },
      attachments: [{ id: 0, filename: file.name, duration_secs: voice.durationSecs, waveform: voice.waveform }],
      ...(replyTo ? { message_reference: { message_id: replyTo, fail_if_not_exists: false } } : {}),
    };
    const files = [{ name: file.name, data: file.bytes, contentType: file.mime }];
    const sent = (await this.rest.post(Routes.channelMessages(channelId), { body, files, ...(signal ? { signal } : {}) })) as { id: string };
    return sent.id;
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

  /**
   * Answers an interaction within Discord's 3 s: type 5, a deferred message ("thinking…") that
   * the reply edits later (interactions.ts). No bot token: the interaction token authorizes it.
   */
  async deferInteraction(interactionId: string, token: string): Promise<void> {
    await this.rest.post(Routes.interactionCallback(interactionId, token), { body: { type: 5 }, auth: false });
  }

  /** Answers an interaction at once with a message only its user sees (type 4, ephemeral). */
  async answerInteraction(interactionId: string, token: string, content: string): Promise<void> {
    await this.rest.post(Routes.interactionCallback(interactionId, token), { body: { type: 4, data: { content, flags: 64, allowed_mentions: { parse: [] } } }, auth: false });
  }

  /**
   * Through the interaction's webhook (`token` lives 15 minutes): `original` edits the deferred
   * message (PATCH …/messages/@original), else a follow-up message (POST). Text or one file
   * (multipart). Returns the message id. Errors are raw (the caller tells a dead token from the rest).
   */
  async interactionMessage(appId: string, token: string, what: { content: string } | { file: OutboundFile }, original: boolean, signal?: AbortSignal): Promise<string> {
    const body = "file" in what
      ? { content: "", allowed_mentions: { parse: [] as string[] }, attachments: [{ id: 0, filename: what.file.name }] }
      : { content: what.content, allowed_mentions: { parse: [] as string[] } };
    const files = "file" in what ? [{ name: what.file.name, data: what.file.bytes, contentType: what.file.mime }] : undefined;
    const options = { body, auth: false, ...(files ? { files } : {}), ...(signal ? { signal } : {}) };
    const sent = (original
      ? await this.rest.patch(Routes.webhookMessage(appId, token, "@original"), options)
      : await this.rest.post(Routes.webhook(appId, token), options)) as { id: string };
    return sent.id;
  }

  /** Deletes the deferred message (a run that ended without a reply leaves no "thinking…"). */
  async deleteInteractionOriginal(appId: string, token: string): Promise<void> {
    await this.rest.delete(Routes.webhookMessage(appId, token, "@original"), { auth: false });
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
