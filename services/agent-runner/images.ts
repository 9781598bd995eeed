/**
 * Images by media ref -> bytes for one LLM call. Transcripts keep an image as its media-store ref
 * (shared/runtime/media.ts); before each call the blocks that have a ref and no bytes get them.
 * An image above media.maxImageMb or media.imageMaxPx is scaled down to fit (image-fit.ts); the
 * block's MIME type becomes what the bytes sent are. An image the store no longer has, or one that cannot
 * be scaled, becomes a text note, so the call still goes out. Loaded images are cached by ref (the
 * bytes as sent, up to CACHE_BYTES of base64) for the next turns of the run; `clear()` drops them
 * when the actor idles.
 */
import { LurkError, type LlmMessage } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { formatBytes, type MediaStore } from "../../shared/runtime/media.js";
import { MB } from "../../shared/runtime/config-media.js";
import { fitImage } from "./image-fit.js";

const CACHE_BYTES = 32 * MB;

type Loaded = { dataBase64: string; mime: string } | { note: string };

export class ImageLoader {
  private readonly cache = new Map<string, Loaded>();
  private cachedBytes = 0;

  constructor(private readonly media: Pick<MediaStore, "get" | "config">, private readonly log: Logger) {}

  /** `messages` with each ref-only image filled in (the same array when there is none). */
  async resolve(messages: LlmMessage[]): Promise<LlmMessage[]> {
    const refs = new Set<string>();
    for (const m of messages) {
      if (m.role === "tool_result") continue;
      for (const b of m.content) if (b.type === "image" && b.ref && !b.dataBase64) refs.add(b.ref);
    }
    if (refs.size === 0) return messages;
    const loaded = new Map<string, Loaded>();
    await Promise.all([...refs].map(async (ref) => loaded.set(ref, await this.load(ref))));
    return messages.map((m) => {
      if (m.role === "tool_result" || !m.content.some((b) => b.type === "image" && b.ref && !b.dataBase64)) return m;
      const content = m.content.map((b) => {
        if (b.type !== "image" || !b.ref || b.dataBase64) return b;
        const got = loaded.get(b.ref)!;
        return "dataBase64" in got ? { ...b, dataBase64: got.dataBase64, mime: got.mime } : { type: "text" as const, text: got.note };
      });
      return { ...m, content } as LlmMessage;
    });
  }

  clear(): number {
    const n = this.cache.size;
    this.cache.clear();
    this.cachedBytes = 0;
    return n;
  }

  private async load(ref: string): Promise<Loaded> {
    const cached = this.cache.get(ref);
    if (cached) return cached;
    const result = await this.read(ref);
    this.remember(ref, result);
    return result;
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

  private remember(ref: string, value: Loaded): void {
    const size = "dataBase64" in value ? value.dataBase64.length : 0;
    if (size > CACHE_BYTES) return;
    while (this.cachedBytes + size > CACHE_BYTES && this.cache.size > 0) {
      const [oldest, old] = this.cache.entries().next().value as [string, Loaded];
      this.cache.delete(oldest);
      this.cachedBytes -= "dataBase64" in old ? old.dataBase64.length : 0;
    }
    this.cache.set(ref, value);
    this.cachedBytes += size;
  }
}
