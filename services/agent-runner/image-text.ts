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
 *
 * Contract of `annotateToolResult(result, signal)` (images a tool returns, e.g. `read` of a
 * screenshot, for a run whose model has no vision; run.ts calls it only then): each image block
 * without `ocrText`, from its inline bytes or its media ref (at most `maxFileBytes`), gets the
 * text OCR reads in it, at most `maxBytes` and only while the result stays under the bus payload
 * cap, so the model is told what the image says. The checkpoint stores it: a model with vision
 * later still gets the image. It never throws; failures leave the block as it was (logged).
 */
import { jsonBytes, LurkError, type Attachment, type RunInput, type ToolResultMessage } from "../../shared/contract/index.js";
import { ocrImage, probeOcr, type OcrProbe } from "../../shared/runtime/documents/ocr.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { MediaStore } from "../../shared/runtime/media.js";
import type { DocumentOcrOptions, PrepareContext } from "./document-text.js";
import { cutText } from "./document-text.js";
import { inlineWithinBudget } from "./inline-budget.js";
import { MODEL_IMAGE_TYPES } from "./transcript.js";

const MIN_ALLOWANCE = 256;
/** room kept in a tool result's checkpoint for the record around it */
const RECORD_MARGIN = 4_096;

type ImageBlock = Extract<ToolResultMessage["content"][number], { type: "image" }>;

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
    const probe = await this.availableOcr();
    if (!probe) return inputs;
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

  async annotateToolResult(result: ToolResultMessage, signal?: AbortSignal): Promise<ToolResultMessage> {
    const wanted = (b: ToolResultMessage["content"][number]): b is ImageBlock => b.type === "image" && b.ocrText === undefined && MODEL_IMAGE_TYPES.has(b.mime) && (!!b.dataBase64 || !!b.ref);
    if (!this.opts.ocr.enabled || this.opts.maxBytes === 0 || !result.content.some(wanted)) return result;
    const probe = await this.availableOcr();
    if (!probe) return result;
    let size = jsonBytes(result);
    const content: ToolResultMessage["content"] = [];
    for (const block of result.content) {
      const allowance = Math.min(this.opts.maxBytes, this.opts.maxPayloadBytes - RECORD_MARGIN - size);
      if (!wanted(block) || allowance < MIN_ALLOWANCE || signal?.aborted) {
        content.push(block);
        continue;
      }
      try {
        const bytes = block.dataBase64 !== undefined ? Buffer.from(block.dataBase64, "base64") : (await this.media().get(block.ref!, this.opts.maxFileBytes)).bytes;
        if (bytes.length > this.opts.maxFileBytes) throw new LurkError("PAYLOAD_TOO_LARGE", `the image has ${bytes.length} bytes, more than media.maxFileMb`);
        const text = cutText(await ocrImage(bytes, probe, this.opts.ocr.bwrapPath, { languages: this.opts.ocr.languages, timeoutMs: this.opts.ocr.timeoutMs, ...(signal ? { signal } : {}) }), allowance);
        this.log.info({ tool: result.toolName, chars: text.length }, "a tool's image read with OCR for a model without vision");
        content.push({ ...block, ocrText: text });
        size += jsonBytes(text);
      } catch (err) {
        this.log.warn({ err: LurkError.from(err), tool: result.toolName }, "OCR of a tool's image failed; the model gets a note");
        content.push(block);
      }
    }
    return { ...result, content };
  }

  /** The OCR probe when OCR can run here; undefined (logged once) when it cannot. */
  private async availableOcr(): Promise<OcrProbe | undefined> {
    const probe = await probeOcr(this.opts.ocr.bwrapPath, this.opts.ocr.languages);
    if (probe.available) return probe;
    if (!this.unavailableLogged) this.log.warn({ reason: probe.reason }, "OCR of images is not available; a model without vision gets a note for each image (media.ocr)");
    this.unavailableLogged = true;
    return undefined;
  }

  private wanted(a: Attachment): boolean {
    return a.kind === "image" && MODEL_IMAGE_TYPES.has(a.mime) && !!a.ref && a.ocrText === undefined && !a.error && (a.size === undefined || a.size <= this.opts.maxFileBytes);
  }
}
