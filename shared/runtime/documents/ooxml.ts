/**
 * The text of Excel (XLSX) and PowerPoint (PPTX) files, in a worker thread. Both are ZIP
 * files of XML parts (zip.ts, read with its limits; xml.ts scans them); the
 * parts are found through the package's relationships, as Office does.
 *
 *  - XLSX: one block per sheet, in the workbook's order (SheetText: its name, then its rows as
 *    comma-separated cells): shared strings resolved, inline strings, numbers as stored, booleans
 *    as TRUE/FALSE, a formula's last value.
 *  - PPTX: one block per slide, in the presentation's order: "Slide N:", the text of its
 *    paragraphs in order, then "Speaker notes:" and the notes page's body text when it has one.
 *    Slides without text add nothing.
 * Parts are read one after the other until the text is long enough (collectParts).
 */
import { posix } from "node:path";
import { collectParts, notValid, SheetText, type TextLimits } from "./parts.js";
import type { DocumentResult } from "./extract.js";
import { attr, scanXml } from "./xml.js";
import { ZipDocument } from "./zip.js";

export async function xlsxText(bytes: Uint8Array, limits: TextLimits): Promise<DocumentResult> {
  const { zip, xml: workbook, rels } = await openPackage(bytes, "xl/workbook.xml", "xlsx");
  const sheets: { name: string; path: string | undefined }[] = [];
  scanXml(workbook, {
    start(name, attrs) {
      if (name === "sheet") sheets.push({ name: attr(attrs, "name") ?? `Sheet${sheets.length + 1}`, path: rels.get(attr(attrs, "r:id") ?? "")?.path });
    },
  });
  const sharedPath = [...rels.values()].find((r) => r.type.endsWith("/sharedStrings"))?.path;
  const shared = sharedPath ? sharedStrings((await zip.text(sharedPath)) ?? "") : [];
  return collectParts(sheets.length, limits, async (i, room) => {
    const { name, path } = sheets[i]!;
    const xml = path ? await zip.text(path) : undefined;
    return xml === undefined ? "" : sheetText(name, xml, shared, room);
  }, "sheet");
}

/** the shared strings table: each item's text (its runs joined; phonetic guides left out) */
function sharedStrings(xml: string): string[] {
  const out: string[] = [];
  let item: string | undefined;
  let inText = false;
  let phonetic = false;
  scanXml(xml, {
    start(name, _attrs, empty) {
      if (name === "si") {
        if (empty) out.push("");
        else item = "";
      } else if (name === "rPh" && !empty) phonetic = true;
      else if (name === "t" && !empty) inText = true;
    },
    text(text) {
      if (inText && !phonetic && item !== undefined) item += text;
    },
    end(name) {
      if (name === "t") inText = false;
      else if (name === "rPh") phonetic = false;
      else if (name === "si" && item !== undefined) {
        out.push(item);
        item = undefined;
      }
    },
  });
  return out;
}

/** A worksheet's rows; the scan stops once the text is longer than `room` or the row cap is reached. */
function sheetText(name: string, xml: string, shared: string[], room: number): string {
  const sheet = new SheetText(name);
  let col = -1;
  let cell: { col: number; type: string; value: string } | undefined;
  let inValue = false;
  let inInline = false;
  let inText = false;
  let phonetic = false;
  scanXml(xml, {
    start(el, attrs, empty) {
      if (el === "row") {
        col = -1;
        if (empty) sheet.endRow();
      } else if (el === "c") {
        const ref = attr(attrs, "r");
        col = (ref !== undefined ? columnIndex(ref) : undefined) ?? col + 1;
        if (!empty) cell = { col, type: attr(attrs, "t") ?? "n", value: "" };
      } else if (cell && !empty) {
        if (el === "v") inValue = true;
        else if (el === "is") inInline = true;
        else if (el === "rPh") phonetic = true;
        else if (el === "t" && inInline && !phonetic) inText = true;
      }
    },
    text(text) {
      if (cell && (inValue || inText)) cell.value += text;
    },
    end(el) {
      if (el === "v") inValue = false;
      else if (el === "t") inText = false;
      else if (el === "rPh") phonetic = false;
      else if (el === "is") inInline = false;
      else if (el === "c" && cell) {
        sheet.cell(cell.col, cellValue(cell.type, cell.value, shared));
        cell = undefined;
      } else if (el === "row") sheet.endRow();
    },
    done: () => sheet.full || sheet.chars > room,
  });
  return sheet.text();
}

/** what a cell shows, by its type: a shared string's text, TRUE/FALSE, or the value as stored */
function cellValue(type: string, value: string, shared: string[]): string {
  if (type === "s") return shared[Number(value)] ?? "";
  if (type === "b") return value === "1" ? "TRUE" : value === "0" ? "FALSE" : value;
  return value;
}

