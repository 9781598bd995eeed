/**
 * The old binary Office formats through catdoc's programs (Debian: `apt-get install catdoc`), run
 * in the bubblewrap sandbox (sandbox.ts) in a temporary directory, or as a plain child with a clean
 * environment when bubblewrap cannot run here:
 *  - a Word 97-2003 document (.doc; also an RTF saved as .doc) through `catdoc -w -d utf-8`;
 *  - an Excel 97-2003 workbook (.xls) through `xls2csv -d utf-8`: a block per sheet ("Sheet 2"),
 *    rows of comma-separated cells like an XLSX's (the format has the sheets' names elsewhere;
 *    xls2csv does not print them).
 * PowerPoint 97-2003 (.ppt) is read by ppt.ts instead (catppt finds no text in decks LibreOffice saves).
 *
 * Contract: the DocumentResult of extract.ts (never throws for a bad file): at most `maxChars`
 * characters, at most `maxPages` sheets, within `timeoutMs`; the programs missing, a damaged or
 * encrypted file, or no answer in time are `{ ok: false, reason }` with the cause in `detail`.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DocumentResult } from "./extract.js";
import { bwrapWorks, findProgram, runProgram } from "../sandbox.js";
import { collectParts, csvCell, wholeText } from "./parts.js";

export type LegacyFormat = "doc" | "xls";

export interface LegacyOptions {
  maxChars: number;
  maxPages: number;
  timeoutMs: number;
  bwrapPath: string;
}

const PROGRAMS: Record<LegacyFormat, { name: string; args: (file: string) => string[]; what: string }> = {
  doc: { name: "catdoc", args: (file) => ["-w", "-d", "utf-8", file], what: "old Word (.doc) files" },
  xls: { name: "xls2csv", args: (file) => ["-d", "utf-8", file], what: "old Excel (.xls) files" },
};

export async function legacyOfficeText(format: LegacyFormat, bytes: Uint8Array, opts: LegacyOptions): Promise<DocumentResult> {
  const program = PROGRAMS[format];
  const path = findProgram(program.name);
  if (!path) return { ok: false, reason: `${program.what} cannot be read on this host (catdoc is not installed)`, detail: "install catdoc: sudo apt-get install catdoc" };
  const dir = await mkdtemp(join(tmpdir(), "lurkbot-office-"));
  try {
    await writeFile(join(dir, `in.${format}`), bytes);
    const deadline = Date.now() + opts.timeoutMs;
    const bwrap = (await bwrapWorks(opts.bwrapPath)) ? opts.bwrapPath : undefined;
    const run = await runProgram([path, ...program.args(`in.${format}`)], dir, bwrap, deadline);
    if (run.code !== 0) {
      if (Date.now() >= deadline) return { ok: false, reason: `reading it took longer than ${Math.round(opts.timeoutMs / 1000)} s` };
      return { ok: false, reason: "the file is damaged, password-protected or not really this format", detail: `${program.name} exit ${run.code}: ${run.stderr.trim().slice(0, 300)}` };
    }
    // a DOC's pages (form feeds) are paragraphs apart; the clean-up is the other readers'
    return format === "doc" ? wholeText(run.stdout.replace(/\f/g, "\n\n"), opts.maxChars) : await sheetsText(run.stdout, opts);
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** xls2csv's output: sheets apart by form feeds, rows of quoted cells; empty sheets dropped, each a "Sheet N" block. */
function sheetsText(raw: string, opts: LegacyOptions): Promise<DocumentResult> {
  const sheets = raw.split("\f").map((rows, i) => ({ rows: rows.trim(), n: i + 1 })).filter((s) => s.rows !== "");
  return collectParts(sheets.length, opts, (i) => `Sheet ${sheets[i]!.n}\n${sheets[i]!.rows.split(/\r?\n/).map(unquoteRow).join("\n")}`, "sheet");
}

/** `"Rent","1200"` -> `Rent,1200` (a cell with a comma or quote stays quoted, CSV-style). */
function unquoteRow(row: string): string {
  const cells: string[] = [];
  const re = /"((?:[^"]|"")*)"|([^,]*)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(row)) !== null) {
    cells.push(csvCell(m[1] !== undefined ? m[1].replace(/""/g, '"') : m[2] ?? ""));
    if (re.lastIndex >= row.length) break;
    re.lastIndex++; // the comma
  }
  return cells.join(",");
}
