/**
 * The text of OpenDocument files (ODT, ODS, ODP), in a worker thread: all three keep their
 * content in the zip's content.xml (zip.ts reads it with its limits; xml.ts
 * scans it). A file whose manifest says its parts are encrypted is password-protected.
 *
 *  - ODT: its paragraphs and headings in order, separated by a blank line (read at once, like a
 *    DOCX).
 *  - ODS: one block per sheet (SheetText): numbers, dates and booleans as stored (office:value
 *    and the like), other cells as their text; repeated rows and cells repeated within the caps.
 *  - ODP: one block per slide: "Slide N:", its paragraphs, then "Speaker notes:" and its notes.
 * Left out everywhere: tracked deletions, comments and footnote marks.
 */
import { collectParts, DocumentError, MAX_COLUMNS, MAX_ROWS, notValid, SheetText, wholeText, type TextLimits } from "./parts.js";
import type { DocumentResult } from "./extract.js";
import { attr, scanXml } from "./xml.js";
import { ZipDocument } from "./zip.js";

export async function odfText(format: "odt" | "ods" | "odp", bytes: Uint8Array, limits: TextLimits): Promise<DocumentResult> {
  const zip = await ZipDocument.open(bytes);
  const manifest = await zip.text("META-INF/manifest.xml");
  if (manifest?.includes("encryption-data")) throw new DocumentError("it is password-protected");
  const content = await zip.text("content.xml");
  if (content === undefined) throw notValid(format);
  if (format === "odt") return wholeText(textParagraphs(content).join("\n\n"), limits.maxChars);
  const parts = format === "ods" ? sheets(content, limits.maxChars) : slides(content);
  return collectParts(parts.length, limits, (i) => parts[i]!, format === "ods" ? "sheet" : "slide");
}

/** elements whose text is not the document's */
const LEFT_OUT = new Set(["tracked-changes", "annotation", "note-citation", "sequence-decls", "forms"]);

/**
 * Reads ODF paragraphs (text:p, text:h) from the scan's events and hands each non-empty one to
 * `emit`: its text with spans and links, text:s as spaces, tabs and line breaks; runs of white
 * space in the XML count as one space, as ODF says. A paragraph inside another (a footnote's)
 * is its own, emitted first.
 */
class Paragraphs {
  private readonly open: string[] = [];
  private leftOut = 0;

  constructor(private readonly emit: (text: string) => void) {}

  start(el: string, attrs: string, empty: boolean): void {
    if (LEFT_OUT.has(el)) {
      if (!empty) this.leftOut++;
    } else if (this.leftOut > 0) {
      // inside something left out
    } else if ((el === "p" || el === "h") && !empty) this.open.push("");
    else if (this.open.length > 0) {
      if (el === "s") this.append(" ".repeat(Math.min(Math.max(Number(attr(attrs, "text:c") ?? 1) || 1, 1), 1000)));
      else if (el === "tab") this.append("\t");
      else if (el === "line-break") this.append("\n");
    }
  }

  text(text: string): void {
    if (this.leftOut === 0 && this.open.length > 0) this.append(text.replace(/[ \t\r\n]+/g, " "));
  }

  end(el: string): void {
    if (LEFT_OUT.has(el)) this.leftOut--;
    else if (this.leftOut === 0 && (el === "p" || el === "h") && this.open.length > 0) {
      const text = this.open.pop()!.trim();
      if (text) this.emit(text);
    }
  }

  private append(text: string): void {
    this.open[this.open.length - 1] += text;
  }
}

function textParagraphs(xml: string): string[] {
  const out: string[] = [];
  const paragraphs = new Paragraphs((text) => out.push(text));
  scanXml(xml, { start: (el, attrs, empty) => paragraphs.start(el, attrs, empty), text: (t) => paragraphs.text(t), end: (el) => paragraphs.end(el) });
  return out;
}