/** "C7" -> 2 */
function columnIndex(ref: string): number | undefined {
  const letters = /^[A-Za-z]{1,3}/.exec(ref)?.[0];
  if (!letters) return undefined;
  let n = 0;
  for (const ch of letters.toUpperCase()) n = n * 26 + (ch.charCodeAt(0) - 64);
  return n - 1;
}

export async function pptxText(bytes: Uint8Array, limits: TextLimits): Promise<DocumentResult> {
  const { zip, xml: presentation, rels } = await openPackage(bytes, "ppt/presentation.xml", "pptx");
  const slides: string[] = [];
  scanXml(presentation, {
    start(name, attrs) {
      const path = name === "sldId" ? rels.get(attr(attrs, "r:id") ?? "")?.path : undefined;
      if (path) slides.push(path);
    },
  });
  return collectParts(slides.length, limits, (i) => slideText(zip, slides[i]!, i + 1), "slide");
}

async function slideText(zip: ZipDocument, path: string, n: number): Promise<string> {
  const xml = await zip.text(path);
  if (xml === undefined) return "";
  const paragraphs = drawingParagraphs(xml, false);
  const notesPath = [...(await relationships(zip, path)).values()].find((r) => r.type.endsWith("/notesSlide"))?.path;
  const notesXml = notesPath ? await zip.text(notesPath) : undefined;
  const notes = notesXml ? drawingParagraphs(notesXml, true) : [];
  if (paragraphs.length === 0 && notes.length === 0) return "";
  return [`Slide ${n}:`, ...paragraphs, ...(notes.length > 0 ? ["Speaker notes:", ...notes] : [])].join("\n");
}

/**
 * The non-empty DrawingML paragraphs (a:p) of a slide or notes page, in order: their runs' text,
 * a:br as a line break; what a Fallback repeats of its Choice is left out. `notesOnly`: only the
 * paragraphs of a shape that is a body placeholder (a notes page's notes, not its slide number).
 */
function drawingParagraphs(xml: string, notesOnly: boolean): string[] {
  const out: string[] = [];
  let paragraph: string | undefined;
  let inText = false;
  let fallback = 0;
  let bodyShape = false;
  scanXml(xml, {
    start(el, attrs, empty) {
      if (el === "Fallback" && !empty) fallback++;
      else if (el === "sp") bodyShape = false;
      else if (el === "ph") bodyShape ||= attr(attrs, "type") === "body";
      else if (el === "p" && !empty && fallback === 0) paragraph = "";
      else if (el === "t" && !empty) inText = true;
      else if (el === "br" && paragraph !== undefined) paragraph += "\n";
    },
    text(text) {
      if (inText && paragraph !== undefined) paragraph += text;
    },
    end(el) {
      if (el === "Fallback") fallback--;
      else if (el === "t") inText = false;
      else if (el === "p" && paragraph !== undefined) {
        if (paragraph.trim() && (!notesOnly || bodyShape)) out.push(paragraph);
        paragraph = undefined;
      }
    },
  });
  return out;
}

interface Relationship {
  type: string;
  /** the target part's path in the zip */
  path: string;
}

/** the package's main part (the workbook, the presentation), as its root relationships name it */
/** The package, its main part (named by the package's relationships, else `fallback`) and that part's relationships. */
async function openPackage(bytes: Uint8Array, fallback: string, format: "xlsx" | "pptx"): Promise<{ zip: ZipDocument; xml: string; rels: Map<string, Relationship> }> {
  const zip = await ZipDocument.open(bytes);
  const path = (await mainPart(zip)) ?? fallback;
  const xml = await zip.text(path);
  if (xml === undefined) throw notValid(format);
  return { zip, xml, rels: await relationships(zip, path) };
}

async function mainPart(zip: ZipDocument): Promise<string | undefined> {
  return [...(await relationships(zip, "")).values()].find((r) => r.type.endsWith("/officeDocument"))?.path;
}

/** A part's relationships by id (from `<dir>/_rels/<name>.rels`; "" for the package's own); external targets left out. */
async function relationships(zip: ZipDocument, part: string): Promise<Map<string, Relationship>> {
  const dir = posix.dirname(part);
  const xml = await zip.text(posix.join(dir, "_rels", `${posix.basename(part)}.rels`));
  const out = new Map<string, Relationship>();
  if (xml === undefined) return out;
  scanXml(xml, {
    start(name, attrs) {
      if (name !== "Relationship" || attr(attrs, "TargetMode") === "External") return;
      const id = attr(attrs, "Id");
      const target = attr(attrs, "Target");
      if (!id || !target) return;
      const path = target.startsWith("/") ? posix.normalize(target.slice(1)) : posix.normalize(posix.join(dir, target));
      out.set(id, { type: attr(attrs, "Type") ?? "", path });
    },
  });
  return out;
}
