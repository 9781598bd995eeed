/**
 * Markdown pipe tables (GFM: a header row, a delimiter row `| --- | :-: |`, body rows) made
 * readable where the platform renders none (seed 001 `convert_markdown_tables()`), applied by the
 * kit to a reply's text before it is chunked (`markdown.tables` of the channel):
 * - "code": the table as a ``` block with its columns padded to one width (monospace); inline
 *   markup in cells (bold, code spans, links) is reduced to its text;
 * - "bullets": one list item per row: `- **<first cell>**: <cell>` for two columns, else the first
 *   cell in bold followed by one `<header>: <cell>` sub-item per other column;
 * - "off": left as written.
 * Code blocks are never touched. `tableSpans` finds the tables as written (for "off"), so the
 * chunker keeps a table that fits in one message whole.
 */
export type TableMode = "code" | "bullets" | "off";

const DELIMITER = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;
const FENCE_LINE = /^ {0,3}(`{3,}|~{3,})/;

/** The cells of a table row (outer pipes optional, `\|` is a literal pipe). */
export function rowCells(line: string): string[] {
  let body = line.trim();
  if (body.startsWith("|")) body = body.slice(1);
  if (body.endsWith("|") && !body.endsWith("\\|")) body = body.slice(0, -1);
  const cells: string[] = [];
  let cell = "";
  for (let i = 0; i < body.length; i++) {
    const ch = body[i]!;
    if (ch === "\\" && body[i + 1] === "|") {
      cell += "|";
      i++;
    } else if (ch === "|") {
      cells.push(cell.trim());
      cell = "";
    } else cell += ch;
  }
  cells.push(cell.trim());
  return cells;
}

const isRow = (line: string | undefined) => line !== undefined && line.includes("|") && line.trim() !== "";

interface TableAt {
  /** first and one-past-last line index */
  start: number;
  end: number;
  header: string[];
  rows: string[][];
}

/** The tables among `lines`, outside code fences. */
function findTables(lines: string[]): TableAt[] {
  const out: TableAt[] = [];
  let fence: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const f = FENCE_LINE.exec(line);
    if (f) {
      if (!fence) fence = f[1]![0];
      else if (f[1]![0] === fence && line.trim().replace(/[`~]/g, "") === "") fence = undefined;
      continue;
    }
    if (fence) continue;
    if (!isRow(line) || !DELIMITER.test(lines[i + 1] ?? "") || !(lines[i + 1] ?? "").includes("-")) continue;
    const header = rowCells(line);
    // a delimiter row needs a pipe unless the table has one column written with pipes around it
    if (header.length < 2 && !lines[i + 1]!.includes("|")) continue;
    let end = i + 2;
    const rows: string[][] = [];
    while (end < lines.length && isRow(lines[end]) && !FENCE_LINE.test(lines[end]!)) rows.push(rowCells(lines[end++]!));
    out.push({ start: i, end, header, rows });
    i = end - 1;
  }
  return out;
}

/** Inline markup reduced to its text (inside a code block it would show literally). */
function plainCell(cell: string): string {
  return cell
    .replace(/\[([^\]\n]+)\]\(([^)\s]+)\)/g, (_m, t: string, u: string) => (t === u ? u : `${t} (${u})`))
    .replace(/`+([^`]+)`+/g, "$1")
    .replace(/\*\*(\S[^*]*?)\*\*|__(\S[^_]*?)__/g, (_m, a?: string, b?: string) => a ?? b ?? "")
    .replace(/~~(\S[^~]*?)~~/g, "$1")
    .replace(/<br\s*\/?>/gi, " ");
}

/** Display width: wide (CJK, emoji) characters count two columns. */
function width(s: string): number {
  let w = 0;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (cp >= 0x300 && cp <= 0x36f) continue; // combining marks
    w += (cp >= 0x1100 && (cp <= 0x115f || (cp >= 0x2e80 && cp <= 0xa4cf) || (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) || (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1faff) || (cp >= 0x20000 && cp <= 0x3fffd))) ? 2 : 1;
  }
  return w;
}

function asCode(t: TableAt): string {
  const cols = Math.max(t.header.length, ...t.rows.map((r) => r.length));
  const all = [t.header, ...t.rows].map((r) => Array.from({ length: cols }, (_, i) => plainCell(r[i] ?? "")));
  const widths = Array.from({ length: cols }, (_, i) => Math.max(1, ...all.map((r) => width(r[i]!))));
  const line = (r: string[]) => r.map((c, i) => (i === cols - 1 ? c : c + " ".repeat(widths[i]! - width(c)))).join(" | ").trimEnd();
  const rule = widths.map((w) => "-".repeat(w)).join("-+-");
  return ["```", line(all[0]!), rule, ...all.slice(1).map(line), "```"].join("\n");
}

function asBullets(t: TableAt): string {
  const items = t.rows.map((r) => {
    // the label is set in bold: its own emphasis markers would double up
    const label = (r[0] ?? "").replace(/^(\*\*|__)(.*)\1$/, "$2");
    if (t.header.length <= 2) return `- **${label}**${r[1] ? `: ${r[1]}` : ""}`;
    const rest = t.header.slice(1).map((h, i) => ({ h, v: r[i + 1] ?? "" })).filter((x) => x.v !== "");
    return [`- **${label}**`, ...rest.map((x) => `  - ${x.h ? `${x.h}: ` : ""}${x.v}`)].join("\n");
  });
  return items.length ? items.join("\n") : `- ${t.header.map((h) => `**${h}**`).join(", ")}`;
}

/** `md` with its tables converted as `mode` says ("off": unchanged). */
export function convertTables(md: string, mode: TableMode): string {
  if (mode === "off" || !md.includes("|")) return md;
  const lines = md.split("\n");
  const tables = findTables(lines);
  if (tables.length === 0) return md;
  const out: string[] = [];
  let at = 0;
  for (const t of tables) {
    out.push(...lines.slice(at, t.start));
    out.push(mode === "code" ? asCode(t) : asBullets(t));
    at = t.end;
  }
  out.push(...lines.slice(at));
  return out.join("\n");
}

/** Character ranges [start, end) of the tables in `text` as written (outside code fences). */
export function tableSpans(text: string): { start: number; end: number }[] {
  if (!text.includes("|")) return [];
  const lines = text.split("\n");
  const offsets: number[] = [];
  let pos = 0;
  for (const line of lines) {
    offsets.push(pos);
    pos += line.length + 1;
  }
  return findTables(lines).map((t) => ({ start: offsets[t.start]!, end: offsets[t.end - 1]! + lines[t.end - 1]!.length }));
}
