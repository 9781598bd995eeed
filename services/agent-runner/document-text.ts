/**
 * Documents (PDF, DOCX, XLSX, PPTX, ODT, ODS, ODP, PPT; DOC and XLS through catdoc) -> their text in the model's note
 * (`media.documentTextKb`, 64 KB by default; 0: off), before a run stores its inputs, so the
 * model reads a document a user sends instead of having to save and convert it with tools.
 *
 * Contract of `annotate(inputs)`: each user input's attachment that is a document
 * (document-types.ts) with a media ref, no `text`, no error or textError and at most
 * `maxFileBytes` is read from the media store and handed to the document worker
 * (document-pool.ts: a worker thread, at most MAX_PAGES pages, slides or sheets, `timeoutMs` per
 * document). Its text goes in the attachment's `text` (transcript.ts puts it under the file's
 * note, and the session keeps it): at most `maxBytes` (counted as JSON-encoded UTF-8), and at
 * most what is left of the call's inline budget (inline-budget.ts), which also says when too
 * little is left to read one; a longer text is cut at a paragraph, line or word boundary and ends
 * with a marker saying how much there was and that media_save with the ref saves the whole file. A document without text (a scanned PDF)
 * gets an empty `text`, and, for a run whose model does not read PDFs, the text OCR reads from
 * its pages in `ocrText` (media.ocr; see `recognized`). The page (slide, sheet) count goes in `pages` (pdf-input.ts: a scanned
 * PDF within its caps goes to models with PDF input as the PDF itself). A document that cannot be read (damaged, password-protected, too slow,
 * the worker failed, no longer in the store) gets `textError`, "its text could not be read: "
 * and why (transcript.ts shows it in the note), and is logged; one the run's cancellation, the
 * runner's stop or an unavailable store kept from being read is left as it was (a note with its
 * ref), to be tried again. It never throws.
 */
import { LurkError, type Attachment, type RunInput } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { formatBytes, type MediaStore } from "../../shared/runtime/media.js";
import { DocumentPool } from "./document-pool.js";
import { documentFormat } from "./document-types.js";
import type { DocumentResult } from "../../shared/runtime/documents/extract.js";
import { inlineWithinBudget, jsonFit } from "./inline-budget.js";
import { ocrPdf, probeOcr, type OcrOptions } from "../../shared/runtime/documents/ocr.js";
import type { UsageCharge } from "./usage-booking.js";

/** pages of a PDF (slides, sheets) read at most */
const MAX_PAGES = 200;
/** bytes kept for the cut marker within a document's allowance */
const MARKER_BYTES = 400;
/** a document is not read when less than this is left of the budget */
const MIN_ALLOWANCE = 2 * 1024;

/** OCR of scanned PDFs (media.ocr; shared/runtime/documents/ocr.ts) */
export interface DocumentOcrOptions extends Omit<OcrOptions, "signal"> {
  enabled: boolean;
  bwrapPath: string;
}

export interface DocumentTextOptions {
  /** scanned PDFs read with OCR for runs whose model does not read PDFs */
  ocr?: DocumentOcrOptions;
  /** most bytes of one document's text put inline (media.documentTextKb); 0: off */
  maxBytes: number;
  /** largest document read (media.maxFileMb) */
  maxFileBytes: number;
  /** time the worker may take for one document (media.documentTimeoutMs) */
  timeoutMs: number;
  /** bus.maxPayloadBytes: the inline budget's bound (inline-budget.ts) */
  maxPayloadBytes: number;
}

export class DocumentTextExtractor {
  private readonly pool: DocumentPool;

  constructor(private readonly opts: DocumentTextOptions, private readonly media: () => Pick<MediaStore, "get">, private readonly log: Logger) {
    this.pool = new DocumentPool(opts.timeoutMs, log);
  }

