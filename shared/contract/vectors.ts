/**
 * Embedding vectors on the bus: base64 of little-endian IEEE-754 float32s, the format OpenAI's
 * embeddings API answers with `encoding_format: "base64"` (4 bytes a dimension, a third of JSON
 * numbers' size). Decoding checks the length and that every value is finite.
 */
import { endianness } from "node:os";
import { LurkError } from "./errors.js";

const LITTLE = endianness() === "LE";

/** Base64 of `vector` as little-endian float32s. */
export function encodeVector(vector: ArrayLike<number>): string {
  const bytes = Buffer.alloc(vector.length * 4);
  if (LITTLE && vector instanceof Float32Array) bytes.set(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength));
  else for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i]!, i * 4);
  return bytes.toString("base64");
}

/** The float32s of a base64 vector of `dimensions` values; VALIDATION_FAILED when it is not one. */
export function decodeVector(base64: string, dimensions?: number): Float32Array {
  const bytes = Buffer.from(base64, "base64");
  if (bytes.length === 0 || bytes.length % 4 !== 0 || (dimensions !== undefined && bytes.length !== dimensions * 4)) {
    throw new LurkError("VALIDATION_FAILED", `a vector of ${bytes.length} bytes is not ${dimensions ?? "a whole number of"} float32 values`);
  }
  const out = new Float32Array(bytes.length / 4);
  for (let i = 0; i < out.length; i++) {
    const v = bytes.readFloatLE(i * 4);
    if (!Number.isFinite(v)) throw new LurkError("VALIDATION_FAILED", "a vector holds a value that is not a finite number");
    out[i] = v;
  }
  return out;
}

/** Base64 characters of a vector of `dimensions` float32s (for size caps). */
export function encodedVectorLength(dimensions: number): number {
  return 4 * Math.ceil((dimensions * 4) / 3);
}
