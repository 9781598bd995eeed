/**
 * Files between WhatsApp and the media store.
 *  - in: each media id of a message: GET `/<media id>` (url, type, size), then the url with the
 *    token (graph.ts), stored before the message is published, under media.maxFileMb (a size the
 *    Cloud API announces above it is not fetched; the download is cut at the cap). A failed file
 *    arrives with `error` (the agent can say so); a media store that is down throws, so the
 *    webhook answers 500 and Meta delivers it again.
 *  - out: one attachment per part: uploaded (POST `/<phoneNumberId>/media`), then sent as a
 *    message of its type with the media id: `image` (JPEG/PNG up to 5 MB), `audio` (AAC, AMR,
 *    MP3, M4A; OGG/Opus, a voice reply, goes with `voice: true` as a voice message; up to 16 MB), `video` (MP4, 3GPP up
 *    to 16 MB), else `document` (with its file name, up to 100 MB). A file WhatsApp refuses as
 *    its type goes again as a document; one that cannot be loaded, or above 100 MB, is a text line.
 */
import type { Attachment } from "../../shared/contract/index.js";
import { attachmentFallbackText, outboundFileOrFallback, storeInboundFile, type OutboundFile } from "../../shared/runtime/channel/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { formatBytes, type MediaStore } from "../../shared/runtime/media.js";
import { checkAnnouncedSize, GraphError, toDeliveryError, type GraphApi } from "./graph.js";
import type { PendingFile } from "./inbound.js";

const MB = 1024 * 1024;

/** Downloads a message's files into the media store, in order (a file that fails gets `error`). */
export async function storeMessageFiles(media: MediaStore, api: GraphApi, files: PendingFile[], log: Logger): Promise<Attachment[]> {
  const out: Attachment[] = [];
  for (const f of files) {
    out.push(await storeInboundFile(media, { kind: f.kind, mime: f.mime, name: f.name }, async (maxBytes, signal) => {
      const info = await api.mediaInfo(f.mediaId, signal);
      checkAnnouncedSize(info.size, maxBytes);
      return api.download(info.url, maxBytes, signal);
    }, log, { retryUnavailable: true }));
  }
  return out;
}

type MessageType = "image" | "audio" | "video" | "document";

const TYPES: { type: MessageType; mimes: Set<string>; max: number }[] = [
  { type: "image", mimes: new Set(["image/jpeg", "image/png"]), max: 5 * MB },
  { type: "audio", mimes: new Set(["audio/aac", "audio/amr", "audio/mpeg", "audio/mp4", "audio/ogg", "audio/opus"]), max: 16 * MB },
  { type: "video", mimes: new Set(["video/mp4", "video/3gpp"]), max: 16 * MB },
];
export const DOCUMENT_MAX_BYTES = 100 * MB;
const VOICE_MIMES = new Set(["audio/ogg", "audio/opus"]);

/** The message type a file goes as. */
export function messageTypeOf(file: OutboundFile): MessageType {
  const mime = file.mime.split(";")[0]!.trim().toLowerCase();
  return TYPES.find((t) => t.mimes.has(mime) && file.bytes.byteLength <= t.max)?.type ?? "document";
}

/** Sends one attachment part to `to`; returns the wamid (of the file, or of the text sent instead). */
export async function sendAttachment(
  api: GraphApi, media: MediaStore, log: Logger, to: string, a: Attachment,
  sendText: (text: string) => Promise<string>, context: Record<string, unknown>, signal?: AbortSignal,
): Promise<string> {
  const loaded = await outboundFileOrFallback(media, a, log);
  if ("fallback" in loaded) return sendText(loaded.fallback);
  const { file } = loaded;
  if (file.bytes.byteLength > DOCUMENT_MAX_BYTES) {
    return sendText(attachmentFallbackText(a, `${formatBytes(file.bytes.byteLength)} is above WhatsApp's ${formatBytes(DOCUMENT_MAX_BYTES)} limit`));
  }
  const type = messageTypeOf(file);
  try {
    return await upload(api, type, to, file, context, signal);
  } catch (err) {
    // a type WhatsApp would not take as itself (a codec, a size it counts differently): as a document
    if (type === "document" || !(err instanceof GraphError) || err.status !== 400) throw toDeliveryError(err);
    log.info({ type, mime: file.mime, error: err.message }, "WhatsApp refused the file as its type; sending it as a document");
  }
  try {
    return await upload(api, "document", to, file, context, signal);
  } catch (err) {
    throw toDeliveryError(err);
  }
}

async function upload(api: GraphApi, type: MessageType, to: string, file: OutboundFile, context: Record<string, unknown>, signal?: AbortSignal): Promise<string> {
  const mime = type === "document" ? (file.mime || "application/octet-stream") : file.mime.split(";")[0]!.trim().toLowerCase();
  const id = await api.upload(file, mime, signal);
  // OGG/Opus as a voice message (voice icon, auto download, the user's transcription); other audio as a basic audio file
  const object = type === "document" ? { id, filename: file.name } : type === "audio" && VOICE_MIMES.has(mime) ? { id, voice: true } : { id };
  return api.send(to, { type, [type]: object, ...context }, signal);
}
