/**
 * `read`: a text file from the workspace, as numbered lines (`cat -n` style: the line number
 * right-aligned in 6 columns, a tab, the line), so the model can page with `offset` and cite
 * lines. Lines are cut at 2000 characters; `\r` before `\n` is dropped. The output never exceeds
 * config.tools.outputCapBytes; when the file continues, a last line says which `offset` reads
 * on and the reply's `truncated` names the file. The file is streamed, so a huge file costs
 * only what is shown. PNG, JPEG, GIF and WebP files (by magic bytes) come back as an image
 * block (base64) if they fit the image cap. A PDF or office document (DOCX, XLSX, PPTX, ODT, ODS,
 * ODP, DOC, XLS, PPT; by magic bytes and extension, see shared/runtime/documents/formats.ts) of at most
 * DOCUMENT_MAX_BYTES is read here, in the pool worker (the readers load on the first document),
 * and its extracted text is numbered and paged like a file's lines, under a line saying what it
 * is; one that cannot be read is an error with the reason. Other binary files are refused. Besides the workspace,
 * `read` (and only read) opens files under the skill folders by absolute path, read-only
 * (`<home>/skills`, the bundled skills; see skill-roots.ts and ConfinedFs readOnlyRoots).
 */
import { z } from "zod";
import { LurkError } from "../../../shared/contract/index.js";
import { sniffDocument, type DocumentFormat } from "../../../shared/runtime/documents/formats.js";
import { cutUtf8, looksBinary, sniffImage } from "../content.js";
import { DOCUMENT_LIMITS, DOCUMENT_MAX_BYTES, documentBody, documentSummary, documentTooLarge, noTextNote, unreadableDocument, recognizedText } from "../documents.js";
import { readAt, type ConfinedFile } from "../fs-confined.js";
import { defineTool, type ToolContext, type ToolResult } from "../tool.js";

export const DEFAULT_LIMIT = 2000;
export const MAX_LINE_CHARS = 2000;
const CHUNK_BYTES = 64 * 1024;
/** a turn of the event loop every 1 MiB read, so an abort is seen while skipping to a far offset */
const YIELD_EVERY_CHUNKS = 16;
/** room kept under the cap for the closing note */
const NOTE_RESERVE = 300;

const parameters = z.object({
  path: z.string().min(1).max(4096).describe("The file to read, relative to the workspace root (or the absolute path of a skill's file, as the skills list gives it)"),
  offset: z.number().int().min(1).optional().describe("The 1-based line number to start at (default 1)"),
  limit: z.number().int().min(1).max(100_000).optional().describe(`How many lines to return at most (default ${DEFAULT_LIMIT})`),
});

export const readTool = defineTool({
  name: "read",
  description: "Read a file from the workspace. Text comes back as numbered lines (number, tab, line); "
    + `at most ${DEFAULT_LIMIT} lines per call by default and the output is size-capped, so for a long file read on with offset (a 1-based line number) `
    + "as the last line of the output tells you. Lines longer than 2000 characters are cut. PNG, JPEG, GIF and WebP images come back as images. "
    + "PDFs and office documents (DOCX, XLSX, PPTX, ODT, ODS, ODP) come back as their extracted text, numbered and paged the same way "
    + "(spreadsheets as a \"Sheet: <name>\" block of comma-separated rows per sheet, presentations as a \"Slide N:\" block per slide); "
    + `at most ${DOCUMENT_MAX_BYTES / 1024 / 1024} MB and ${DOCUMENT_LIMITS.maxPages} pages are read.`,
  parameters,
  sideEffects: false,
  parallelSafe: true,
  groups: ["fs", "read-only"],
  async execute(args, ctx) {
    // skills outside the workspace (user and bundled) are listed in the prompt by absolute path
    const file = await ctx.fs.openRead(args.path, { readOnlyRoots: true });
    try {
      const head = await readAt(file.handle, 0, 8192);
      const mime = sniffImage(head);
      if (mime) return await readImage(file, mime, ctx);
      const format = sniffDocument(head, file.path);
      if (format) return await readDocument(file, format, args.offset ?? 1, args.limit ?? DEFAULT_LIMIT, ctx);
      if (looksBinary(head)) {
        throw new LurkError("TOOL_FAILED", `"${file.path}" is a binary file (${file.stat.size} bytes); read shows text files, PDF and office documents, and PNG, JPEG, GIF or WebP images only`);
      }
      const source: LineSource = { chunk: (position) => readAt(file.handle, position, CHUNK_BYTES), name: `"${file.path}"`, rest: "the file continues", path: file.path, totalBytes: file.stat.size };
      return await readLines(source, args.offset ?? 1, args.limit ?? DEFAULT_LIMIT, ctx);
    } finally {
      await file.close();
    }
  },
});

