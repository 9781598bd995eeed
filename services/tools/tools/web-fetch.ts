/**
 * `web_fetch`: one web page as readable text. http and https only; every hop (the first
 * request and each redirect, at most 5) is checked and pinned to a public address by
 * web/http.ts (tools.web.allowPrivateHosts names the exceptions). HTML is converted to text
 * (web/html.ts), other text types come back as they are. A PDF or office document (by its
 * content type, or by its first bytes and the URL's extension when the type is generic or not
 * a text one) is read up to DOCUMENT_MAX_BYTES and handed to the actor's document worker
 * (`ctx.host.documents`: a thread of its own, never this one); its text comes back, or an error
 * with the reason (password-protected, damaged, too large). Other binary content is refused. The
 * body is read up to tools.web.maxBodyBytes; the text up to `maxChars` and config.tools.outputCapBytes.
 * Text cut at either limit is kept whole in the workspace (`.lurkbot/outputs/<toolCallId>.txt`,
 * named in the reply's `truncated`), so `read` can page past the cap, as with exec.
 * Network I/O, so it runs in the tools actor's main thread (`runsIn: "process"`).
 */
import { z } from "zod";
import { LurkError } from "../../../shared/contract/index.js";
import { formatOf, formatOfMime, GENERIC_TYPES, sniffDocument, type DocumentFormat } from "../../../shared/runtime/documents/formats.js";
import { cutUtf8, looksBinary } from "../content.js";
import { DOCUMENT_LIMITS, DOCUMENT_MAX_BYTES, documentBody, documentSummary, documentTooLarge, noTextNote, unreadableDocument, recognizedText } from "../documents.js";
import { saveOutput } from "../saved-output.js";
import { defineTool, type ToolContext, type ToolResult } from "../tool.js";
import { htmlToText } from "../web/html.js";
import { abortError, guardedFetch, type FetchResult } from "../web/http.js";
import { webContext } from "../web/context.js";

export const DEFAULT_MAX_CHARS = 50_000;
/** room kept under the output cap for the header and notes */
const NOTE_RESERVE = 1024;

const parameters = z.object({
  url: z.string().min(1).max(8192).describe("The absolute http:// or https:// URL to fetch"),
  maxChars: z.number().int().min(100).max(1_000_000).optional().describe(`The most characters of text to return (default ${DEFAULT_MAX_CHARS})`),
});

type Kind = "html" | "text" | "binary";

function kindOf(mime: string, body: Buffer): Kind {
  const head = body.subarray(0, 8192);
  if (looksBinary(head)) return "binary";
  if (mime === "text/html" || mime === "application/xhtml+xml") return "html";
  if (mime === "") return /^\s*(<!doctype html|<html)/i.test(head.toString("latin1")) ? "html" : "text";
  if (mime.startsWith("text/") || /^application\/([\w.+-]*\+)?(json|xml|javascript|ecmascript|x-javascript|yaml|x-yaml|toml|x-ndjson|ld\+json|rss\+xml|atom\+xml|sql|graphql)$/.test(mime)) return "text";
  return /[+/](json|xml)$/.test(mime) ? "text" : "binary";
}

/** The document format of a response: by its type, else (a generic or binary type) by its first bytes and the URL path. */
function documentOf(mime: string, res: FetchResult): DocumentFormat | undefined {
  const byType = formatOfMime(mime);
  if (byType) return byType;
  if (!GENERIC_TYPES.has(mime) && kindOf(mime, res.body) !== "binary") return undefined;
  return sniffDocument(res.body.subarray(0, 8192), new URL(res.url).pathname);
}

/** The body cap for a response: DOCUMENT_MAX_BYTES for what its type (or a generic type and the URL's extension) says is a document. */
function bodyCap(maxBodyBytes: number) {
  return (contentType: string, url: URL): number => {
    return formatOf(contentType, url.pathname) ? DOCUMENT_MAX_BYTES : maxBodyBytes;
  };
}

/** A document's text, read in the actor's document worker; an error the model can act on when it cannot be. */
async function documentText(res: FetchResult, format: DocumentFormat, ctx: ToolContext, signal: AbortSignal): Promise<{ text: string; summary: string }> {
  if (res.truncated || res.body.length > DOCUMENT_MAX_BYTES) throw documentTooLarge(res.url, format);
  const documents = ctx.host?.documents;
  if (!documents) throw new LurkError("TOOL_FAILED", "this tools actor does not read documents");
  ctx.progress(`reading the text of a ${format.toUpperCase()} (${res.body.length} bytes)`);
  const result = await documents.extract(format, res.body, { ...DOCUMENT_LIMITS, ...(ctx.limits.bwrapPath ? { bwrapPath: ctx.limits.bwrapPath } : {}) }, signal);
  if (signal.aborted) throw abortError(signal);
  if (!result.ok) {
    ctx.host?.rt?.log.warn({ url: res.url.slice(0, 500), format, reason: result.reason, detail: result.detail }, "web_fetch could not read a document's text");
    throw unreadableDocument(res.url, format, result.reason);
  }
  const text = documentBody(result);
  // a scanned PDF: its pages' text by OCR (media.ocr) when the host has it
  if (text === "" && format === "pdf" && result.pages !== undefined && ctx.limits.ocr) {
    const recognized = await recognizedText(res.body, result.pages, ctx.limits.ocr, { progress: ctx.progress, signal });
    if (recognized) return recognized;
  }
  return { text: text === "" ? noTextNote(res.url, format) : text, summary: documentSummary(format, result) };
}

