/**
 * Images for a run whose model has no vision (the registry knows it: vision-input.ts): their
 * text, read by OCR (media.ocr; shared/runtime/documents/ocr.ts), goes in the attachment's
 * `ocrText`, so the model gets "an image is here… text recognized in it by OCR:" and the text
 * instead of only being told an image is there (a screenshot of an error, a photographed note).
 * The image block keeps its ref: a model with vision later sees the image itself.
 *
 * Contract of `annotate(inputs, signal, ctx)`: only when `ctx.vision` is false; each image
 * attachment with a media ref, no `ocrText` and at most `maxFileBytes`, within the inline budget
 * (inline-budget.ts, at most `maxBytes` of text each). An image without text gets "" (the note
 * says OCR found none); one OCR cannot read, or OCR being off or missing, leaves the attachment
 * as it was (logged). It never throws.
 */
import { LurkError, type Attachment, type RunInput } from "../../shared/contract/index.js";
import { ocrImage, probeOcr } from "../../shared/runtime/documents/ocr.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { MediaStore } from "../../shared/runtime/media.js";
import type { DocumentOcrOptions, PrepareContext } from "./document-text.js";
import { cutText } from "./document-text.js";
import { inlineWithinBudget } from "./inline-budget.js";
import { MODEL_IMAGE_TYPES } from "./transcript.js";

const MIN_ALLOWANCE = 256;

export interface ImageTextOptions {
  ocr: DocumentOcrOptions;
  /** most bytes of one image's text (media.documentTextKb); 0: off */
  maxBytes: number;
  maxFileBytes: number;
  maxPayloadBytes: number;
}

export class ImageTextReader {
  private unavailableLogged = false;

  constructor(private readonly opts: ImageTextOptions, private readonly media: () => Pick<MediaStore, "get">, private readonly log: Logger) {}

  async annotate<T extends RunInput>(inputs: T[], signal?: AbortSignal, ctx: PrepareContext = {}): Promise<T[]> {
    if (ctx.vision !== false || !this.opts.ocr.enabled || this.opts.maxBytes === 0 || !inputs.some((i) => i.attachments.some((a) => this.wanted(a)))) return inputs;
    const probe = await probeOcr(this.opts.ocr.bwrapPath, this.opts.ocr.languages);
    if (!probe.available) {
      if (!this.unavailableLogged) this.log.warn({ reason: probe.reason }, "OCR of images is not available; a model without vision gets a note for each image (media.ocr)");
      this.unavailableLogged = true;
      return inputs;
    }
    return inlineWithinBudget(inputs, this.opts.maxPayloadBytes, this.opts.maxBytes, {
      wanted: (a) => this.wanted(a),
      read: async (a, allowance) => {
        try {
          const { bytes } = await this.media().get(a.ref!, this.opts.maxFileBytes);
          const text = await ocrImage(bytes, probe, this.opts.ocr.bwrapPath, { languages: this.opts.ocr.languages, timeoutMs: this.opts.ocr.timeoutMs, ...(signal ? { signal } : {}) });
          this.log.info({ ref: a.ref!.slice(0, 12), chars: text.length }, "image read with OCR for a model without vision");
          return { ...a, ocrText: cutText(text, allowance) };
        } catch (err) {
          this.log.warn({ err: LurkError.from(err), ref: a.ref!.slice(0, 12) }, "OCR of an image failed; the model gets a note");
          return a;
        }
      },
    }, MIN_ALLOWANCE);
  }

  private wanted(a: Attachment): boolean {
    return a.kind === "image" && MODEL_IMAGE_TYPES.has(a.mime) && !!a.ref && a.ocrText === undefined && !a.error && (a.size === undefined || a.size <= this.opts.maxFileBytes);
  }
}
