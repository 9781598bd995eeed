/**
 * What `read` and `web_fetch` share about documents (PDF, DOCX, XLSX, PPTX, ODT, ODS, ODP, DOC, XLS, PPT; the
 * readers are shared/runtime/documents/): the caps, the text handed to the model with a note
 * when it is not whole, and the error the model gets for one that cannot be read.
 */
import { LurkError } from "../../shared/contract/index.js";
import type { DocumentResult } from "../../shared/runtime/documents/extract.js";
import { formatLabel, type DocumentFormat } from "../../shared/runtime/documents/formats.js";
import { formatBytes } from "../../shared/runtime/media.js";
import type { ToolContext } from "./tool.js";

/** the largest document read (as media.maxFileMb's default) */
export const DOCUMENT_MAX_BYTES = 20 * 1024 * 1024;
/** pages of a PDF (slides, sheets) read at most */
export const DOCUMENT_MAX_PAGES = 200;
/** characters of text extracted at most; the tools page or save past their own caps */
export const DOCUMENT_MAX_CHARS = 2_000_000;

export const DOCUMENT_LIMITS = { maxChars: DOCUMENT_MAX_CHARS, maxPages: DOCUMENT_MAX_PAGES };

/**
 * The text of a document read, ending with a note in brackets when it is not whole (pages past
 * the page cap, or text past DOCUMENT_MAX_CHARS); "" when it has none.
 */
export function documentBody(result: Extract<DocumentResult, { ok: true }>): string {
  if (result.text === "") return "";
  if (result.complete) return result.text;
  const unit = result.unit ?? "page";
  if (result.text.length >= DOCUMENT_MAX_CHARS) {
    const where = result.pages !== undefined ? `, through ${unit} ${result.pagesRead} of ${result.pages}` : result.totalBytes !== undefined ? ` of ${formatBytes(result.totalBytes)}` : "";
    return `${result.text}\n\n[The text is cut here: the above is its first ${DOCUMENT_MAX_CHARS} characters${where}.]`;
  }
  return `${result.text}\n\n[Only the first ${result.pagesRead} of ${result.pages} ${unit}s were read.]`;
}

/** One line saying what the text is: "text extracted from a PDF (12 pages)". */
export function documentSummary(format: DocumentFormat, result: Extract<DocumentResult, { ok: true }>): string {
  const count = result.pages !== undefined ? ` (${result.pages} ${result.unit ?? "page"}${result.pages === 1 ? "" : "s"})` : "";
  return `text extracted from ${aFormat(format)}${count}`;
}

/** what the model reads for a document without text (a scanned PDF whose pages OCR could not read, or without OCR) */
export function noTextNote(what: string, format: DocumentFormat): string {
  return `(${what} is ${aFormat(format)} with no extractable text: its pages may be scanned images, and OCR read no text from them or is not available here)`;
}

/** The error for a document that cannot be read: "the text of "x.pdf" (PDF) could not be read: the PDF is password-protected". */
export function unreadableDocument(what: string, format: DocumentFormat, reason: string): LurkError {
  return new LurkError("TOOL_FAILED", `the text of ${what} (${formatLabel(format)}) could not be read: ${reason}`);
}

/** The error for a document over DOCUMENT_MAX_BYTES. */
export function documentTooLarge(what: string, format: DocumentFormat, size?: number): LurkError {
  const of = size !== undefined ? ` of ${formatBytes(size)}` : "";
  return new LurkError("LIMIT_EXCEEDED", `${what} is ${aFormat(format)}${of}, larger than the ${formatBytes(DOCUMENT_MAX_BYTES)} documents are read up to; its text cannot be read`);
}

/** "a PDF", "an XLSX" */
function aFormat(format: DocumentFormat): string {
  return `${/^[xo]/.test(format) ? "an" : "a"} ${formatLabel(format)}`;
}

/** A scanned PDF's text read by OCR (shared/runtime/documents/ocr.ts), or undefined when OCR is not available or read nothing. */
export async function recognizedText(bytes: Uint8Array, pages: number, ocr: NonNullable<ToolContext["limits"]["ocr"]>, ctx: Pick<ToolContext, "progress" | "signal">): Promise<{ text: string; summary: string } | undefined> {
  const { ocrPdf, probeOcr } = await import("../../shared/runtime/documents/ocr.js");
  const probe = await probeOcr(ocr.bwrapPath, ocr.languages);
  if (!probe.available) return undefined;
  ctx.progress(`reading the scanned pages by OCR (at most ${ocr.maxPages})`);
  const read = await ocrPdf(bytes, probe, ocr.bwrapPath, { languages: ocr.languages, maxPages: ocr.maxPages, dpi: ocr.dpi, timeoutMs: ocr.timeoutMs, signal: ctx.signal });
  if (read.text.trim() === "") return undefined;
  const partial = read.pagesRead < pages ? `\n\n[Only the first ${read.pagesRead} of ${pages} pages were read by OCR.]` : "";
  return { text: read.text + partial, summary: `text recognized by OCR from a scanned PDF (${pages} page${pages === 1 ? "" : "s"}; it may contain errors)` };
}
