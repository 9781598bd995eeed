/**
 * Files through the webhook, by the media store (shared/runtime/media.ts).
 * In: a request attachment's `dataBase64` is decoded (standard base64, whitespace ignored),
 * capped by media.maxFileMb and stored; the inbound message carries its ref, never the bytes.
 * Bad base64 or an empty file: RequestFileError 400 `invalid_attachment`; above the cap: 413
 * `file_too_large`; the store full: 507, down: 503. `url` and `ref` attachments pass as given.
 * Out: an attachment part's callback carries the file with its bytes
 * (`{ kind, mime, name, size, ref, dataBase64 }`); a file that cannot be read any more (expired)
 * becomes a text callback saying so, a store that is down is retried.
 */
import { LurkError, type Attachment } from "../../shared/contract/index.js";
import { decodeBase64Capped, outboundFileOrFallback, type OutboundPart } from "../../shared/runtime/channel/index.js";
import { attachmentKind, formatBytes, mimeFromName, type MediaStore } from "../../shared/runtime/media.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { CallbackAttachment, RequestAttachment } from "./request.js";

export class RequestFileError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

/** The request's attachments as the bus carries them (files stored, refs in place of bytes). */
export async function storeRequestFiles(media: MediaStore, attachments: RequestAttachment[]): Promise<Attachment[]> {
  const out: Attachment[] = [];
  for (const [i, a] of attachments.entries()) {
    const label = a.name ? `"${a.name}"` : `attachments[${i}]`;
    const mime = a.mime || (a.name ? mimeFromName(a.name) : "application/octet-stream");
    const base: Attachment = { kind: a.kind ?? attachmentKind(mime), mime, ...(a.name ? { name: a.name } : {}) };
    if (a.dataBase64 === undefined) {
      out.push({ ...base, ...(a.url ? { url: a.url } : {}), ...(a.ref ? { ref: a.ref } : {}), ...(a.size !== undefined ? { size: a.size } : {}) });
      continue;
    }
    const bytes = decodeBase64(a.dataBase64, media.maxFileBytes, label);
    try {
      const stored = await media.put(bytes, { mime, name: a.name });
      out.push({ ...base, size: stored.size, ref: stored.ref });
    } catch (err) {
      const e = LurkError.from(err);
      throw new RequestFileError(e.code === "LIMIT_EXCEEDED" ? 507 : 503, e.code === "LIMIT_EXCEEDED" ? "storage_full" : "unavailable", `${label} could not be stored: ${e.message}`);
    }
  }
  return out;
}

function decodeBase64(text: string, maxBytes: number, label: string): Buffer {
  const decoded = decodeBase64Capped(text, maxBytes);
  if ("bytes" in decoded) return decoded.bytes;
  if (decoded.problem === "too_large") throw new RequestFileError(413, "file_too_large", `${label} is ${formatBytes(decoded.size)}, above the ${formatBytes(maxBytes)} cap (media.maxFileMb)`);
  throw new RequestFileError(400, "invalid_attachment", decoded.problem === "empty" ? `${label} is empty` : `${label}: dataBase64 is not valid base64 (standard alphabet, padded)`);
}

/** What a callback for `part` carries: its text, or its one file with the bytes. */
export async function callbackContent(media: MediaStore, part: OutboundPart, log: Logger): Promise<{ text: string; attachments: CallbackAttachment[] }> {
  const a = part.attachments[0];
  if (!a) return { text: part.text, attachments: [] };
  if (!a.ref && !a.dataBase64 && a.url) return { text: "", attachments: [{ kind: a.kind, mime: a.mime, url: a.url, ...(a.name ? { name: a.name } : {}) }] };
  const loaded = await outboundFileOrFallback(media, a, log);
  if ("fallback" in loaded) return { text: loaded.fallback, attachments: [] };
  const f = loaded.file;
  const file: CallbackAttachment = { kind: f.kind, mime: f.mime, name: f.name, size: f.bytes.byteLength, ...(a.ref ? { ref: a.ref } : {}), dataBase64: Buffer.from(f.bytes).toString("base64") };
  return { text: "", attachments: [file] };
}
