/**
 * OCR of scanned PDFs with the system's poppler (`pdftoppm`: pages to grayscale PNG) and
 * Tesseract (`tesseract`: PNG to text), each run in the bubblewrap sandbox (sandbox.ts) in a
 * temporary directory, or, when bubblewrap cannot run here, as a plain child with a clean
 * environment in that directory. Debian: `apt-get install poppler-utils tesseract-ocr`
 * (plus `tesseract-ocr-<lang>` for other languages).
 *
 * Contract:
 * - `probeOcr(bwrapPath)` says once whether OCR can run (both programs found, the languages
 *   asked for installed) and how (sandboxed or not), or why not.
 * - `ocrImage(bytes, opts)` reads one image's text (VALIDATION_FAILED when Tesseract cannot).
 * - `ocrPdf(bytes, opts)` reads at most `maxPages` pages, in order, within `timeoutMs` in all
 *   (a page not done by then ends the reading: the pages read so far are returned with
 *   `complete: false`); a signal stops it at once (ABORTED). A PDF pdftoppm cannot render
 *   rejects with VALIDATION_FAILED. The temporary directory is always removed.
 */
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LurkError } from "../../contract/index.js";
import { bwrapWorks, executable, findProgram, runProgram as run } from "../sandbox.js";

export interface OcrProbe {
  available: boolean;
  /** bubblewrap runs the programs (false: plain children) */
  sandboxed: boolean;
  /** why OCR is not available, or why it runs unsandboxed */
  reason?: string;
  pdftoppm?: string;
  tesseract?: string;
}

