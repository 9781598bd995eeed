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

/**
 * The deepest `{`/`[` nesting of a JSON text, ignoring brackets inside strings. A char-code
 * scan: about 6x faster than a regex walk, which allocated a match per quote and bracket.
 */
function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  for (let i = 0, n = text.length; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // skip the string: to its closing quote, past escaped characters
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === BACKSLASH) i++;
        else if (d === QUOTE) break;
      }
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) max = depth;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return max;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** The bytes `value` takes on the bus as JSON (UTF-8). */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}
