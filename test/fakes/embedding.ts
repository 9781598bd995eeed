/**
 * The fake providers' embedding model: deterministic and meaningful enough for a test to show
 * ranking by meaning. A text's words (lower case, English stopwords dropped) are mapped through
 * a small hand-made concept lexicon ("car", "automobile", "vehicle", "sedan" -> one concept),
 * every concept or other word is hashed (FNV-1a) to one of FAKE_EMBED_DIMENSIONS dimensions
 * and counted, and the counts are L2-normalized. So "automobile" is close to a paragraph about a
 * car that shares no word with it, and shared words still count. A text with no word is the
 * zero vector.
 */

export const FAKE_EMBED_DIMENSIONS = 256;

const CONCEPTS: Record<string, string[]> = {
  vehicle: ["car", "cars", "automobile", "automobiles", "vehicle", "vehicles", "sedan", "hatchback", "motorcar"],
  coffee: ["coffee", "espresso", "latte", "cappuccino", "americano"],
  pet: ["dog", "dogs", "puppy", "cat", "cats", "kitten", "pet", "pets"],
  medicine: ["doctor", "physician", "dentist", "clinic", "medic"],
  boat: ["boat", "kayak", "canoe", "sailboat"],
  travel: ["trip", "trips", "journey", "travel", "voyage", "flight"],
};
const LEXICON = new Map(Object.entries(CONCEPTS).flatMap(([concept, words]) => words.map((w) => [w, `concept:${concept}`] as const)));
const STOPWORDS = new Set(["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "i", "in", "is", "it", "its", "my", "of", "on", "or", "the", "to", "was", "were", "with"]);

function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The fake model's vector of `text` (unit length, or zeros). */
export function fakeEmbedding(text: string, dimensions = FAKE_EMBED_DIMENSIONS): number[] {
  const v = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    if (STOPWORDS.has(word)) continue;
    v[fnv1a(LEXICON.get(word) ?? word) % dimensions]! += 1;
  }
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return norm > 0 ? v.map((x) => x / norm) : v;
}

/** Base64 of little-endian float32s, as OpenAI answers `encoding_format: "base64"`. */
export function base64Float32(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((x, i) => bytes.writeFloatLE(x, i * 4));
  return bytes.toString("base64");
}

/** What a fake embeddings endpoint does with one request: answer (the default), fail with an HTTP status, or never answer. */
export type FakeEmbedReply = { kind: "ok" } | { kind: "error"; status: number; message?: string; headers?: Record<string, string> } | { kind: "hang" };

/** One embeddings request as a fake received it. */
export interface EmbedRequestRecord {
  model: string;
  input: string[];
  /** OpenAI: the encoding_format sent (the SDK sends "base64" unless told otherwise) */
  encodingFormat?: string;
  /** OpenAI: the Authorization header (which auth profile asked) */
  authorization?: string;
  reply: FakeEmbedReply;
}