export interface OcrOptions {
  /** Tesseract languages, e.g. "eng" or "eng+deu" */
  languages: string;
  maxPages: number;
  /** rendering resolution of the pages */
  dpi: number;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface OcrResult {
  text: string;
  pagesRead: number;
  /** character offset where each page's text ends */
  pageEnds: number[];
  /** false when the time ran out before the last page asked for */
  complete: boolean;
}

let probed: Promise<OcrProbe> | undefined;
let probedFor: string | undefined;

/** Whether OCR can run here, and how (probed once per process and bwrap path). */
export function probeOcr(bwrapPath: string, languages = "eng"): Promise<OcrProbe> {
  if (!probed || probedFor !== `${bwrapPath}\n${languages}`) {
    probedFor = `${bwrapPath}\n${languages}`;
    probed = probe(bwrapPath, languages);
  }
  return probed;
}

async function probe(bwrapPath: string, languages: string): Promise<OcrProbe> {
  const pdftoppm = findProgram("pdftoppm");
  const tesseract = findProgram("tesseract");
  const missing = [...(pdftoppm ? [] : ["pdftoppm (poppler-utils)"]), ...(tesseract ? [] : ["tesseract (tesseract-ocr)"])];
  if (missing.length > 0) return { available: false, sandboxed: false, reason: `${missing.join(" and ")} not installed (Debian: sudo apt-get install poppler-utils tesseract-ocr)` };
  const dir = await mkdtemp(join(tmpdir(), "lurkbot-ocr-probe-"));
  try {
    // the same sandbox question every sandboxed reader asks (sandbox.ts, once per process)
    const sandboxed = await bwrapWorks(bwrapPath);
    const langs = await run([tesseract!, "--list-langs"], dir, sandboxed ? bwrapPath : undefined, Date.now() + 10_000);
    const installed = new Set(langs.stdout.split("\n").map((l) => l.trim()).filter(Boolean));
    const lacking = languages.split("+").filter((l) => !installed.has(l));
    if (lacking.length > 0) return { available: false, sandboxed, reason: `Tesseract lacks the language data ${lacking.join(", ")} (Debian: sudo apt-get install ${lacking.map((l) => `tesseract-ocr-${l}`).join(" ")})`, pdftoppm, tesseract };
    return { available: true, sandboxed, ...(sandboxed ? {} : { reason: `bubblewrap cannot run here (${executable(bwrapPath) ? "its trial run failed" : `${bwrapPath} not found`}): OCR runs as plain child processes` }), pdftoppm, tesseract };
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** The text of a scanned PDF's pages (see the header). */
export async function ocrPdf(bytes: Uint8Array, probe: OcrProbe, bwrapPath: string, opts: OcrOptions): Promise<OcrResult> {
  if (!probe.available) throw new LurkError("UNAVAILABLE", `OCR is not available: ${probe.reason ?? "unknown"}`);
  const bwrap = probe.sandboxed ? bwrapPath : undefined;
  const deadline = Date.now() + opts.timeoutMs;
  const dir = await mkdtemp(join(tmpdir(), "lurkbot-ocr-"));
  const aborted = () => new LurkError("ABORTED", "the OCR was stopped");
  try {
    await writeFile(join(dir, "in.pdf"), bytes);
    const render = await run([probe.pdftoppm!, "-r", String(opts.dpi), "-gray", "-png", "-f", "1", "-l", String(opts.maxPages), "in.pdf", "page"], dir, bwrap, deadline, opts.signal);
    if (opts.signal?.aborted) throw aborted();
    const pages = (await readdir(dir)).filter((f) => /^page-\d+\.png$/.test(f)).sort((a, b) => pageNumber(a) - pageNumber(b));
    if (render.code !== 0 && pages.length === 0) {
      if (Date.now() >= deadline) throw new LurkError("TIMEOUT", `rendering the PDF's pages took longer than ${Math.round(opts.timeoutMs / 1000)} s`);
      throw new LurkError("VALIDATION_FAILED", `the PDF's pages cannot be rendered: ${render.stderr.trim().split("\n")[0]?.slice(0, 200) || `pdftoppm exit ${render.code}`}`);
    }
    let text = "";
    const pageEnds: number[] = [];
    for (const page of pages) {
      if (Date.now() >= deadline) break;
      const read = await run([probe.tesseract!, page, "stdout", "-l", opts.languages], dir, bwrap, deadline, opts.signal);
      if (opts.signal?.aborted) throw aborted();
      if (read.code !== 0) break; // the time ran out in this page (or it failed): what was read so far stands
      const pageText = read.stdout.replace(/\f/g, "").trim();
      text += (text && pageText ? "\n\n" : "") + pageText;
      pageEnds.push(text.length);
    }
    return { text, pagesRead: pageEnds.length, pageEnds, complete: pageEnds.length === pages.length && render.code === 0 };
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** The text of one image (PNG, JPEG, GIF, WebP, TIFF, BMP: what Tesseract's Leptonica reads), within `timeoutMs`. */
export async function ocrImage(bytes: Uint8Array, probe: OcrProbe, bwrapPath: string, opts: Pick<OcrOptions, "languages" | "timeoutMs" | "signal">): Promise<string> {
  if (!probe.available) throw new LurkError("UNAVAILABLE", `OCR is not available: ${probe.reason ?? "unknown"}`);
  const dir = await mkdtemp(join(tmpdir(), "lurkbot-ocr-"));
  try {
    await writeFile(join(dir, "image"), bytes);
    const read = await run([probe.tesseract!, "image", "stdout", "-l", opts.languages], dir, probe.sandboxed ? bwrapPath : undefined, Date.now() + opts.timeoutMs, opts.signal);
    if (opts.signal?.aborted) throw new LurkError("ABORTED", "the OCR was stopped");
    if (read.code !== 0) throw new LurkError("VALIDATION_FAILED", `the image cannot be read by OCR: ${read.stderr.trim().split("\n").at(-1)?.slice(0, 200) || `tesseract exit ${read.code}`}`);
    return read.stdout.replace(/\f/g, "").trim();
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

const pageNumber = (file: string) => Number(/(\d+)\.png$/.exec(file)?.[1] ?? 0);