function decode(res: FetchResult, kind: Kind): string {
  let charset = /charset\s*=\s*"?([^";\s]+)/i.exec(res.contentType)?.[1];
  if (!charset && kind === "html") charset = /<meta[^>]+charset\s*=\s*["']?([^"'>\s;/]+)/i.exec(res.body.subarray(0, 4096).toString("latin1"))?.[1];
  try {
    return new TextDecoder(charset ?? "utf-8").decode(res.body);
  } catch {
    return new TextDecoder("utf-8").decode(res.body);
  }
}

export const webFetchTool = defineTool({
  name: "web_fetch",
  description: "Fetch a web page (http or https) and return it as readable text: HTML is converted to text (headings, paragraphs, "
    + "list items, links as \"text (url)\"); other text types come back as they are. PDFs and office documents (DOCX, XLSX, PPTX, ODT, ODS, ODP) "
    + `up to ${DOCUMENT_MAX_BYTES / 1024 / 1024} MB come back as their extracted text (at most ${DOCUMENT_LIMITS.maxPages} pages; spreadsheets as a "Sheet: <name>" block of `
    + "comma-separated rows per sheet, presentations as a \"Slide N:\" block per slide). Other binary content (images, archives) is refused. "
    + "Redirects are followed. Private and local network addresses cannot be fetched. Long pages are cut: pass maxChars for more or less.",
  parameters,
  sideEffects: false,
  parallelSafe: true,
  groups: ["group:web"],
  runsIn: "process",
  async execute(args, ctx): Promise<ToolResult> {
    const { web, signal } = webContext(ctx, "web_fetch");
    ctx.progress(`fetching ${args.url.slice(0, 200)}`);
    const res = await guardedFetch(args.url, { maxBytes: web.maxBodyBytes, maxBytesFor: bodyCap(web.maxBodyBytes), signal, allowPrivateHosts: web.allowPrivateHosts });
    const mime = res.contentType.split(";")[0]!.trim().toLowerCase();
    const format = documentOf(mime, res);
    const kind = kindOf(mime, res.body);
    if (!format && kind === "binary") {
      throw new LurkError("TOOL_FAILED", `${res.url} is ${mime || "binary content"} (HTTP ${res.status}), not text; web_fetch returns HTML, text, PDF and office documents only`);
    }
    const converted: { text: string; title?: string; summary?: string } = format
      ? await documentText(res, format, ctx, signal)
      : kind === "html" ? htmlToText(decode(res, kind), res.url) : { text: decode(res, kind) };

    const header = [`URL: ${res.url}`];
    if (res.redirects.length > 0) header.push(`Redirected from: ${args.url.slice(0, 2000)} (${res.redirects.length} redirect${res.redirects.length === 1 ? "" : "s"})`);
    header.push(`Status: ${res.status}`, `Content-Type: ${res.contentType || "(none)"}`);
    if (converted.title) header.push(`Title: ${converted.title}`);
    if (converted.summary) header.push(`Document: ${converted.summary}`);

    const notes: string[] = [];
    if (res.truncated && !format) notes.push(`[the body was cut at ${web.maxBodyBytes} bytes (tools.web.maxBodyBytes); the rest was not downloaded]`);
    const maxChars = args.maxChars ?? DEFAULT_MAX_CHARS;
    let text = converted.text;
    if (text.length > maxChars) {
      notes.push(`[text cut at ${maxChars} of ${text.length} characters]`);
      text = text.slice(0, maxChars);
    }
    const headerText = `${header.join("\n")}\n\n`;
    const budget = Math.max(256, ctx.limits.outputCapBytes - NOTE_RESERVE - Buffer.byteLength(headerText, "utf8"));
    if (Buffer.byteLength(text, "utf8") > budget) {
      text = cutUtf8(text, budget);
      notes.push(`[text cut at ${ctx.limits.outputCapBytes} bytes of output (tools.outputCapBytes)]`);
    }
    let truncated: ToolResult["truncated"];
    if (text.length < converted.text.length) {
      // keep the whole text where read can page through it
      const full = Buffer.from(converted.text, "utf8");
      try {
        const path = await saveOutput(ctx.fs, [full], ctx.call?.toolCallId ?? `web-fetch-${Date.now()}`);
        truncated = { fullOutputPath: path, totalBytes: full.length };
        notes.push(`[the full text (${full.length} bytes) is saved in ${path}: page through it with read (path "${path}", offset)]`);
      } catch (err) {
        notes.push(`[the full text could not be saved (${LurkError.from(err).message}); pass a smaller maxChars]`);
      }
    }
    const body = text.length > 0 ? text : "(no text content)";
    const result: ToolResult = {
      content: [{ type: "text", text: `${headerText}${body}${notes.length > 0 ? `\n\n${notes.join("\n")}` : ""}` }],
      ...(truncated ? { truncated } : {}),
    };
    if (res.status >= 400) return { ...result, isError: true, errorCode: "TOOL_FAILED" };
    return result;
  },
});