  /** `ctx.pdfInput`: the run's model reads PDFs (a scanned one goes to it as the PDF; no OCR) */
  async annotate<T extends RunInput>(inputs: T[], signal?: AbortSignal, ctx: PrepareContext = {}): Promise<T[]> {
    if (this.opts.maxBytes === 0 || !inputs.some((i) => i.attachments.some((a) => this.wanted(a)))) return inputs;
    return inlineWithinBudget(inputs, this.opts.maxPayloadBytes, this.opts.maxBytes, { wanted: (a) => this.wanted(a), read: (a, allowance) => this.one(a, allowance, signal, ctx) }, MIN_ALLOWANCE);
  }

  /** Stops the worker (the actor is stopping). */
  close(): Promise<void> {
    return this.pool.close();
  }

  /**
   * A scanned PDF's text through OCR (media.ocr), for a model that does not read PDFs: with a
   * header saying so, cut like any document's; a note when it found no text; "" when OCR is off,
   * unavailable or fails (the model gets the "no extractable text" note then; a failure is logged).
   */
  private async recognized(bytes: Uint8Array, pages: number, maxBytes: number, ref: string, signal: AbortSignal | undefined): Promise<string> {
    const ocr = this.opts.ocr;
    if (!ocr?.enabled) return "";
    const probe = await probeOcr(ocr.bwrapPath, ocr.languages);
    if (!probe.available) {
      this.logOcrUnavailable(probe.reason);
      return "";
    }
    const started = Date.now();
    try {
      const read = await ocrPdf(bytes, probe, ocr.bwrapPath, { languages: ocr.languages, maxPages: ocr.maxPages, dpi: ocr.dpi, timeoutMs: ocr.timeoutMs, ...(signal ? { signal } : {}) });
      this.log.info({ ref: ref.slice(0, 12), pages, pagesRead: read.pagesRead, chars: read.text.length, sandboxed: probe.sandboxed, ms: Date.now() - started }, "scanned PDF read with OCR");
      if (read.text.trim() === "") return `(no extractable text: its ${read.pagesRead === 1 ? "page is" : `${read.pagesRead} pages are`} probably scanned images, and OCR found no text on ${read.pagesRead === 1 ? "it" : "them"})`;
      const body = documentText({ ok: true, text: read.text, pages, pagesRead: read.pagesRead, pageEnds: read.pageEnds, complete: read.complete && read.pagesRead === pages }, maxBytes - OCR_HEADER.length - 1, ref);
      return `${OCR_HEADER}\n${body}`;
    } catch (err) {
      this.log.warn({ err, ref: ref.slice(0, 12) }, "OCR of a scanned PDF failed; the model gets a note");
      return "";
    }
  }

  private ocrUnavailableLogged = false;

  private logOcrUnavailable(reason: string | undefined): void {
    if (this.ocrUnavailableLogged) return;
    this.ocrUnavailableLogged = true;
    this.log.warn({ reason }, "OCR of scanned PDFs is not available; models without PDF input get a note instead (media.ocr)");
  }

  private wanted(a: Attachment): boolean {
    return !!a.ref && a.text === undefined && !a.error && !a.textError && (a.size === undefined || a.size <= this.opts.maxFileBytes) && documentFormat(a) !== undefined;
  }

