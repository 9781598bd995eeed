/**
 * The text of PowerPoint 97-2003 files (.ppt, .pps, .pot; [MS-PPT]) in pure TypeScript, in a
 * worker thread. The compound file (cfb.ts) holds a "PowerPoint Document" stream: a tree of
 * records, each an 8-byte header (version in the low 4 bits, 0xF for a container, and instance;
 * type; length) and its data.
 *
 *  - Order: the "Current User" stream names the newest UserEditAtom; it and the older ones it
 *    chains to make the persist directory (persist id -> where a record starts), which finds the
 *    Document container. Its SlideListWithText lists the slides in order (a SlidePersistAtom
 *    names each one's Slide container by persist id), with their placeholders' text as
 *    PowerPoint writes it; a slide's notes page is the Notes container its SlideAtom's notesIdRef
 *    names through the notes list. When that fails (no Current User, offsets leading nowhere),
 *    the last UserEditAtom in the stream is tried, and then the Slide containers are read in
 *    stream order (notes by their NotesAtom's slide id, when the list matches the slides).
 *  - Text: a slide's drawing (PPDrawing: OfficeArt shapes, groups included, in z-order) is read
 *    for its text boxes (OfficeArtClientTextbox): TextCharsAtom (UTF-16LE) and TextBytesAtom
 *    (Latin-1) text, or an OutlineTextRefAtom pointing at the slide's text in the list.
 *    LibreOffice writes text only in the drawing; PowerPoint writes a placeholder's text in the
 *    list and points at it from the drawing. Text in the list that no shape points at and that is
 *    not the same as a shape's comes first (so text in both places is read once). A field's "*"
 *    (slide number, date, header, footer) is left out; CString records (names, tags) are not read.
 *  - Output, as for a PPTX: a block per slide, "Slide N:", its paragraphs (\r ends one; a vertical
 *    tab is a line break), then "Speaker notes:" and the notes page's text; slides without text
 *    add nothing. Masters and handouts are not read.
 *
 * Contract: as extract.ts's other readers (collectParts: at most `maxPages` slides, none started
 * past `maxChars`; no text atom decoded past `maxChars`). At most MAX_RECORDS records are read
 * and MAX_TEXT_BYTES of text decoded (a DocumentError past either), containers deeper than
 * MAX_DEPTH are skipped, and at most MAX_EDITS saves and MAX_PERSIST_WORDS persist entries are
 * read. A compound file without a PowerPoint 97-2003 document is notValid("ppt"); a damaged
 * compound file throws cfb.ts's CfbError (extract.ts words both alike); an encrypted file is
 * "password-protected".
 */
import { CompoundFile } from "./cfb.js";
import type { DocumentResult } from "./extract.js";
import { collectParts, DocumentError, notValid, type TextLimits } from "./parts.js";

export const MAX_RECORDS = 500_000;
const MAX_DEPTH = 32;
/** UserEditAtoms followed back (one per save), and persist directory entries read in all */
const MAX_EDITS = 10_000;
const MAX_PERSIST_WORDS = 5_000_000;
/** text bytes decoded in all (a slide listed many times is read each time) */
const MAX_TEXT_BYTES = 32 * 1024 * 1024;

const RT = {
  document: 0x03e8, slide: 0x03ee, slideAtom: 0x03ef, notes: 0x03f0, notesAtom: 0x03f1, slidePersist: 0x03f3, drawing: 0x040c,
  outlineTextRef: 0x0f9e, textHeader: 0x0f9f, textChars: 0x0fa0, textBytes: 0x0fa8, slideList: 0x0ff0, userEdit: 0x0ff5,
  currentUser: 0x0ff6, persistDirectory: 0x1772, cryptSession: 0x2f14, clientTextbox: 0xf00d,
};
/** SlideListWithText instances */
const SLIDES = 0;
const NOTES = 2;
/** atoms marking a field's "*" in a text: slide number, date-time, generic date, header, footer, RTF date-time */
const FIELDS = new Set([0x0fd8, 0x0ff7, 0x0ff8, 0x0ff9, 0x0ffa, 0x1015]);
/** the CurrentUserAtom's headerToken of an encrypted file */
const ENCRYPTED = 0xf3d1c4df;

interface Rec {
  type: number;
  instance: number;
  container: boolean;
  /** the header's offset, the data's start and end */
  at: number;
  start: number;
  end: number;
}

