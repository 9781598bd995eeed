/**
 * Which files are documents whose text the readers here extract: a PDF, a Word (DOCX), Excel
 * (XLSX) or PowerPoint (PPTX) file, an OpenDocument text, spreadsheet or presentation (ODT,
 * ODS, ODP), an old binary Word or Excel file (DOC, XLS: legacy-office.ts, with the system's
 * catdoc), or an old binary PowerPoint file (PPT, also .pps and .pot: ppt.ts). Known by MIME
 * type, by a name's extension, or by the file's first bytes. Imports nothing heavy: the readers
 * load in a worker thread (extract.ts).
 */

export type DocumentFormat = "pdf" | "docx" | "xlsx" | "pptx" | "odt" | "ods" | "odp" | "doc" | "xls" | "ppt";

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
  "application/msword": "doc",
  "application/vnd.ms-word": "doc",
  "application/vnd.ms-excel": "xls",
  "application/excel": "xls",
  "application/x-msexcel": "xls",
  "application/vnd.ms-powerpoint": "ppt",
  "application/mspowerpoint": "ppt",
  "application/x-mspowerpoint": "ppt",
};
const EXTENSIONS: Record<string, DocumentFormat> = { pdf: "pdf", docx: "docx", xlsx: "xlsx", pptx: "pptx", odt: "odt", ods: "ods", odp: "odp", doc: "doc", xls: "xls", ppt: "ppt", pps: "ppt", pot: "ppt" };

/** The format a MIME type names (parameters and case ignored); undefined for any other type. */
export function formatOfMime(mime: string): DocumentFormat | undefined {
  const bare = bareMime(mime);
  return Object.hasOwn(TYPES, bare) ? TYPES[bare] : undefined;
}

/** MIME types that say nothing about the content: a file of one is known by its name (or its bytes) */
export const GENERIC_TYPES: ReadonlySet<string> = new Set(["", "application/octet-stream", "binary/octet-stream", "application/download", "application/force-download", "application/x-download"]);

/** The bare, lower-case MIME type ("Application/PDF; x=y" -> "application/pdf"). */
export const bareMime = (mime: string): string => mime.split(";")[0]!.trim().toLowerCase();

/** The format a MIME type names, or for a generic type the one `name`'s extension names. */
export function formatOf(mime: string, name: string | undefined): DocumentFormat | undefined {
  return formatOfMime(mime) ?? (GENERIC_TYPES.has(bareMime(mime)) ? formatOfName(name) : undefined);
}

/** The format a file name's (or URL path's) extension names; undefined for any other. */
export function formatOfName(name: string | undefined): DocumentFormat | undefined {
  const ext = /\.([A-Za-z0-9]+)$/.exec(name ?? "")?.[1]?.toLowerCase();
  return ext !== undefined && Object.hasOwn(EXTENSIONS, ext) ? EXTENSIONS[ext] : undefined;
}

const ZIP = [0x50, 0x4b, 0x03, 0x04];
/** an OLE compound file: a password-protected DOCX, XLSX or PPTX (or an old binary Office file) */
const COMPOUND_FILE = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];
const startsWith = (head: Uint8Array, magic: number[]) => magic.every((b, i) => head[i] === b);
/** true for an OLE compound file (an encrypted DOCX, XLSX or PPTX, or an old binary Office file) */
export const isCompoundFile = (head: Uint8Array): boolean => startsWith(head, COMPOUND_FILE);

/**
 * The format of a file by its first bytes (at least its first 1 KB) and its name: "%PDF-" in the
 * first 1 KB is a PDF; an OpenDocument zip names its type in its first entry ("mimetype"); a zip
 * or an OLE compound file (how Office stores an encrypted file) is the format its name's
 * extension says. Undefined for anything else.
 */
export function sniffDocument(head: Uint8Array, name?: string): DocumentFormat | undefined {
  const start = Buffer.from(head.buffer, head.byteOffset, Math.min(head.byteLength, 1024)).toString("latin1");
  if (start.includes("%PDF-")) return "pdf";
  if (startsWith(head, ZIP)) {
    const odf = /^mimetype(application\/vnd\.oasis\.opendocument\.(?:text|spreadsheet|presentation))/.exec(start.slice(30, 100));
    if (odf) return formatOfMime(odf[1]!);
  }
  const byName = formatOfName(name);
  if (byName && byName !== "pdf" && (startsWith(head, ZIP) || isCompoundFile(head))) return byName;
  return undefined;
}

/** how a format is named to the model: "PDF", "XLSX" */
export function formatLabel(format: DocumentFormat): string {
  return format.toUpperCase();
}
