/**
 * Parsing of untrusted bytes: size cap, nesting-depth check on the text, then JSON.parse (with a
 * reviver that refuses `__proto__`, `constructor` and `prototype` keys when the text could hold one).
 * Every failure is a LurkError with a code the caller can reply with.
 */
import { LurkError } from "./errors.js";

export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;
export const DEFAULT_MAX_DEPTH = 64;

const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);
const MAYBE_FORBIDDEN = /__proto__|constructor|prototype|\\u/;

export interface SafeParseLimits {
  maxBytes?: number;
  maxDepth?: number;
}

export function safeParseJson(data: Uint8Array | string, limits: SafeParseLimits = {}): unknown {
  const maxBytes = limits.maxBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  const maxDepth = limits.maxDepth ?? DEFAULT_MAX_DEPTH;
  const size = typeof data === "string" ? Buffer.byteLength(data) : data.byteLength;
  if (size > maxBytes) {
    throw new LurkError("PAYLOAD_TOO_LARGE", `payload is ${size} bytes; the cap is ${maxBytes}`);
  }
  const text = typeof data === "string" ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("utf8");
  if (text.trim().length === 0) throw new LurkError("BAD_JSON", "payload is empty; a JSON document was expected");
  // measured on the text first: a reviver on a deeply nested document would overflow the stack
  const depth = nestingDepth(text);
  if (depth > maxDepth) throw new LurkError("UNSAFE_PAYLOAD", `payload nests deeper than ${maxDepth} levels`);
  // fast path: without these words (or a \u escape that could spell them) no key can be one
  if (!MAYBE_FORBIDDEN.test(text)) {
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new LurkError("BAD_JSON", `payload is not valid JSON: ${(err as Error).message}`);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text, (key, value) => {
      if (FORBIDDEN_KEYS.has(key)) throw new LurkError("UNSAFE_PAYLOAD", `forbidden key "${key}" in payload`);
      return value;
    });
  } catch (err) {
    if (LurkError.is(err)) throw err;
    throw new LurkError("BAD_JSON", `payload is not valid JSON: ${(err as Error).message}`);
  }
  return parsed;
}

/** The deepest `{`/`[` nesting of a JSON text, ignoring brackets inside strings. */
function nestingDepth(text: string): number {
  const interesting = /[{}[\]"\\]/g;
  let depth = 0;
  let max = 0;
  let inString = false;
  let match: RegExpExecArray | null;
  while ((match = interesting.exec(text)) !== null) {
    const c = match[0];
    if (inString) {
      if (c === "\\") interesting.lastIndex++; // skip the escaped character
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") {
      if (++depth > max) max = depth;
    } else if (c === "}" || c === "]") depth--;
  }
  return max;
}
