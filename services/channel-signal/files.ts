/**
 * Files between Signal and the media store.
 *  - in: signal-cli downloads a message's attachments itself; `getAttachment { id }` returns one's
 *    bytes as base64 (`{ data }`). Each is stored before the message is published, under
 *    media.maxFileMb: a size signal-cli announced above it is not fetched, the answer is read
 *    as it streams and dropped once it passes the base64 length of the cap (an announced size
 *    may be missing or wrong), and the decoded size is checked before decoding. A failed file arrives with `error` (the agent can say so); a media
 *    store that is down throws, so the event is received again (events.ts).
 *  - out: one attachment per part, as a data URI (`data:<mime>;filename=<name>;base64,...`, which
 *    `send` takes like a file path), up to Signal's 100 MB; a file the store cannot give for good
 *    (expired, too large) or a larger one is sent as a text line saying so.
 */
import { LurkError, type Attachment } from "../../shared/contract/index.js";
import { attachmentFallbackText, decodeBase64Capped, outboundFileOrFallback, storeInboundFile, type OutboundFile } from "../../shared/runtime/channel/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { formatBytes, type MediaStore } from "../../shared/runtime/media.js";
import type { PendingFile } from "./inbound.js";
import { SignalHttpError, type SignalRpc } from "./rpc.js";

/** Signal's attachment limit */
export const SIGNAL_MAX_ATTACHMENT_BYTES = 100 * 1024 * 1024;

/** The longest getAttachment answer for a file of `maxBytes`: its base64, and room for the JSON-RPC frame. */
export const base64AnswerBytes = (maxBytes: number) => Math.ceil(maxBytes / 3) * 4 + 4096;

/** Fetches and stores a message's files in order (a file that fails gets `error`). */
export async function storeMessageFiles(media: MediaStore, rpc: SignalRpc, files: PendingFile[], log: Logger): Promise<Attachment[]> {
  const out: Attachment[] = [];
  for (const f of files) {
    out.push(await storeInboundFile(media, { mime: f.mime, name: f.name, size: f.size }, async (maxBytes, signal) => {
      let got: { data?: unknown };
      try {
        got = await rpc.call<{ data?: unknown }>("getAttachment", { id: f.id }, signal, base64AnswerBytes(maxBytes));
      } catch (err) {
        if (err instanceof SignalHttpError && err.tooLarge) throw new LurkError("LIMIT_EXCEEDED", `not stored: the file is above the ${formatBytes(maxBytes)} cap (media.maxFileMb)`);
        throw err;
      }
      if (typeof got?.data !== "string") throw new Error("signal-cli returned no attachment data");
      const decoded = decodeBase64Capped(got.data, maxBytes);
      if ("bytes" in decoded) return { bytes: decoded.bytes };
      if (decoded.problem === "too_large") throw new LurkError("LIMIT_EXCEEDED", `not stored: ${formatBytes(decoded.size)} is above the ${formatBytes(maxBytes)} cap (media.maxFileMb)`);
      throw new Error(`signal-cli returned ${decoded.problem === "empty" ? "an empty file" : "malformed base64"}`);
    }, log, { retryUnavailable: true }));
  }
  return out;
}

/** `data:<mime>;filename=<name>;base64,<bytes>` (RFC 2397 with signal-cli's filename parameter). */
export function dataUri(file: OutboundFile): string {
  const mime = /^[\w.+-]+\/[\w.+-]+$/.test(file.mime) ? file.mime : "application/octet-stream";
  const name = encodeURIComponent(file.name.replace(/[\r\n]+/g, " ").trim() || "file");
  return `data:${mime};filename=${name};base64,${Buffer.from(file.bytes.buffer, file.bytes.byteOffset, file.bytes.byteLength).toString("base64")}`;
}

/** The data URI of an attachment part, or the text to send instead. */
export async function outboundAttachment(media: MediaStore, a: Attachment, log: Logger): Promise<{ uri: string } | { text: string }> {
  const loaded = await outboundFileOrFallback(media, a, log);
  if ("fallback" in loaded) return { text: loaded.fallback };
  if (loaded.file.bytes.byteLength > SIGNAL_MAX_ATTACHMENT_BYTES) {
    return { text: attachmentFallbackText(a, `${formatBytes(loaded.file.bytes.byteLength)} is above Signal's ${formatBytes(SIGNAL_MAX_ATTACHMENT_BYTES)} limit`) };
  }
  return { uri: dataUri(loaded.file) };
}
