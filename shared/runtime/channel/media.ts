/**
 * Files between a platform and the media store (shared/runtime/media.ts), for channel adapters.
 *  - inbound: `storeInboundFile` downloads what a user sent (through the adapter's own fetch,
 *    with the platform's auth) into the store; the attachment carries the ref, or, when the file
 *    is too large or the download failed, `error` saying why, so the agent can tell the user.
 *  - outbound: `loadOutboundFile` reads an attachment the agent sent, for the adapter's upload.
 */
import type { Attachment } from "../../contract/index.js";
import { LurkError } from "../../contract/index.js";
import type { Logger } from "../logger.js";
import { DeliveryError } from "./delivery.js";
import { readBodyCapped } from "../http-capped.js";
import { attachmentKind, fallbackFileName, formatBytes, type MediaStore } from "../media.js";

export interface PlatformFile {
  kind?: Attachment["kind"];
  mime?: string | undefined;
  name?: string | undefined;
  /** the size the platform announced, if any (a larger file is not downloaded) */
  size?: number | undefined;
}

export type FetchFile = (maxBytes: number, signal: AbortSignal) => Promise<{ bytes: Uint8Array; mime?: string | undefined }>;

const DOWNLOAD_TIMEOUT_MS = 60_000;

/**
 * `retryUnavailable`: a media store that is down (a retryable UNAVAILABLE) throws instead of
 * giving the attachment an `error`, for a platform that redelivers the message when its handler
 * fails (Telegram's updates are confirmed only after it), so the file is not lost.
 */
export async function storeInboundFile(media: MediaStore, file: PlatformFile, fetchFile: FetchFile, log: Logger, opts: { retryUnavailable?: boolean } = {}): Promise<Attachment> {
  const mime = file.mime || "application/octet-stream";
  const base: Attachment = { kind: file.kind ?? attachmentKind(mime), mime, ...(file.name ? { name: file.name.slice(0, 500) } : {}), ...(file.size !== undefined ? { size: file.size } : {}) };
  const max = media.maxFileBytes;
  if (file.size !== undefined && file.size > max) return { ...base, error: `not downloaded: ${formatBytes(file.size)} is above the ${formatBytes(max)} cap (media.maxFileMb)` };
  try {
    const got = await fetchFile(max, AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS));
    const finalMime = file.mime || got.mime || "application/octet-stream";
    const stored = await media.put(got.bytes, { mime: finalMime, name: file.name });
    return { ...base, mime: finalMime, kind: file.kind ?? attachmentKind(finalMime), size: stored.size, ref: stored.ref };
  } catch (err) {
    if (opts.retryUnavailable && LurkError.is(err) && err.code === "UNAVAILABLE") throw err;
    const reason = LurkError.is(err) ? err.message : `the download failed: ${(err as Error).message}`;
    log.warn({ err, file: base.name, mime }, "an inbound file could not be stored");
    return { ...base, error: reason.slice(0, 500) };
  }
}

/** GET `url` into memory, refusing more than `maxBytes` (by Content-Length, then while reading). */
export async function downloadCapped(url: string, opts: { maxBytes: number; signal?: AbortSignal; headers?: Record<string, string>; fetchImpl?: typeof fetch }): Promise<{ bytes: Uint8Array; mime?: string }> {
  const res = await (opts.fetchImpl ?? fetch)(url, { ...(opts.headers ? { headers: opts.headers } : {}), ...(opts.signal ? { signal: opts.signal } : {}), redirect: "follow" });
  return cappedDownload(res, opts.maxBytes);
}

/** A platform file server's answer `res` read whole, at most `maxBytes` (media.maxFileMb), with its MIME type. */
export async function cappedDownload(res: Response, maxBytes: number): Promise<{ bytes: Uint8Array; mime?: string }> {
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`HTTP ${res.status} from the platform's file server`);
  }
  const got = await readBodyCapped(res, maxBytes);
  if ("tooLarge" in got) {
    throw new LurkError("LIMIT_EXCEEDED", got.declared
      ? `not downloaded: ${formatBytes(got.size)} is above the ${formatBytes(maxBytes)} cap (media.maxFileMb)`
      : `not downloaded: the file is above the ${formatBytes(maxBytes)} cap (media.maxFileMb)`);
  }
  const mime = res.headers.get("content-type")?.split(";")[0]?.trim();
  return { bytes: got.bytes, ...(mime ? { mime } : {}) };
}

export interface OutboundFile {
  bytes: Uint8Array;
  name: string;
  mime: string;
  kind: Attachment["kind"];
}

/** The bytes of an attachment the agent sent (by ref; inline `dataBase64` also works). */
export async function loadOutboundFile(media: MediaStore, a: Attachment): Promise<OutboundFile> {
  if (a.ref) {
    const got = await media.get(a.ref);
    return { bytes: got.bytes, mime: a.mime || got.mime, kind: a.kind, name: a.name ?? got.name ?? fallbackFileName(a.ref, a.mime || got.mime) };
  }
  if (a.dataBase64) {
    const bytes = Buffer.from(a.dataBase64, "base64");
    return { bytes, mime: a.mime, kind: a.kind, name: a.name ?? fallbackFileName("attachment", a.mime) };
  }
  throw new LurkError("VALIDATION_FAILED", `attachment ${a.name ?? a.kind} has neither a media ref nor inline data`);
}

export type Base64Result = { bytes: Buffer } | { problem: "malformed" | "empty" } | { problem: "too_large"; size: number };

/** Strict standard base64 (padded; whitespace ignored); the decoded size is checked against `maxBytes` before decoding. */
export function decodeBase64Capped(text: string, maxBytes: number): Base64Result {
  const clean = text.replace(/\s+/g, "");
  const pad = clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0;
  const firstPad = clean.indexOf("=");
  if (clean.length % 4 !== 0 || /[^A-Za-z0-9+/=]/.test(clean) || (firstPad !== -1 && firstPad < clean.length - pad)) return { problem: "malformed" };
  const size = (clean.length / 4) * 3 - pad;
  if (size === 0) return { problem: "empty" };
  if (size > maxBytes) return { problem: "too_large", size };
  return { bytes: Buffer.from(clean, "base64") };
}

/**
 * An attachment part's file, or the line to send in its place when it cannot be loaded for good
 * (expired, invalid: a non-retryable LurkError, logged); a store that is down throws a retryable
 * DeliveryError, so the kit delivers the part again later.
 */
export async function outboundFileOrFallback(media: MediaStore, a: Attachment, log: Logger): Promise<{ file: OutboundFile } | { fallback: string }> {
  try {
    return { file: await loadOutboundFile(media, a) };
  } catch (err) {
    if (LurkError.is(err) && !err.retryable) {
      log.warn({ err, file: a.name, ref: a.ref }, "an outbound file cannot be loaded; a line saying so is sent instead");
      return { fallback: attachmentFallbackText(a, err.message) };
    }
    throw new DeliveryError(`the file could not be read from the media store: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
}

/** A line for an attachment a platform cannot take (or that failed), sent in the text instead. */
export function attachmentFallbackText(a: Attachment, why: string): string {
  return `[${a.kind}: ${a.name ?? a.mime} could not be sent: ${why}]`;
}
