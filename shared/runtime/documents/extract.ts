/**
 * A document's text: a PDF through unpdf (pdf.js), a DOCX through mammoth, XLSX and PPTX through
 * ooxml.ts, ODT, ODS and ODP through odf.ts, DOC and XLS through the system's catdoc in the
 * sandbox (legacy-office.ts), PPT through ppt.ts (on cfb.ts, no library). Each library is
 * imported when the first document of its kind is read, so only a thread that reads documents
 * loads them. Meant to run off an actor's event loop: the piscina entry of pool.ts (its default
 * export), or called inside a worker thread that already runs the caller (the tools actor's `read`).
 *
 * Contract: at most `maxPages` pages of a PDF (slides of a presentation, sheets of a
 * spreadsheet) are read, and reading stops once `maxChars` characters are collected; `text` is
 * at most `maxChars` long. Pages (slides, sheets) are separated by a blank line and
 * `pageEnds[i]` is the length of `text` through page i + 1 (so a cut in `text` can be told its
 * page). A document that cannot be read is `{ ok: false, reason }`: a short phrase for the model
 * ("the PDF is password-protected"), with no paths or stack; a library's own message goes in
 * `detail`, for the log. It never throws for a bad file.
 */
import type { DocumentFormat } from "./formats.js";
import { collectParts, wholeText, type TextLimits } from "./parts.js";

type PDFDocumentProxy = Awaited<ReturnType<typeof import("unpdf").getDocumentProxy>>;

export interface DocumentTask {
  format: DocumentFormat;
  /** the file's bytes (through pool.ts: a transferred ArrayBuffer, never a path) */
  bytes: ArrayBuffer | Uint8Array;
  maxChars: number;
  maxPages: number;
  /** DOC and XLS: bubblewrap, for the sandbox catdoc runs in (default /usr/bin/bwrap) */
  bwrapPath?: string;
  /** DOC and XLS: the most catdoc may take (default 20 s) */
  timeoutMs?: number;
}

export type DocumentResult =
  | {
    ok: true;
    text: string;
    /** false: text is missing past `maxChars` or past the pages read */
    complete: boolean;
    /** a PDF (presentation, spreadsheet): its page (slide, sheet) count, the pages read and where each ended in `text` */
    pages?: number;
    pagesRead?: number;
    pageEnds?: number[];
    /** what the pages are when they are not a PDF's pages */
    unit?: "slide" | "sheet";
    /** a DOCX or ODT: the UTF-8 size of its whole text (it is read at once) */
    totalBytes?: number;
  }
  | {
    ok: false;
    reason: string;
    /** the library's message, logged */
    detail?: string;
    /** the caller cancelled or is stopping: nothing is known about the file */
    transient?: true;
  };

export default async function extractDocumentText(task: DocumentTask): Promise<DocumentResult> {
  // a view (a Buffer) is copied into a plain Uint8Array: pdf.js refuses a Buffer
  const bytes = task.bytes instanceof ArrayBuffer ? new Uint8Array(task.bytes) : new Uint8Array(task.bytes);
  try {
    switch (task.format) {
      case "pdf":
        return await pdfText(bytes, task);
      case "docx":
        return await docxText(bytes, task);
      case "xlsx":
        return await (await import("./ooxml.js")).xlsxText(bytes, task);
      case "pptx":
        return await (await import("./ooxml.js")).pptxText(bytes, task);
      case "odt":
      case "ods":
      case "odp":
        return await (await import("./odf.js")).odfText(task.format, bytes, task);
      case "ppt":
        return await (await import("./ppt.js")).pptText(bytes, task);
      case "doc":
      case "xls":
        return await (await import("./legacy-office.js")).legacyOfficeText(task.format, bytes, {
          maxChars: task.maxChars, maxPages: task.maxPages, timeoutMs: task.timeoutMs ?? 20_000, bwrapPath: task.bwrapPath ?? "/usr/bin/bwrap",
        });
    }
  } catch (err) {
    return failure(task.format, err);
  }
}

async function pdfText(bytes: Uint8Array, limits: TextLimits): Promise<DocumentResult> {
  const { getDocumentProxy } = await import("unpdf");
  // verbosity 0: pdf.js prints no warnings (they would land on the actor's stdout)
  const pdf = await getDocumentProxy(bytes, { verbosity: 0, isEvalSupported: false, stopAtErrors: false });
  try {
    return await collectParts(pdf.numPages, limits, (i) => pdfPageText(pdf, i + 1));
  } finally {
    await pdf.destroy();
  }
}

/** a page's text; "" for a page that cannot be read (the others still are) */
async function pdfPageText(pdf: PDFDocumentProxy, n: number): Promise<string> {
  try {
    const page = await pdf.getPage(n);
    const content = await page.getTextContent();
    page.cleanup();
    let text = "";
    for (const item of content.items) {
      if ("str" in item) text += item.str + (item.hasEOL ? "\n" : "");
    }
    return text;
  } catch {
    return "";
  }
}

async function docxText(bytes: Uint8Array, limits: TextLimits): Promise<DocumentResult> {
  // mammoth inflates what it reads without a limit: its parts are read here first, under the zip
  // caps (an encrypted file or a zip bomb gets its reason); images and embedded files are not read for text
  const { ZipDocument } = await import("./zip.js");
  const zip = await ZipDocument.open(bytes);
  for (const path of zip.paths()) if (!/^word\/(media|embeddings)\//.test(path)) await zip.text(path);
  const { default: mammoth } = await import("mammoth");
  const { value } = await mammoth.extractRawText({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) });
  return wholeText(value, limits.maxChars);
}

function failure(format: DocumentFormat, err: unknown): Extract<DocumentResult, { ok: false }> {
  const e = err as { name?: string; message?: string } | undefined;
  const detail = String(e?.message ?? err).slice(0, 300);
  if (e?.name === "DocumentError") return { ok: false, reason: detail };
  if (e?.name === "PasswordException") return { ok: false, reason: "the PDF is password-protected" };
  // pdf.js names a file that is no PDF; the zip-based formats fail in jszip or mammoth, a PPT in cfb.ts (a CfbError)
  if (e?.name === "InvalidPDFException" || format !== "pdf") return { ok: false, reason: `it is not a valid ${format.toUpperCase()} (damaged, or another kind of file)`, detail };
  return { ok: false, reason: "it could not be read (it may be damaged)", detail };
}
