/**
 * The piscina worker entry that reads a document's text (document-pool.ts runs it): a PDF through
 * unpdf (pdf.js), a DOCX through mammoth. Both libraries are imported here only, so they load in
 * the worker thread and go away with it.
 *
 * Contract: the bytes come as an ArrayBuffer (transferred; never a path). At most `maxPages`
 * pages of a PDF are read, and reading stops once `maxChars` characters are collected; `text` is
 * at most `maxChars` long. A PDF's pages are separated by a blank line and `pageEnds[i]` is the
 * length of `text` through page i + 1 (so a cut in `text` can be told its page). A document that
 * cannot be read is `{ ok: false, reason }` (a short sentence for the model); it never throws
 * for a bad file.
 */
type PDFDocumentProxy = Awaited<ReturnType<typeof import("unpdf").getDocumentProxy>>;

export interface DocumentTask {
  format: "pdf" | "docx";
  bytes: ArrayBuffer;
  maxChars: number;
  maxPages: number;
}

export type DocumentResult =
  | {
    ok: true;
    text: string;
    /** false: text is missing past `maxChars` or past the pages read */
    complete: boolean;
    /** a PDF: its page count, the pages read and where each ended in `text` */
    pages?: number;
    pagesRead?: number;
    pageEnds?: number[];
    /** a DOCX: the UTF-8 size of its whole text (it is read at once) */
    totalBytes?: number;
  }
  | { ok: false; reason: string };

export default async function extractDocumentText(task: DocumentTask): Promise<DocumentResult> {
  try {
    return task.format === "pdf" ? await pdfText(task) : await docxText(task);
  } catch (err) {
    return { ok: false, reason: failureReason(task.format, err) };
  }
}

async function pdfText(task: DocumentTask): Promise<DocumentResult> {
  const { getDocumentProxy } = await import("unpdf");
  // verbosity 0: pdf.js prints no warnings (they would land on the actor's stdout)
  const pdf = await getDocumentProxy(new Uint8Array(task.bytes), { verbosity: 0, isEvalSupported: false, stopAtErrors: false });
  try {
    const last = Math.min(pdf.numPages, task.maxPages);
    const pageEnds: number[] = [];
    let text = "";
    for (let n = 1; n <= last && text.length < task.maxChars; n++) {
      const pageText = await pdfPageText(pdf, n);
      if (pageText) text += (text ? "\n\n" : "") + pageText;
      pageEnds.push(text.length);
    }
    const complete = pageEnds.length === pdf.numPages && text.length <= task.maxChars;
    return { ok: true, text: text.slice(0, task.maxChars), complete, pages: pdf.numPages, pagesRead: pageEnds.length, pageEnds };
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
    return tidy(text);
  } catch {
    return "";
  }
}

async function docxText(task: DocumentTask): Promise<DocumentResult> {
  const { default: mammoth } = await import("mammoth");
  const { value } = await mammoth.extractRawText({ buffer: Buffer.from(task.bytes) });
  const text = tidy(value);
  return { ok: true, text: text.slice(0, task.maxChars), complete: text.length <= task.maxChars, totalBytes: Buffer.byteLength(text) };
}

/** line breaks as \n, no other control characters, no trailing spaces, at most one blank line in a row, no blank start or end */
function tidy(text: string): string {
  return text.replace(/\r\n?/g, "\n").replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "").replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
}

function failureReason(format: DocumentTask["format"], err: unknown): string {
  const e = err as { name?: string; message?: string } | undefined;
  if (e?.name === "PasswordException") return "the PDF is password-protected";
  if (e?.name === "InvalidPDFException") return "it is not a valid PDF (damaged, or another kind of file)";
  const message = String(e?.message ?? err).slice(0, 200);
  if (format === "docx" && /zip|central directory|word\/document\.xml|Could not find file/i.test(message)) return "it is not a valid DOCX (damaged, or another kind of file)";
  return `it could not be read: ${message}`;
}
