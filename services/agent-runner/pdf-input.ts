/**
 * PDFs without a text layer (scanned) sent to the model as the PDF itself.
 *  - `pdfDocumentBlock(a)`: a PDF attachment whose extracted text is empty, with a ref, within
 *    PDF_MAX_PAGES and PDF_MAX_BYTES, becomes a `document` block (transcript.ts keeps it by ref);
 *    anything else: undefined (the attachment stays a note).
 *  - `pdfInputFor(messages, pdf)`: for one model, each document block becomes, when the model has
 *    the `pdf` capability and the block carries its bytes (images.ts loads them), a note saying the
 *    PDF itself is attached followed by the block; otherwise a note with the text OCR read from it
 *    (`ocrText`, document-text.ts) or, without OCR, "no extractable text". The preparer runs
 *    before the run's model is known for sure (failover may switch), so this is decided per call.
 */
import type { Attachment, LlmMessage, UserMessage } from "../../shared/contract/index.js";
import { formatBytes } from "../../shared/runtime/media.js";
import { MB } from "../../shared/runtime/config-media.js";

/** what Anthropic takes per PDF (OpenAI takes more): larger ones stay notes */
export const PDF_MAX_PAGES = 100;
export const PDF_MAX_BYTES = 32 * MB;

export type DocumentBlock = Extract<UserMessage["content"][number], { type: "document" }>;

/** the note of a scanned PDF the model does not get as the PDF itself */
export const NO_TEXT_PDF = "(no extractable text: its pages are probably scanned images, and OCR is not available)";

export function pdfDocumentBlock(a: Attachment, isPdf: boolean): DocumentBlock | undefined {
  if (!isPdf || !a.ref || a.text === undefined || a.text.trim() !== "" || a.pages === undefined) return undefined;
  if (a.pages > PDF_MAX_PAGES || (a.size !== undefined && a.size > PDF_MAX_BYTES)) return undefined;
  return { type: "document", mime: "application/pdf", ref: a.ref, ...(a.name ? { name: a.name } : {}), ...(a.size !== undefined ? { size: a.size } : {}), pages: a.pages, ...(a.ocrText !== undefined ? { ocrText: a.ocrText } : {}) };
}

const described = (b: DocumentBlock) => `${b.name ?? "file"} (${b.mime}${b.size ? `, ${formatBytes(b.size)}` : ""}), media ref ${b.ref}`;

/** The text a document block stands for when the model does not get the PDF: what OCR read, or that there is no text. */
export function pdfFallbackNote(b: DocumentBlock): string {
  return `[attachment ${described(b)}; its extracted text:]\n${b.ocrText ?? NO_TEXT_PDF}`;
}

/** The note before a PDF the model gets as the PDF itself. */
export function pdfAttachedNote(b: DocumentBlock): string {
  return `[attachment ${described(b)}; it has no text layer (scanned pages), so it is attached as the PDF itself:]`;
}

/** `messages` for a model with (`pdf`) or without PDF input (the same array when there is no document block). */
export function pdfInputFor(messages: LlmMessage[], pdf: boolean): LlmMessage[] {
  if (!messages.some(hasDocument)) return messages;
  return messages.map((m) => {
    if (!hasDocument(m)) return m;
    const content = (m as UserMessage).content.flatMap((b): UserMessage["content"] => {
      if (b.type !== "document") return [b];
      if (pdf && b.dataBase64) return [{ type: "text", text: pdfAttachedNote(b) }, b];
      return [{ type: "text", text: pdfFallbackNote(b) }];
    });
    return { ...m, content } as UserMessage;
  });
}

const hasDocument = (m: LlmMessage) => m.role === "user" && m.content.some((b) => b.type === "document");
