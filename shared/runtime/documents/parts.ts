/**
 * What the document readers share (extract.ts, ooxml.ts,
 * odf.ts, legacy-office.ts, ppt.ts): collecting a document's text part by part (a PDF's pages, a presentation's
 * slides, a spreadsheet's sheets) or at once, the text clean-up, and the error whose message is
 * the reason the model is told. Imports nothing.
 */
import type { DocumentResult } from "./extract.js";

type Extracted = Extract<DocumentResult, { ok: true }>;

/** A document that cannot be read, with a reason the model can be told (no paths, no stack). */
export class DocumentError extends Error {
  override readonly name = "DocumentError";
}

export interface TextLimits {
  maxChars: number;
  maxPages: number;
}

/**
 * The text of parts 0..count-1, in order: at most `maxPages` parts, and no part started once more
 * than `maxChars` characters are collected. `partText(i, room)` is told how many characters are
 * still wanted (it may stop soon after that). Parts are tidied and separated by a blank line;
 * empty ones add nothing. `text` is at most `maxChars` long; `pageEnds[i]` is its length through
 * part i + 1.
 */
export async function collectParts(
  count: number,
  limits: TextLimits,
  partText: (index: number, room: number) => string | Promise<string>,
  unit?: "slide" | "sheet",
): Promise<Extracted> {
  const last = Math.min(count, limits.maxPages);
  const pageEnds: number[] = [];
  let text = "";
  for (let i = 0; i < last && text.length < limits.maxChars; i++) {
    const part = tidy(await partText(i, limits.maxChars - text.length));
    if (part) text += (text ? "\n\n" : "") + part;
    pageEnds.push(text.length);
  }
  const complete = pageEnds.length === count && text.length <= limits.maxChars;
  return { ok: true, text: text.slice(0, limits.maxChars), complete, pages: count, pagesRead: pageEnds.length, pageEnds, ...(unit ? { unit } : {}) };
}

/** A document read at once: its tidied text, at most `maxChars` of it, and the whole text's UTF-8 size. */
export function wholeText(raw: string, maxChars: number): Extracted {
  const text = tidy(raw);
  return { ok: true, text: text.slice(0, maxChars), complete: text.length <= maxChars, totalBytes: Buffer.byteLength(text) };
}

/** line breaks as \n, no other control characters, no trailing spaces, at most one blank line in a row, no blank start or end */
export function tidy(text: string): string {
  return text.replace(/\r\n?/g, "\n").replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "").replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
}

/** An invalid file's reason: "it is not a valid XLSX (damaged, or another kind of file)". */
export function notValid(format: string): DocumentError {
  return new DocumentError(`it is not a valid ${format.toUpperCase()} (damaged, or another kind of file)`);
}

/** rows and columns of one sheet read at most */
export const MAX_ROWS = 20_000;
export const MAX_COLUMNS = 256;

/**
 * One spreadsheet sheet as text: "Sheet: <name>", then a line per row that has a value, its cells
 * separated by commas (quoted as in CSV when they hold a comma, quote or line break; empty
 * cells between values kept, trailing ones dropped). At most MAX_ROWS rows and MAX_COLUMNS
 * columns; a last line says when more were there.
 */
export class SheetText {
  private readonly lines: string[] = [];
  private row: string[] = [];
  private moreRows = false;
  private moreColumns = false;
  /** the text's length so far */
  chars: number;

  constructor(private readonly name: string) {
    this.chars = name.length + 8;
  }

  /** A cell's value at column `col` (0-based), `repeat` times in a row; "" adds nothing. */
  cell(col: number, value: string, repeat = 1): void {
    if (value === "") return;
    if (col + repeat > MAX_COLUMNS) this.moreColumns = true;
    for (let c = col; c < Math.min(col + repeat, MAX_COLUMNS); c++) this.row[c] = value;
  }

  /** Ends the row, `repeat` times over; a row without values adds nothing. */
  endRow(repeat = 1): void {
    if (this.row.length > 0) {
      const line = Array.from(this.row, (v) => csvCell(v ?? "")).join(",");
      const times = Math.min(repeat, MAX_ROWS - this.lines.length);
      if (times < repeat) this.moreRows = true;
      for (let i = 0; i < times; i++) this.lines.push(line);
      this.chars += times * (line.length + 1);
    }
    this.row = [];
  }

  /** true once MAX_ROWS rows are kept and another had a value: nothing more is taken */
  get full(): boolean {
    return this.moreRows;
  }

  text(): string {
    if (this.lines.length === 0) return "";
    const cut = [this.moreRows ? `${MAX_ROWS} rows` : "", this.moreColumns ? `${MAX_COLUMNS} columns` : ""].filter(Boolean).join(" and ");
    const note = cut ? `\n(only its first ${cut} are read)` : "";
    return `Sheet: ${this.name}\n${this.lines.join("\n")}${note}`;
  }
}

/** A cell as CSV writes it: quoted when it holds a comma, quote or line break. */
export function csvCell(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, "\"\"")}"` : value;
}