async function readImage(file: ConfinedFile, mime: string, ctx: ToolContext): Promise<ToolResult> {
  const cap = ctx.limits.imageCapBytes;
  if (file.stat.size > cap) {
    throw new LurkError("LIMIT_EXCEEDED", `"${file.path}" is a ${mime} image of ${file.stat.size} bytes, over the ${cap}-byte cap for images; it cannot be shown`);
  }
  const data = await readAt(file.handle, 0, cap + 1);
  if (data.length > cap) throw new LurkError("LIMIT_EXCEEDED", `"${file.path}" grew over the ${cap}-byte image cap while it was read`);
  return {
    content: [
      { type: "text", text: `${file.path}: ${mime} image, ${data.length} bytes` },
      { type: "image", mime, dataBase64: data.toString("base64") },
    ],
  };
}

/** A document's extracted text as numbered lines, under a line saying what it is (extraction: shared/runtime/documents/extract.ts). */
async function readDocument(file: ConfinedFile, format: DocumentFormat, offset: number, limit: number, ctx: ToolContext): Promise<ToolResult> {
  const what = `"${file.path}"`;
  if (file.stat.size > DOCUMENT_MAX_BYTES) throw documentTooLarge(what, format, file.stat.size);
  const bytes = await readAt(file.handle, 0, DOCUMENT_MAX_BYTES + 1);
  if (bytes.length > DOCUMENT_MAX_BYTES) throw documentTooLarge(what, format);
  ctx.progress(`reading the text of ${file.path}`);
  // the readers load in this worker thread on the first document only
  const { default: extractDocumentText } = await import("../../../shared/runtime/documents/extract.js");
  const result = await extractDocumentText({ format, bytes, ...DOCUMENT_LIMITS, ...(ctx.limits.bwrapPath ? { bwrapPath: ctx.limits.bwrapPath } : {}) });
  if (ctx.signal.aborted) throw new LurkError("ABORTED", "the read was stopped");
  if (!result.ok) throw unreadableDocument(what, format, result.reason);
  let body = documentBody(result);
  let summary = documentSummary(format, result);
  // a scanned PDF: its pages' text by OCR (media.ocr) when the host has it
  if (body === "" && format === "pdf" && result.pages !== undefined && ctx.limits.ocr) {
    const recognized = await recognizedText(bytes, result.pages, ctx.limits.ocr, ctx);
    if (recognized) [body, summary] = [recognized.text, recognized.summary];
  }
  const text = Buffer.from(body, "utf8");
  if (text.length === 0) return { content: [{ type: "text", text: noTextNote(file.path, format) }] };
  const header = `${file.path}: ${summary}, ${text.length} bytes of text as numbered lines:\n`;
  const source: LineSource = {
    chunk: async (position) => text.subarray(position, position + CHUNK_BYTES),
    name: `the text extracted from "${file.path}"`,
    rest: "the text continues",
    path: file.path,
    totalBytes: text.length,
    header,
  };
  return readLines(source, offset, limit, ctx);
}

