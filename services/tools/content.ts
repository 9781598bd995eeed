/** Helpers for tool output: byte caps on UTF-8 text, image sniffing, error results. */
import { cutUtf8 } from "../../shared/runtime/cut-utf8.js";
import { LurkError, type ErrorCode } from "../../shared/contract/index.js";
import type { ToolContent, ToolResult } from "./tool.js";

/** Image types a `read` returns as an image block, by magic bytes. */
export function sniffImage(head: Uint8Array): string | undefined {
  const at = (i: number) => head[i];
  const ascii = (from: number, text: string) => [...text].every((c, i) => at(from + i) === c.charCodeAt(0));
  if ([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((b, i) => at(i) === b)) return "image/png";
  if (at(0) === 0xff && at(1) === 0xd8 && at(2) === 0xff) return "image/jpeg";
  if (ascii(0, "GIF87a") || ascii(0, "GIF89a")) return "image/gif";
  if (ascii(0, "RIFF") && ascii(8, "WEBP")) return "image/webp";
  return undefined;
}

/** The longest prefix of `text` that is at most `maxBytes` in UTF-8, cut on a character boundary (shared/runtime/cut-utf8.ts). */
export { cutUtf8 };

/** True if the bytes look binary (a NUL byte), the way git and grep decide. */
export function looksBinary(head: Uint8Array): boolean {
  return head.includes(0);
}


/**
 * The safety net for any tool: text blocks beyond `capBytes` in total are cut, with a note.
 * Tools that page (like `read`) stay under the cap themselves and are not touched.
 */
export function capTextContent(result: ToolResult, capBytes: number): ToolResult {
  let used = 0;
  let cut = false;
  const content: ToolContent[] = [];
  for (const block of result.content) {
    if (block.type !== "text") {
      content.push(block);
      continue;
    }
    const size = Buffer.byteLength(block.text, "utf8");
    if (!cut && used + size <= capBytes) {
      used += size;
      content.push(block);
      continue;
    }
    if (!cut) {
      const text = cutUtf8(block.text, Math.max(0, capBytes - used));
      content.push({ type: "text", text: `${text}\n[output cut at ${capBytes} bytes]` });
      used = capBytes;
      cut = true;
    }
  }
  return cut ? { ...result, content } : result;
}

/** A failure as a tool result the model reads. */
export function errorResult(code: ErrorCode, message: string): ToolResult {
  return { content: [{ type: "text", text: message }], isError: true, errorCode: code };
}

/** Any thrown value as a tool result (LurkErrors keep their code; others are TOOL_FAILED). */
export function resultFromError(err: unknown): ToolResult {
  const e = LurkError.from(err, "TOOL_FAILED");
  return errorResult(e.code, e.message);
}