/** A text as stored: its characters, the positions of its fields' "*", or a reference to the list's texts. */
interface RawText {
  chars: string;
  fields: number[];
  ref?: number;
}

/** A slide's (or notes page's) entry in a SlideListWithText. */
interface ListEntry {
  persistId: number;
  slideId: number;
  texts: RawText[];
}

/** A slide to read: its container, its notes page's, and their list entries. */
interface Page {
  slide?: Rec;
  entry?: ListEntry;
  notes?: Rec;
  notesEntry?: ListEntry;
}

export async function pptText(bytes: Uint8Array, limits: TextLimits): Promise<DocumentResult> {
  const cfb = CompoundFile.open(bytes);
  const entry = cfb.find("PowerPoint Document");
  if (entry?.type !== "stream") throw cfb.find("EncryptedPackage") ? new DocumentError("it is password-protected") : notValid("ppt");
  const s = new Records(cfb.read(entry), limits.maxChars + 1);
  const pages = deck(s, currentEdit(cfb));
  return collectParts(pages.length, limits, (i, room) => pageText(s, pages[i]!, i + 1, room), "slide");
}

/** The CurrentUserAtom's offset of the newest UserEditAtom; undefined without a readable one. */
function currentEdit(cfb: CompoundFile): number | undefined {
  const entry = cfb.find("Current User");
  if (entry?.type !== "stream" || entry.size < 20 || entry.size > 4096) return undefined;
  let bytes: Uint8Array;
  try {
    bytes = cfb.read(entry);
  } catch {
    return undefined; // damaged: the stream itself may still be read
  }
  const s = new Records(bytes, 0);
  const atom = s.record(0);
  if (atom?.type !== RT.currentUser || atom.end - atom.start < 12) return undefined;
  if (s.u32(atom.start + 4) === ENCRYPTED) throw new DocumentError("it is password-protected");
  return s.u32(atom.start + 8);
}

/** The slides in order, by the persist directory, else by the stream's order. */
function deck(s: Records, current: number | undefined): Page[] {
  const persist = persistDirectory(s, current) ?? persistDirectory(s, s.topLevel(new Set([RT.userEdit])).at(-1)?.at);
  if (persist?.encryption !== undefined && s.recordOf(persist.offsets.get(persist.encryption), RT.cryptSession)) throw new DocumentError("it is password-protected");
  const document = persist ? s.recordOf(persist.offsets.get(persist.document), RT.document) : undefined;
  const slides = document ? slideList(s, document, SLIDES) : undefined;
  if (persist && slides) {
    const notes = new Map((slideList(s, document!, NOTES) ?? []).map((e) => [e.slideId, e]));
    return slides.map((entry) => {
      const slide = s.recordOf(persist.offsets.get(entry.persistId), RT.slide);
      const notesEntry = slide ? notes.get(notesIdRef(s, slide)) : undefined;
      const notesPage = notesEntry ? s.recordOf(persist.offsets.get(notesEntry.persistId), RT.notes) : undefined;
      return { entry, ...(slide ? { slide } : {}), ...(notesEntry ? { notesEntry } : {}), ...(notesPage ? { notes: notesPage } : {}) };
    });
  }
  // no persist directory, or no slide list: the containers in the stream's order
  const top = s.topLevel(new Set([RT.document, RT.slide, RT.notes]));
  const lastDocument = document ?? top.findLast((r) => r.type === RT.document);
  const containers = top.filter((r) => r.type === RT.slide);
  if (!lastDocument && containers.length === 0) throw notValid("ppt");
  const listed = (lastDocument ? slideList(s, lastDocument, SLIDES) : undefined) ?? [];
  const entries = listed.length === containers.length ? listed : [];
  const notes = new Map(top.filter((r) => r.type === RT.notes).map((r) => [notesSlideId(s, r), r]));
  return containers.map((slide, i) => {
    const entry = entries[i];
    const notesPage = entry ? notes.get(entry.slideId) : undefined;
    return { slide, ...(entry ? { entry } : {}), ...(notesPage ? { notes: notesPage } : {}) };
  });
}

/**
 * The persist directory from the UserEditAtom at `offset` back through the older ones (a newer
 * save's entry wins), with the Document's persist id and, for an encrypted file, its
 * CryptSession's; undefined when no UserEditAtom is there.
 */
