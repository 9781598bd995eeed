/**
 * Which attachments are documents whose text the agent-runner extracts (document-text.ts) and
 * transcript.ts words as such: a PDF, a Word (DOCX), Excel (XLSX) or PowerPoint (PPTX) file, or an
 * OpenDocument text, spreadsheet or presentation (ODT, ODS, ODP), by its MIME type, or by its
 * name's extension when the type is a generic one. The old binary Office formats (.doc, .xls,
 * .ppt) are not among them. Imports nothing heavy: the parsers live in the worker.
 */
import type { Attachment } from "../../shared/contract/index.js";
import { GENERIC_TYPES } from "./inline-text.js";

export type DocumentFormat = "pdf" | "docx" | "xlsx" | "pptx" | "odt" | "ods" | "odp";

const OOXML = "application/vnd.openxmlformats-officedocument";
const ODF = "application/vnd.oasis.opendocument";
const TYPES: Record<string, DocumentFormat> = {
  "application/pdf": "pdf",
  "application/x-pdf": "pdf",
  [`${OOXML}.wordprocessingml.document`]: "docx",
  [`${OOXML}.spreadsheetml.sheet`]: "xlsx",
  [`${OOXML}.presentationml.presentation`]: "pptx",
  [`${ODF}.text`]: "odt",
  [`${ODF}.spreadsheet`]: "ods",
  [`${ODF}.presentation`]: "odp",
};
const EXTENSIONS: Record<string, DocumentFormat> = { pdf: "pdf", docx: "docx", xlsx: "xlsx", pptx: "pptx", odt: "odt", ods: "ods", odp: "odp" };

export function documentFormat(a: Pick<Attachment, "mime" | "name">): DocumentFormat | undefined {
  const mime = a.mime.split(";")[0]!.trim().toLowerCase();
  if (Object.hasOwn(TYPES, mime)) return TYPES[mime];
  const ext = /\.([A-Za-z0-9]+)$/.exec(a.name ?? "")?.[1]?.toLowerCase();
  return GENERIC_TYPES.has(mime) && ext !== undefined && Object.hasOwn(EXTENSIONS, ext) ? EXTENSIONS[ext] : undefined;
}