/** Each table's text (SheetText); once the texts are longer than `room`, later tables are only counted (""). */
function sheets(xml: string, room: number): string[] {
  const out: string[] = [];
  let chars = 0;
  let depth = 0; // tables inside a cell are read as that cell's text
  let sheet: SheetText | undefined;
  let taking = false; // false once the sheet is full or the texts are long enough
  let col = 0;
  let rowRepeat = 1;
  let cell: { repeat: number; value: string | undefined; texts: string[] } | undefined;
  const paragraphs = new Paragraphs((text) => cell?.texts.push(text));
  const endCell = () => {
    if (!cell) return;
    if (taking) sheet?.cell(col, cell.value ?? cell.texts.join("\n"), cell.repeat);
    col += cell.repeat;
    cell = undefined;
  };
  const endRow = () => {
    if (!taking || !sheet) return;
    sheet.endRow(rowRepeat);
    taking = !sheet.full && chars + sheet.chars <= room;
  };
  scanXml(xml, {
    start(el, attrs, empty) {
      if (el === "table" && !empty && ++depth === 1) {
        sheet = new SheetText(attr(attrs, "table:name") ?? `Sheet${out.length + 1}`);
        taking = chars <= room;
        out.push("");
      } else if (depth === 1 && el === "table-row") {
        col = 0;
        rowRepeat = Math.min(repeated(attrs, "table:number-rows-repeated"), MAX_ROWS);
        if (empty) endRow();
      } else if (depth === 1 && (el === "table-cell" || el === "covered-table-cell")) {
        cell = { repeat: Math.min(repeated(attrs, "table:number-columns-repeated"), MAX_COLUMNS + 1), value: storedValue(attrs), texts: [] };
        if (empty) endCell();
      } else paragraphs.start(el, attrs, empty);
    },
    text: (t) => paragraphs.text(t),
    end(el) {
      if (el === "table" && depth > 0 && --depth === 0) {
        const text = sheet?.text() ?? "";
        out[out.length - 1] = text;
        chars += text.length;
        sheet = undefined;
        taking = false;
      } else if (depth === 1 && (el === "table-cell" || el === "covered-table-cell")) endCell();
      else if (depth === 1 && el === "table-row") endRow();
      else paragraphs.end(el);
    },
  });
  return out;
}

/** a cell's value as stored, for the types that have one apart from their text */
function storedValue(attrs: string): string | undefined {
  switch (attr(attrs, "office:value-type")) {
    case "float":
    case "percentage":
    case "currency":
      return attr(attrs, "office:value");
    case "date":
      return attr(attrs, "office:date-value");
    case "time":
      return attr(attrs, "office:time-value");
    case "boolean":
      return attr(attrs, "office:boolean-value") === "true" ? "TRUE" : "FALSE";
    default:
      return undefined;
  }
}

function repeated(attrs: string, name: string): number {
  const n = Number(attr(attrs, name) ?? 1);
  return Number.isInteger(n) && n > 1 ? n : 1;
}

/** Each draw:page's text: "Slide N:", its paragraphs, its notes; "" for a page without text. */
function slides(xml: string): string[] {
  const out: string[] = [];
  let body: string[] | undefined;
  let notes: string[] = [];
  let inNotes = 0;
  const paragraphs = new Paragraphs((text) => (inNotes > 0 ? notes : body)?.push(text));
  scanXml(xml, {
    start(el, attrs, empty) {
      if (el === "page" && !empty) {
        body = [];
        notes = [];
      } else if (el === "page" && empty) out.push("");
      else if (el === "notes" && !empty) inNotes++;
      else paragraphs.start(el, attrs, empty);
    },
    text: (t) => paragraphs.text(t),
    end(el) {
      if (el === "page" && body) {
        const n = out.length + 1;
        out.push(body.length === 0 && notes.length === 0 ? "" : [`Slide ${n}:`, ...body, ...(notes.length > 0 ? ["Speaker notes:", ...notes] : [])].join("\n"));
        body = undefined;
      } else if (el === "notes") inNotes--;
      else paragraphs.end(el);
    },
  });
  return out;
}
