/**
 * A file name a page suggested (Content-Disposition, `<a download>`, the URL) made safe to
 * create in the workspace's downloads folder: one name, never a path (`/`, `\` and what
 * precedes them go), no `..` (runs of dots become one), no hidden file (leading dots go), no control characters nor
 * characters Windows or shells trip over (`:*?"<>|` become `_`), whitespace collapsed, at most
 * MAX_NAME_BYTES bytes of UTF-8 with the extension kept; "download" (with an extension from the
 * MIME type when known) when nothing is left. A leading `-` goes too (it reads as an option). `withSuffix` gives the names tried when one is
 * taken: `report.pdf`, `report-2.pdf`, `report-3.pdf`...
 */

/** bytes of a saved name at most (file systems allow 255) */
export const MAX_NAME_BYTES = 120;
const MAX_EXTENSION_CHARS = 16;

const EXTENSION_BY_MIME: Record<string, string> = {
  "application/pdf": ".pdf", "application/zip": ".zip", "application/json": ".json", "text/plain": ".txt", "text/csv": ".csv",
  "text/html": ".html", "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
};

/** `text` cut to at most `maxBytes` bytes of UTF-8, never inside a character. */
function cutUtf8(text: string, maxBytes: number): string {
  let out = "";
  let bytes = 0;
  for (const ch of text) {
    const n = Buffer.byteLength(ch);
    if (bytes + n > maxBytes) break;
    out += ch;
    bytes += n;
  }
  return out;
}

/** [stem, extension (with its dot, or "")] */
function splitExtension(name: string): [string, string] {
  const m = /^(.+?)(\.[A-Za-z0-9]{1,16})$/.exec(name);
  return m ? [m[1]!, m[2]!] : [name, ""];
}

/** A safe, non-empty file name for `suggested` (see the module's comment). */
export function safeFileName(suggested: string, mime?: string): string {
  let name = suggested.normalize("NFC");
  // a path: only its last part
  name = name.split(/[/\\]/).pop() ?? "";
  name = name
    .replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g, "")
    .replace(/[:*?"<>|]/g, "_")
    .replace(/\.{2,}/g, ".")
    .replace(/\s+/g, " ")
    .trim()
    // no hidden files, no "." or "..", no leading "-" (an option to a command), no trailing dots
    .replace(/^[.\s-]+/, "")
    .replace(/[.\s]+$/, "");
  let [stem, ext] = splitExtension(name);
  if (ext.length > MAX_EXTENSION_CHARS + 1) ext = "";
  stem = cutUtf8(stem, MAX_NAME_BYTES - Buffer.byteLength(ext)).trim().replace(/[.\s]+$/, "");
  if (!stem) return `download${ext || (mime ? EXTENSION_BY_MIME[mime] ?? "" : "")}`;
  return `${stem}${ext}`;
}

/** The `n`th name to try for `name` (1: the name itself, 2: `stem-2.ext`, ...), within MAX_NAME_BYTES. */
export function withSuffix(name: string, n: number): string {
  if (n <= 1) return name;
  const [stem, ext] = splitExtension(name);
  const suffix = `-${n}`;
  return `${cutUtf8(stem, MAX_NAME_BYTES - Buffer.byteLength(ext) - suffix.length)}${suffix}${ext}`;
}
