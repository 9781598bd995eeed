/**
 * Parsing of untrusted bytes: size cap, then JSON.parse with a reviver that drops nothing but
 * refuses `__proto__`, `constructor` and `prototype` keys, then a nesting-depth check.
 * Every failure is a LurkError with a code the caller can reply with.
 */
import { LurkError } from "./errors.js";

export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;
export const DEFAULT_MAX_DEPTH = 64;

const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);

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
  checkDepth(parsed, maxDepth);
  return parsed;
}

function checkDepth(root: unknown, maxDepth: number): void {
  // iterative walk: a deeply nested payload must not overflow our own stack
  const stack: Array<[unknown, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (value === null || typeof value !== "object") continue;
    if (depth > maxDepth) throw new LurkError("UNSAFE_PAYLOAD", `payload nests deeper than ${maxDepth} levels`);
    for (const child of Array.isArray(value) ? value : Object.values(value)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
}
