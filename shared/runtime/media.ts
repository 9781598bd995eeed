/**
 * The media store: files on the bus by reference. A JetStream object store (`lurk_media`,
 * created by streams.ts) holds each file once under its SHA-256 (mediaRefSchema); attachments
 * carry the ref, the name, the MIME type and the size, never the bytes.
 *  - channels `put` what users send and `get` what the agent sends (shared/runtime/channel/media.ts);
 *  - the agent-runner `get`s a transcript's images for each LLM call;
 *  - the tools actor `get`s for media_save and `put`s for the message tool's files.
 * Errors are LurkErrors: LIMIT_EXCEEDED (file above media.maxFileMb, store full), NOT_FOUND
 * (never stored, or expired after media.retentionDays), UNAVAILABLE (no bucket, bus down).
 */
import { createHash } from "node:crypto";
import type { ObjectStore } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { LurkError, MEDIA_BUCKET, mediaRefSchema, type Attachment } from "../contract/index.js";
import { MB, type MediaConfig } from "./config-media.js";

export interface StoredMedia {
  ref: string;
  mime: string;
  name?: string;
  size: number;
}

/** Objects go in chunks below the bus's payload cap. */
const CHUNK_BYTES = 128 * 1024;

export class MediaStore {
  private store: Promise<ObjectStore> | undefined;

  constructor(private readonly nc: NatsConnection, readonly config: MediaConfig) {}

  get maxFileBytes(): number {
    return Math.floor(this.config.maxFileMb * MB);
  }

  /** Stores `bytes` (once per content) and returns its ref. */
  async put(bytes: Uint8Array, meta: { mime: string; name?: string | undefined }): Promise<StoredMedia> {
    if (bytes.byteLength > this.maxFileBytes) throw tooLarge(bytes.byteLength, this.maxFileBytes, meta.name);
    const ref = sha256Hex(bytes);
    const stored: StoredMedia = { ref, mime: meta.mime, size: bytes.byteLength, ...(meta.name ? { name: meta.name } : {}) };
    const store = await this.open();
    const existing = await store.info(ref).catch(() => null);
    if (existing && !existing.deleted && existing.size === bytes.byteLength) return stored;
    try {
      const metadata: Record<string, string> = { mime: meta.mime };
      if (meta.name) metadata.name = meta.name.slice(0, 500);
      await store.putBlob({ name: ref, metadata, options: { max_chunk_size: CHUNK_BYTES } }, bytes);
    } catch (err) {
      const text = (err as Error).message ?? String(err);
      if (/maximum bytes|insufficient resources|storage|resources exceeded/i.test(text)) {
        throw new LurkError("LIMIT_EXCEEDED", "the media store is full: raise media.storeMb (applied at the next `lurkbot start` or `lurkbot streams`) or wait for old files to expire (media.retentionDays)", { cause: err });
      }
      throw new LurkError("UNAVAILABLE", `the file could not be stored in the media store: ${text}`, { cause: err, retryable: true });
    }
    return stored;
  }

  /** The file behind `ref`, at most `maxBytes` (default media.maxFileMb). */
  async get(ref: string, maxBytes = this.maxFileBytes): Promise<StoredMedia & { bytes: Uint8Array }> {
    if (!mediaRefSchema.safeParse(ref).success) throw new LurkError("VALIDATION_FAILED", `"${ref.slice(0, 80)}" is not a media ref (64 lowercase hex characters)`);
    const store = await this.open();
    const info = await store.info(ref).catch((err: unknown) => {
      throw new LurkError("UNAVAILABLE", `the media store could not be read: ${(err as Error).message}`, { cause: err, retryable: true });
    });
    if (!info || info.deleted) throw new LurkError("NOT_FOUND", `media ${ref.slice(0, 12)}… is not in the media store (never stored, or expired after media.retentionDays = ${this.config.retentionDays})`);
    if (info.size > maxBytes) throw tooLarge(info.size, maxBytes, info.metadata?.name);
    const bytes = await store.getBlob(ref).catch((err: unknown) => {
      throw new LurkError("UNAVAILABLE", `media ${ref.slice(0, 12)}… could not be read: ${(err as Error).message}`, { cause: err, retryable: true });
    });
    if (!bytes) throw new LurkError("NOT_FOUND", `media ${ref.slice(0, 12)}… is not in the media store`);
    const name = info.metadata?.name;
    return { ref, bytes, size: bytes.byteLength, mime: info.metadata?.mime ?? "application/octet-stream", ...(name ? { name } : {}) };
  }

  private open(): Promise<ObjectStore> {
    // loaded on first use: most actors never touch a file
    this.store ??= import("@nats-io/obj").then(({ Objm }) => new Objm(this.nc).open(MEDIA_BUCKET)).catch((err: unknown) => {
      this.store = undefined;
      throw new LurkError("UNAVAILABLE", `the media store (${MEDIA_BUCKET}) is not available: ${(err as Error).message}; start LurkBot with \`lurkbot start\` or run \`lurkbot setup\`, which create it`, { cause: err, retryable: true });
    });
    return this.store;
  }
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function tooLarge(size: number, max: number, name?: string): LurkError {
  return new LurkError("LIMIT_EXCEEDED", `${name ? `"${name}"` : "the file"} is ${formatBytes(size)}, above the ${formatBytes(max)} cap (media.maxFileMb)`);
}

export function formatBytes(n: number): string {
  if (n >= MB) return `${(n / MB).toFixed(1)} MB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${n} bytes`;
}

/** The attachment kind of a MIME type. */
export function attachmentKind(mime: string): Attachment["kind"] {
  const top = mime.split("/")[0];
  return top === "image" || top === "audio" || top === "video" ? top : "file";
}

const MIME_BY_EXTENSION: Record<string, string> = {
  png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp", svg: "image/svg+xml",
  mp3: "audio/mpeg", ogg: "audio/ogg", oga: "audio/ogg", wav: "audio/wav", m4a: "audio/mp4",
  mp4: "video/mp4", webm: "video/webm", mov: "video/quicktime",
  pdf: "application/pdf", zip: "application/zip", gz: "application/gzip", tar: "application/x-tar",
  json: "application/json", csv: "text/csv", txt: "text/plain", md: "text/markdown", html: "text/html", xml: "application/xml",
  doc: "application/msword", docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xls: "application/vnd.ms-excel", xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ppt: "application/vnd.ms-powerpoint", pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  odt: "application/vnd.oasis.opendocument.text", ods: "application/vnd.oasis.opendocument.spreadsheet", odp: "application/vnd.oasis.opendocument.presentation",
};

/** A MIME type guessed from a file name's extension (application/octet-stream when unknown). */
export function mimeFromName(name: string): string {
  const ext = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase();
  return (ext && MIME_BY_EXTENSION[ext]) || "application/octet-stream";
}

/** A file name for a ref when the attachment has none: `<12 hex>.<ext>` from its MIME type. */
export function fallbackFileName(ref: string, mime: string): string {
  const ext = Object.entries(MIME_BY_EXTENSION).find(([, m]) => m === mime)?.[0] ?? "bin";
  return `${ref.slice(0, 12)}.${ext}`;
}
