/**
 * Which attachments are documents whose text the agent-runner extracts (document-text.ts) and
 * transcript.ts words as such: a PDF or a Word (DOCX) file, by its MIME type, or by its name's
 * extension when the type is a generic one. Imports nothing heavy: the parsers live in the worker.
 */
import type { Attachment } from "../../shared/contract/index.js";
import { GENERIC_TYPES } from "./inline-text.js";

export type DocumentFormat = "pdf" | "docx";

const TYPES: Record<string, DocumentFormat> = {
  "application/pdf": "pdf",
  "application/x-pdf": "pdf",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
};
const EXTENSIONS: Record<string, DocumentFormat> = { pdf: "pdf", docx: "docx" };

export function documentFormat(a: Pick<Attachment, "mime" | "name">): DocumentFormat | undefined {
  const mime = a.mime.split(";")[0]!.trim().toLowerCase();
  if (Object.hasOwn(TYPES, mime)) return TYPES[mime];
  const ext = /\.([A-Za-z0-9]+)$/.exec(a.name ?? "")?.[1]?.toLowerCase();
  return GENERIC_TYPES.has(mime) && ext !== undefined && Object.hasOwn(EXTENSIONS, ext) ? EXTENSIONS[ext] : undefined;
}