  private async one(a: Attachment, allowance: number, signal: AbortSignal | undefined, ctx: PrepareContext): Promise<Attachment> {
    const ref = a.ref!;
    const format = documentFormat(a)!;
    const started = Date.now();
    try {
      const { bytes } = await this.media().get(ref, this.opts.maxFileBytes);
      const textBytes = allowance - MARKER_BYTES;
      const result = await this.pool.extract(format, bytes, { maxChars: textBytes + 1, maxPages: MAX_PAGES, ...(this.opts.ocr ? { bwrapPath: this.opts.ocr.bwrapPath } : {}) }, signal);
      if (!result.ok) {
        this.log.warn({ ref: ref.slice(0, 12), format, reason: result.reason, detail: result.detail }, "a document's text could not be extracted");
        return result.transient ? a : unreadable(a, result.reason);
      }
      const text = documentText(result, textBytes, ref);
      this.log.info({ ref: ref.slice(0, 12), format, bytes: bytes.byteLength, pages: result.pages, textBytes: Buffer.byteLength(text), ms: Date.now() - started }, "document text extracted");
      // a scanned PDF: its text layer stays empty (a model with PDF input gets the PDF); OCR's text goes apart
      const scanned = format === "pdf" && text === "" && result.pages !== undefined && !ctx.pdfInput;
      const ocrText = scanned ? await this.recognized(bytes, result.pages!, textBytes, ref, signal) : "";
      return { ...a, text, ...(result.pages !== undefined ? { pages: result.pages } : {}), ...(ocrText ? { ocrText } : {}) };
    } catch (err) {
      const e = LurkError.from(err);
      this.log.warn({ err: e, ref: ref.slice(0, 12) }, "a document's bytes could not be read from the media store");
      if (e.code === "NOT_FOUND") return unreadable(a, "the file is no longer in the media store");
      if (e.code === "LIMIT_EXCEEDED") return unreadable(a, `it is larger than media.maxFileMb (${formatBytes(this.opts.maxFileBytes)})`);
      return a;
    }
  }
}

/** what a run tells its input preparers */
export interface PrepareContext {
  /** the run's model reads PDFs itself (the `pdf` capability) */
  pdfInput?: boolean;
  /** false: the run's model is known to have no vision (image-text.ts reads images' text then) */
  vision?: boolean;
  /** books a preparer's own billed call (a transcription) to the run's session and agent (usage-booking.ts) */
  book?: (charge: Omit<UsageCharge, "owner">) => void;
}

export const OCR_HEADER = "[The text below was recognized by OCR from the scanned pages; it may contain errors.]";

function unreadable(a: Attachment, reason: string): Attachment {
  return { ...a, textError: `its text could not be read: ${reason}` };
}

/** The text for the note: whole, or cut within `maxBytes` with a marker; "" when there is none. */
export function documentText(result: Extract<DocumentResult, { ok: true }>, maxBytes: number, ref: string): string {
  const whole = result.text;
  if (whole === "") return "";
  const saveHint = `The media_save tool saves the whole file (media ref ${ref}) into the workspace.`;
  const kept = cutText(whole, maxBytes);
  if (kept.length < whole.length) {
    const size = formatBytes(Buffer.byteLength(kept));
    const where = result.pages !== undefined
      ? `, through ${result.unit ?? "page"} ${pageAt(result.pageEnds ?? [], kept.length)} of ${result.pages}`
      : result.totalBytes !== undefined ? ` of ${formatBytes(result.totalBytes)}` : "";
    return `${kept}\n\n[The text is cut here: the above is its first ${size}${where}. ${saveHint}]`;
  }
  if (!result.complete && result.pages !== undefined) {
    return `${whole}\n\n[Only the first ${result.pagesRead} of ${result.pages} ${result.unit ?? "page"}s were read. ${saveHint}]`;
  }
  return whole;
}

/** The start of `text` in at most `maxBytes` (JSON-encoded), ended at a paragraph, line, sentence or word when one is near. */
export function cutText(text: string, maxBytes: number): string {
  const fit = jsonFit(text, maxBytes);
  if (fit === text.length) return text;
  const head = text.slice(0, fit);
  const near = Math.floor(head.length * 0.8);
  for (const sep of ["\n\n", "\n", ". ", " "]) {
    const at = head.lastIndexOf(sep);
    if (at >= near) return head.slice(0, sep === ". " ? at + 1 : at);
  }
  return head;
}

/** the page (1-based) that the character at `offset` is on */
function pageAt(pageEnds: number[], offset: number): number {
  const i = pageEnds.findIndex((end) => end >= offset);
  return i < 0 ? pageEnds.length : i + 1;
}
