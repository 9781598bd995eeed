/**
 * Files of the web chats, in the media store (shared/runtime/media.ts).
 *  - `POST /upload?name=<file name>` (bearer token; raw body; Content-Type = the file's type)
 *    stores a file of at most media.maxFileMb and answers `{ attachment: WebFile }`; a `send`
 *    frame then names it by ref. Over the cap: 413; empty: 400; store down: 503 (JSON errors).
 *  - `GET /media/<ref>` (bearer token) serves a file with its type, `Content-Disposition` with its
 *    name (inline only for the raster image types a page shows), nosniff and a sandboxing CSP;
 *    404 JSON when unknown or expired.
 * The channel remembers each ref it took in or delivered, per user (LMDB
 * `<dataDir>/channel-web/files`, key = the ref in the user's namespace, user-scope.ts; kept
 * media.retentionDays): a user's `send` frame may name only the files that user uploaded or got
 * in their chats (name, type and size come from this record, not from the browser), and
 * `GET /media/` serves a user only those; another user's file is "not found", like an unknown one.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { LurkError, mediaRefSchema, type Attachment } from "../../shared/contract/index.js";
import {
  ExpiringDb, outboundFileOrFallback, readBody, sendJson,
} from "../../shared/runtime/channel/index.js";
import { attachmentKind, formatBytes, mimeFromName, type MediaStore } from "../../shared/runtime/media.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { WebFile } from "./protocol.js";
import { scoped } from "./user-scope.js";
import type { WebUser } from "./users.js";

/** images the page shows inline (and the only types served `inline`) */
export const INLINE_IMAGE = /^image\/(png|jpeg|gif|webp)$/;
const MIME = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;
const DAY_MS = 86_400_000;

interface Known extends WebFile { at: number }

export class WebFiles extends ExpiringDb<Known> {
  constructor(path: string, retentionDays: number) {
    super(path, "files", { keepMs: retentionDays * DAY_MS, sweepEveryMs: 3_600_000, stampOf: (f) => f.at });
  }

  /** `user` may now send and download the file. */
  async remember(user: WebUser, file: WebFile): Promise<void> {
    await this.db.put(scoped(user, file.ref), { ...file, at: this.now() });
  }

  /** A file `user` uploaded or got in their chats (undefined for any other, and once forgotten). */
  known(user: WebUser, ref: string): WebFile | undefined {
    const f = this.get(scoped(user, ref));
    if (!f || this.expired(f)) return undefined;
    const { at: _at, ...file } = f;
    return file;
  }
}

/** The attachment of an inbound message for a file named in a `send` frame. */
export function toAttachment(f: WebFile): Attachment {
  return { kind: f.kind, mime: f.mime, name: f.name, size: f.size, ref: f.ref };
}

const fail = (res: ServerResponse, status: number, code: string, message: string) => sendJson(res, status, { error: { code, message } });

/** A file name from the query: its last path segment, control characters removed, at most 200 characters. */
function cleanName(raw: string | null): string {
  const name = (raw ?? "").split(/[\\/]/).pop()!.replace(/[\u0000-\u001f\u007f]/g, "").trim().slice(0, 200);
  return name || "file";
}

export async function handleUpload(req: IncomingMessage, res: ServerResponse, media: MediaStore, files: WebFiles, user: WebUser): Promise<void> {
  const name = cleanName(new URL(req.url ?? "/", "http://x").searchParams.get("name"));
  const declared = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  const mime = MIME.test(declared) && declared !== "application/octet-stream" ? declared : mimeFromName(name);
  const max = media.maxFileBytes;
  let bytes: Buffer;
  try {
    bytes = await readBody(req, max);
  } catch (err) {
    if (!(LurkError.is(err) && err.code === "PAYLOAD_TOO_LARGE")) throw err;
    const size = Number(req.headers["content-length"]);
    const what = Number.isFinite(size) && size > 0 ? `"${name}" is ${formatBytes(size)}` : `"${name}" is larger`;
    return fail(res, 413, "PAYLOAD_TOO_LARGE", `${what}, above the ${formatBytes(max)} cap (media.maxFileMb)`);
  }
  if (bytes.byteLength === 0) return fail(res, 400, "VALIDATION_FAILED", `"${name}" is empty`);
  try {
    const stored = await media.put(bytes, { mime, name });
    const file: WebFile = { ref: stored.ref, name, mime, size: stored.size, kind: attachmentKind(mime) };
    await files.remember(user, file);
    return sendJson(res, 200, { attachment: file });
  } catch (err) {
    const e = LurkError.from(err);
    return fail(res, e.code === "LIMIT_EXCEEDED" ? 507 : 503, e.code, e.message);
  }
}

export async function handleMedia(res: ServerResponse, ref: string, media: MediaStore, files: WebFiles, user: WebUser): Promise<void> {
  const file = mediaRefSchema.safeParse(ref).success ? files.known(user, ref) : undefined;
  if (!file) return fail(res, 404, "NOT_FOUND", "no such file in this chat");
  let got;
  try {
    got = await media.get(ref);
  } catch (err) {
    const e = LurkError.from(err);
    if (e.code === "NOT_FOUND") return fail(res, 404, "NOT_FOUND", e.message);
    return fail(res, e.retryable ? 503 : 500, e.code, e.message);
  }
  const mime = MIME.test(file.mime) ? file.mime : "application/octet-stream";
  res.writeHead(200, {
    "content-type": mime,
    "content-length": String(got.bytes.byteLength),
    "content-disposition": contentDisposition(INLINE_IMAGE.test(mime) ? "inline" : "attachment", file.name),
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox",
    "cache-control": "private, max-age=86400",
  });
  res.end(got.bytes);
}

/** RFC 6266: an ASCII fallback name and the exact one (RFC 5987). */
export function contentDisposition(type: "inline" | "attachment", name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, "_");
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${type}; filename="${ascii}"; filename*=UTF-8''${exact}`;
}

/**
 * An agent's file for a chat line of `user`: its bytes must be readable (stored by ref, or inline
 * bytes stored now). A file that cannot be (expired, invalid) becomes a fallback text line; a
 * store that is down is retried (DeliveryError).
 */
export async function outboundFile(media: MediaStore, files: WebFiles, user: WebUser, a: Attachment, log: Logger): Promise<{ file: WebFile } | { fallback: string }> {
  const result = await outboundFileOrFallback(media, a, log);
  if ("fallback" in result) return result;
  const loaded = result.file;
  const ref = a.ref ?? (await media.put(loaded.bytes, { mime: loaded.mime, name: loaded.name })).ref;
  const file: WebFile = { ref, name: loaded.name, mime: loaded.mime, size: loaded.bytes.byteLength, kind: loaded.kind };
  await files.remember(user, file);
  return { file };
}