/** Where numbered lines come from: a file, or a document's extracted text. */
interface LineSource {
  /** up to CHUNK_BYTES bytes at `position`; empty at the end */
  chunk(position: number): Promise<Buffer>;
  /** how the closing notes name it, and say that there is more */
  name: string;
  rest: string;
  /** workspace path `read` pages again (the reply's `truncated`) */
  path: string;
  totalBytes: number;
  /** a line put before the numbered lines */
  header?: string;
}

async function readLines(source: LineSource, offset: number, limit: number, ctx: ToolContext): Promise<ToolResult> {
  const header = source.header ?? "";
  const budget = Math.max(256, ctx.limits.outputCapBytes - NOTE_RESERVE - Buffer.byteLength(header, "utf8"));
  const out: string[] = [];
  let used = 0;
  let lineNo = 0;
  let stop: "eof" | "limit" | "cap" = "eof";

  /** one whole line; returns false to stop reading */
  const onLine = (line: string, long: boolean): boolean => {
    lineNo++;
    if (lineNo < offset) return true;
    if (out.length === limit) {
      stop = "limit";
      return false;
    }
    const text = long ? `${line.slice(0, MAX_LINE_CHARS)} [... line cut at ${MAX_LINE_CHARS} characters]` : line.replace(/\r$/, "");
    let formatted = `${String(lineNo).padStart(6)}\t${text}\n`;
    const size = Buffer.byteLength(formatted, "utf8");
    if (used + size > budget) {
      if (out.length > 0) {
        stop = "cap";
        return false;
      }
      // a single line over the cap: show what fits so paging always moves on
      formatted = `${cutUtf8(formatted, budget - 40)} [... line cut to fit the output cap]\n`;
    }
    out.push(formatted);
    used += Buffer.byteLength(formatted, "utf8");
    return true;
  };

  const decoder = new TextDecoder("utf-8");
  let current = "";
  let long = false;
  let position = 0;
  let done = false;
  let chunks = 0;
  while (!done) {
    // in the worker the reads are sync: let the pool's "abort" message in now and then
    if (++chunks % YIELD_EVERY_CHUNKS === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    if (ctx.signal.aborted) throw new LurkError("ABORTED", "the read was stopped");
    const chunk = await source.chunk(position);
    position += chunk.length;
    const text = chunk.length > 0 ? decoder.decode(chunk, { stream: true }) : decoder.decode();
    let start = 0;
    for (;;) {
      const nl = text.indexOf("\n", start);
      const piece = text.slice(start, nl === -1 ? text.length : nl);
      if (!long) {
        current += piece;
        if (current.length > MAX_LINE_CHARS) {
          current = current.slice(0, MAX_LINE_CHARS);
          long = true;
        }
      }
      if (nl === -1) break;
      if (!onLine(current, long)) {
        done = true;
        break;
      }
      current = "";
      long = false;
      start = nl + 1;
    }
    if (!done && chunk.length === 0) {
      if (current.length > 0 || long) onLine(current, long);
      done = true;
    }
  }

  const shown = out.length;
  if (shown === 0) {
    if (lineNo === 0) return { content: [{ type: "text", text: `(${source.path} is empty)` }] };
    throw new LurkError("TOOL_INVALID_ARGS", `offset ${offset} is past the end of ${source.name}, which has ${lineNo} line${lineNo === 1 ? "" : "s"}`);
  }
  const first = offset;
  const last = offset + shown - 1;
  if (stop === "eof") return { content: [{ type: "text", text: header + out.join("") }] };
  const why = stop === "cap" ? `output capped at ${ctx.limits.outputCapBytes} bytes` : `limit of ${limit} lines reached`;
  const note = `[${why}: showed lines ${first}-${last} of ${source.name} (${source.totalBytes} bytes); ${source.rest}: read again with offset=${last + 1}]`;
  return {
    content: [{ type: "text", text: header + out.join("") + note }],
    truncated: { fullOutputPath: source.path, totalBytes: source.totalBytes },
  };
}
