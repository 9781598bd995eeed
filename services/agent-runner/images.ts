/**
 * Images and PDFs by media ref -> bytes for one LLM call. Transcripts keep an image (and a scanned
 * PDF's document block, pdf-input.ts) as its media-store ref (shared/runtime/media.ts); before
 * each call the blocks that have a ref and no bytes get them.
 * An image above media.maxImageMb or media.imageMaxPx is scaled down to fit (image-fit.ts); the
 * block's MIME type becomes what the bytes sent are. An image the store no longer has, or one that cannot
 * be scaled, becomes a text note, so the call still goes out. A PDF is sent byte for byte up to
 * media.maxFileMb and PDF_MAX_BYTES; one above, or gone from the store, becomes its "no
 * extractable text" note. Documents are loaded only with `{ documents: true }` (some model of the
 * run takes PDFs); without it they are left for pdfInputFor() to make notes. Loaded media are
 * cached by ref (ref-cache.ts, up to CACHE_BYTES of base64) for the next turns of the run;
 * `clear()` drops them when the actor idles.
 */
import { LurkError, type LlmMessage } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { formatBytes, type MediaStore } from "../../shared/runtime/media.js";
import { MB } from "../../shared/runtime/config-media.js";
import { fitImage } from "./image-fit.js";
import { PDF_MAX_BYTES, pdfFallbackNote, type DocumentBlock } from "./pdf-input.js";
import { RefCache, type LoadedMedia as Loaded } from "./ref-cache.js";

const CACHE_BYTES = 32 * MB;

type Pending = { type: "image" | "document"; ref: string };
const pending = (b: { type: string; ref?: string | undefined; dataBase64?: string | undefined }, documents: boolean): b is Pending =>
  !!b.ref && !b.dataBase64 && (b.type === "image" || (documents && b.type === "document"));

export class ImageLoader {
  private readonly cache = new RefCache(CACHE_BYTES);

  constructor(private readonly media: Pick<MediaStore, "get" | "config">, private readonly log: Logger) {}

  /** `messages` with each ref-only image (and document, with `documents`) filled in (the same array when there is none). */
  async resolve(messages: LlmMessage[], opts: { documents?: boolean } = {}): Promise<LlmMessage[]> {
    const documents = opts.documents ?? false;
    const wanted = new Map<string, Pending>();
    for (const m of messages) {
      if (m.role === "tool_result") continue;
      for (const b of m.content) if (pending(b, documents)) wanted.set(`${b.type}:${b.ref}`, b);
    }
    if (wanted.size === 0) return messages;
    const loaded = new Map<string, Loaded>();
    await Promise.all([...wanted].map(async ([key, b]) => loaded.set(key, await this.load(key, b))));
    return messages.map((m) => {
      if (m.role === "tool_result" || !m.content.some((b) => pending(b, documents))) return m;
      const content = m.content.map((b) => {
        if (!pending(b, documents)) return b;
        const { type, ref } = b as Pending;
        const got = loaded.get(`${type}:${ref}`)!;
        if (!("dataBase64" in got)) return { type: "text" as const, text: got.note };
        // a scaled image's type is its new bytes'; a PDF stays application/pdf
        return type === "image" ? { ...b, dataBase64: got.dataBase64, mime: got.mime } : { ...b, dataBase64: got.dataBase64 };
      });
      return { ...m, content } as LlmMessage;
    });
  }

  clear(): number {
    return this.cache.clear();
  }

  private async load(key: string, block: Pending): Promise<Loaded> {
    const cached = this.cache.get(key);
    if (cached) return cached;
    const result = block.type === "image" ? await this.read(block.ref) : await this.readPdf(block as DocumentBlock);
    this.cache.set(key, result);
    return result;
  }

  /** A PDF's bytes as they are (within media.maxFileMb and PDF_MAX_BYTES), else its note. */
  private async readPdf(block: DocumentBlock): Promise<Loaded> {
    const maxBytes = Math.min(Math.floor(this.media.config.maxFileMb * MB), PDF_MAX_BYTES);
    try {
      const { bytes } = await this.media.get(block.ref, maxBytes);
      return { dataBase64: Buffer.from(bytes).toString("base64"), mime: block.mime };
    } catch (err) {
      const e = LurkError.from(err);
      if (e.code === "UNAVAILABLE") throw e;
      this.log.warn({ ref: block.ref, code: e.code }, "a PDF of the conversation cannot be sent to the model");
      return { note: pdfFallbackNote(block) };
    }
  }

  private async read(ref: string): Promise<Loaded> {
    const { maxFileMb, maxImageMb, imageMaxPx } = this.media.config;
    // the store took the file up to media.maxFileMb; scaling brings it under media.maxImageMb
    const maxFileBytes = Math.floor(maxFileMb * MB);
    let stored: Uint8Array;
    try {
      stored = (await this.media.get(ref, maxFileBytes)).bytes;
    } catch (err) {
      const e = LurkError.from(err);
      // the bus or the store being down is worth a retry of the run, not a note
      if (e.code === "UNAVAILABLE") throw e;
      this.log.warn({ ref, code: e.code }, "an image of the conversation cannot be sent to the model");
      return { note: e.code === "LIMIT_EXCEEDED" ? `[image not shown to you: it is larger than media.maxFileMb (${formatBytes(maxFileBytes)})]` : `[image no longer available: ${e.message}]` };
    }
    try {
      const fitted = await fitImage(stored, { maxBytes: Math.floor(maxImageMb * MB), maxPx: imageMaxPx });
      if (fitted.resized) this.log.info({ ref, from: stored.byteLength, to: fitted.bytes.byteLength, width: fitted.width, height: fitted.height }, "image scaled down for the model");
      return { dataBase64: Buffer.from(fitted.bytes).toString("base64"), mime: fitted.mime };
    } catch (err) {
      const why = (err as Error).message;
      this.log.warn({ ref, reason: why }, "an image of the conversation could not be scaled down for the model");
      return { note: `[image not shown to you: it could not be fitted to media.maxImageMb (${formatBytes(Math.floor(maxImageMb * MB))}) and media.imageMaxPx (${imageMaxPx} px): ${why}]` };
    }
  }
}