function persistDirectory(s: Records, offset: number | undefined): { offsets: Map<number, number>; document: number; encryption?: number } | undefined {
  const offsets = new Map<number, number>();
  const seen = new Set<number>();
  let words = 0;
  let first: { document: number; encryption?: number } | undefined;
  for (let at = offset; at !== undefined && !seen.has(at) && seen.size < MAX_EDITS;) {
    seen.add(at);
    const edit = s.recordOf(at, RT.userEdit);
    if (!edit || edit.end - edit.start < 28) break;
    first ??= { document: s.u32(edit.start + 16)!, ...(edit.end - edit.start >= 32 ? { encryption: s.u32(edit.start + 28)! } : {}) };
    const directory = s.recordOf(s.u32(edit.start + 12), RT.persistDirectory);
    for (let p = directory?.start ?? 0; directory && p + 4 <= directory.end && words < MAX_PERSIST_WORDS;) {
      const head = s.u32(p)!;
      p += 4;
      for (let k = 0; k < head >>> 20 && p + 4 <= directory.end; k++, p += 4, words++) {
        const id = (head & 0xfffff) + k;
        if (!offsets.has(id)) offsets.set(id, s.u32(p)!);
      }
    }
    const previous = s.u32(edit.start + 8)!;
    at = previous === 0 ? undefined : previous;
  }
  return first && { offsets, ...first };
}

/** A SlideListWithText's entries (of `instance`: slides or notes) and the texts listed under each; undefined without that list. */
function slideList(s: Records, document: Rec, instance: number): ListEntry[] | undefined {
  const list = s.find(document, (r) => r.type === RT.slideList && r.instance === instance);
  if (!list) return undefined;
  const out: ListEntry[] = [];
  let text: RawText | undefined;
  for (const r of s.children(list)) {
    const entry = out.at(-1);
    if (r.type === RT.slidePersist && r.end - r.start >= 16) {
      out.push({ persistId: s.u32(r.start)!, slideId: s.u32(r.start + 12)!, texts: [] });
      text = undefined;
    } else if (r.type === RT.textHeader && entry) {
      text = { chars: "", fields: [] };
      entry.texts.push(text);
    } else if (text) s.addToText(r, text);
  }
  return out;
}

/** a Slide container's SlideAtom's notesIdRef (0: none) */
function notesIdRef(s: Records, slide: Rec): number {
  const atom = s.find(slide, (r) => r.type === RT.slideAtom && r.end - r.start >= 20);
  return atom ? s.u32(atom.start + 16)! : 0;
}

/** a Notes container's NotesAtom's slideIdRef */
function notesSlideId(s: Records, notes: Rec): number {
  const atom = s.find(notes, (r) => r.type === RT.notesAtom && r.end - r.start >= 4);
  return atom ? s.u32(atom.start)! : 0;
}

/** "Slide N:", its paragraphs, "Speaker notes:" and theirs; "" for a slide without text. */
function pageText(s: Records, page: Page, n: number, room: number): string {
  const body = page.slide ? paragraphs(s, page.slide, page.entry, room) : [];
  const notes = page.notes ? paragraphs(s, page.notes, page.notesEntry, room) : [];
  if (body.length === 0 && notes.length === 0) return "";
  return [`Slide ${n}:`, ...body, ...(notes.length > 0 ? ["Speaker notes:", ...notes] : [])].join("\n");
}

/**
 * A slide's (notes page's) paragraphs: its list texts no shape points at and no shape repeats,
 * then its shapes' texts in drawing order (a reference read from the list); stops past `room`.
 */
function paragraphs(s: Records, container: Rec, entry: ListEntry | undefined, room: number): string[] {
  const listed = entry?.texts ?? [];
  const used = new Set<number>();
  const shapes: string[] = [];
  let chars = 0;
  for (const raw of s.textboxes(container)) {
    if (chars > room) break;
    const ref = raw.ref !== undefined && raw.chars === "" ? listed[raw.ref] : undefined;
    if (ref) used.add(raw.ref!);
    const text = clean(ref ?? raw);
    if (text) shapes.push(text);
    chars += text.length;
  }
  const seen = new Set(shapes);
  const rest = listed.flatMap((raw, i) => (used.has(i) ? [] : [clean(raw)])).filter((t) => t && !seen.has(t));
  return [...rest, ...shapes];
}

