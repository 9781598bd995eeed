/**
 * Files between Telegram and the media store.
 *  - in: `getFile` (file id -> file_path), then GET `<apiRoot>/file/bot<token>/<file_path>`,
 *    capped at media.maxFileMb (the announced size is checked first: a larger file is not
 *    downloaded and its attachment carries `error`). The token is only in that URL: errors that
 *    reach the attachment or the logs are scrubbed of it.
 *  - out: one attachment per part: images with sendPhoto (at most 10 MB, else as a document),
 *    OGG/Opus audio (a voice reply) with sendVoice as a voice note, MP3/M4A with sendAudio, MP4
 *    with sendVideo, anything else with sendDocument, uploaded as multipart/form-data with the
 *    file's name, into the chat/topic of the conversation. A file Telegram refuses as a
 *    photo/voice/audio/video (400) goes again as a document. A file that cannot
 *    be loaded (expired, too large) or is above the Bot API's 50 MB upload limit is replaced by
 *    a text line saying so; a store that is down throws a retryable DeliveryError.
 */
import { GrammyError, InputFile, type Api } from "grammy";
import { LurkError, type Attachment } from "../../shared/contract/index.js";
import {
  attachmentFallbackText, downloadCapped, outboundFileOrFallback, storeInboundFile, type OutboundFile,
} from "../../shared/runtime/channel/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { formatBytes, type MediaStore } from "../../shared/runtime/media.js";
import type { TgFile, TgTarget } from "./inbound.js";
import { extra, sendText, tgSignal, toDeliveryError, type SendOptions } from "./send.js";

const MB = 1024 * 1024;
/** the Bot API's limits: uploads (multipart) and photos */
const UPLOAD_MAX_BYTES = 50 * MB;
const PHOTO_MAX_BYTES = 10 * MB;
const PHOTO_MIMES = new Set(["image/jpeg", "image/png", "image/webp", "image/gif"]);

export interface BotAccess {
  api: Api;
  apiRoot: string;
  token: string;
}

/**
 * Downloads a message's files into the media store, in order; a failed file gets `error`, but a
 * store that is down throws, so the update is not confirmed and comes again (poller.ts).
 */
export async function storeMessageFiles(media: MediaStore, bot: BotAccess, files: TgFile[], log: Logger): Promise<Attachment[]> {
  const attachments: Attachment[] = [];
  for (const file of files) {
    const announced = { ...(file.kind ? { kind: file.kind } : {}), mime: file.mime, name: file.name, size: file.size };
    attachments.push(await storeInboundFile(media, announced, (maxBytes, signal) => withoutToken(bot.token, () => download(bot, file.fileId, maxBytes, signal)), log, { retryUnavailable: true }));
  }
  return attachments;
}

async function download(bot: BotAccess, fileId: string, maxBytes: number, signal: AbortSignal) {
  const info = await bot.api.getFile(fileId, tgSignal(signal));
  if (!info.file_path) throw new Error("Telegram gave no file path for it");
  if (info.file_size !== undefined && info.file_size > maxBytes) {
    throw new LurkError("LIMIT_EXCEEDED", `not downloaded: ${formatBytes(info.file_size)} is above the ${formatBytes(maxBytes)} cap (media.maxFileMb)`);
  }
  const path = info.file_path.split("/").map(encodeURIComponent).join("/");
  return downloadCapped(`${bot.apiRoot.replace(/\/+$/, "")}/file/bot${bot.token}/${path}`, { maxBytes, signal });
}

/** Runs `fn`; an error it throws comes out with `token` replaced, and without its cause. */
async function withoutToken<T>(token: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (LurkError.is(err) && !err.message.includes(token)) throw err;
    throw new Error(((err as Error)?.message ?? String(err)).split(token).join("[token]"));
  }
}

/** Sends one attachment part; returns the Telegram message id (of the file, or of the text sent instead). */
export async function sendAttachment(api: Api, media: MediaStore, log: Logger, target: TgTarget, a: Attachment, opts: SendOptions, signal?: AbortSignal): Promise<number> {
  const loaded = await outboundFileOrFallback(media, a, log);
  if ("fallback" in loaded) return sendText(api, target, loaded.fallback, { ...opts, plain: true }, signal);
  const { file } = loaded;
  if (file.bytes.byteLength > UPLOAD_MAX_BYTES) {
    return sendText(api, target, attachmentFallbackText(a, `${formatBytes(file.bytes.byteLength)} is above Telegram's ${formatBytes(UPLOAD_MAX_BYTES)} upload limit`), { ...opts, plain: true }, signal);
  }
  const method = methodFor(file);
  try {
    return await upload(api, method, target, file, opts, signal);
  } catch (err) {
    if (method === "sendDocument" || !(err instanceof GrammyError) || err.error_code !== 400) throw toDeliveryError(err);
  }
  try {
    return await upload(api, "sendDocument", target, file, opts, signal);
  } catch (err) {
    throw toDeliveryError(err);
  }
}

type UploadMethod = "sendPhoto" | "sendVoice" | "sendAudio" | "sendVideo" | "sendDocument";
/** what Telegram shows as a voice note: OGG with Opus (the other types go as audio files) */
const VOICE_MIMES = new Set(["audio/ogg", "audio/opus"]);

function methodFor(file: OutboundFile): UploadMethod {
  if (file.kind === "image" && PHOTO_MIMES.has(file.mime) && file.bytes.byteLength <= PHOTO_MAX_BYTES) return "sendPhoto";
  if (file.kind === "audio" && VOICE_MIMES.has(file.mime)) return "sendVoice";
  if (file.kind === "audio" && (file.mime === "audio/mpeg" || file.mime === "audio/mp4")) return "sendAudio";
  if (file.kind === "video" && file.mime === "video/mp4") return "sendVideo";
  return "sendDocument";
}

async function upload(api: Api, method: UploadMethod, target: TgTarget, file: OutboundFile, opts: SendOptions, signal?: AbortSignal): Promise<number> {
  // grammy writes the name into a multipart header: no line breaks or quotes
  const input = new InputFile(file.bytes, file.name.replace(/[\r\n"]+/g, " ").trim() || "file");
  const other = extra(target, opts);
  const s = tgSignal(signal);
  switch (method) {
    case "sendPhoto": return (await api.sendPhoto(target.chatId, input, other, s)).message_id;
    case "sendVoice": return (await api.sendVoice(target.chatId, input, other, s)).message_id;
    case "sendAudio": return (await api.sendAudio(target.chatId, input, other, s)).message_id;
    case "sendVideo": return (await api.sendVideo(target.chatId, input, other, s)).message_id;
    case "sendDocument": return (await api.sendDocument(target.chatId, input, other, s)).message_id;
  }
}