/** a text's paragraphs, one a line, without fields' "*" and empty paragraphs */
function clean(raw: RawText): string {
  let chars = "";
  let from = 0;
  for (const p of [...new Set(raw.fields)].sort((a, b) => a - b)) {
    if (raw.chars[p] !== "*") continue;
    chars += raw.chars.slice(from, p);
    from = p + 1;
  }
  chars += raw.chars.slice(from);
  return chars.split("\r").map((p) => p.replace(/\v/g, "\n")).filter((p) => p.trim() !== "").join("\n");
}

/** The stream's records, read with bounds checks and a cap on how many are read. */
class Records {
  private readonly view: DataView;
  private count = 0;
  private textBytes = 0;

  /** `maxChars`: the most characters of one text atom decoded */
  constructor(private readonly bytes: Uint8Array, private readonly maxChars: number) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  u32(at: number | undefined): number | undefined {
    return at !== undefined && at >= 0 && at + 4 <= this.bytes.byteLength ? this.view.getUint32(at, true) : undefined;
  }

  /** the record at `at`, if its header and data fit before `limit` */
  record(at: number, limit = this.bytes.byteLength): Rec | undefined {
    if (at < 0 || at + 8 > limit) return undefined;
    if (++this.count > MAX_RECORDS) throw new DocumentError(`it has more than ${MAX_RECORDS} records, more than are read`);
    const head = this.view.getUint16(at, true);
    const end = at + 8 + this.view.getUint32(at + 4, true);
    if (end > limit) return undefined;
    return { type: this.view.getUint16(at + 2, true), instance: head >>> 4, container: (head & 0xf) === 0xf, at, start: at + 8, end };
  }

  /** the record at `at` when it is of `type` */
  recordOf(at: number | undefined, type: number): Rec | undefined {
    const rec = at === undefined ? undefined : this.record(at);
    return rec?.type === type ? rec : undefined;
  }

  /** a container's records in order, up to one that does not fit */
  *children(parent: Rec): Generator<Rec> {
    if (!parent.container) return;
    for (let r = this.record(parent.start, parent.end); r; r = this.record(r.end, parent.end)) yield r;
  }

  /** a container's first record that `match` takes */
  find(parent: Rec, match: (r: Rec) => boolean): Rec | undefined {
    for (const r of this.children(parent)) if (match(r)) return r;
    return undefined;
  }

  /** the stream's top-level records of `types`, up to one that does not fit */
  topLevel(types: ReadonlySet<number>): Rec[] {
    const out: Rec[] = [];
    for (const r of this.children({ type: 0, instance: 0, container: true, at: -8, start: 0, end: this.bytes.byteLength })) if (types.has(r.type)) out.push(r);
    return out;
  }

  /** The texts of a slide's or notes page's text boxes (OfficeArtClientTextbox in its PPDrawing), in drawing order. */
  textboxes(container: Rec): RawText[] {
    const out: RawText[] = [];
    const walk = (rec: Rec, depth: number): void => {
      if (rec.type === RT.clientTextbox) {
        const text: RawText = { chars: "", fields: [] };
        for (const r of this.children(rec)) this.addToText(r, text);
        out.push(text);
      } else if (depth < MAX_DEPTH) {
        for (const r of this.children(rec)) walk(r, depth + 1);
      }
    };
    for (const r of this.children(container)) if (r.type === RT.drawing) walk(r, 0);
    return out;
  }

  /** a text atom's characters (at most maxChars), a field's position or an outline reference, added to `text` */
  addToText(r: Rec, text: RawText): void {
    const size = r.end - r.start;
    if (r.type === RT.textChars) text.chars += this.slice(r.start, Math.min(size, this.maxChars * 2) & ~1).toString("utf16le");
    else if (r.type === RT.textBytes) text.chars += this.slice(r.start, Math.min(size, this.maxChars)).toString("latin1");
    else if (FIELDS.has(r.type) && size >= 4) text.fields.push(this.u32(r.start)!);
    else if (r.type === RT.outlineTextRef && size >= 4) text.ref = this.u32(r.start)!;
  }

  private slice(start: number, length: number): Buffer {
    this.textBytes += length;
    if (this.textBytes > MAX_TEXT_BYTES) throw new DocumentError(`its text runs past ${MAX_TEXT_BYTES / 1024 / 1024} MB, more than is read`);
    return Buffer.from(this.bytes.buffer, this.bytes.byteOffset + start, length);
  }
}
