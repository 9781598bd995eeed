/**
 * The vectors one hybrid `memory_search` needs, gathered in its pool worker through
 * `ctx.embeddings` (embeddings/types.ts): the query's, and those of at most `maxChunks` memory
 * passages (MEMORY.md first, then the most recently changed files). A passage is known by the
 * SHA-256 of its text: a vector this worker got for the last search is reused as is, the others
 * are looked up in the actor's cache, and only the passages found nowhere are embedded, in the
 * same request as the query (texts cut to MAX_EMBED_TEXT_BYTES). A cached vector of another
 * length than the query's (the model changed) is embedded again. Rejects with the LurkError of a
 * failed lookup or embedding; the caller then ranks by keywords.
 */
import { createHash } from "node:crypto";
import { cutUtf8 } from "./content.js";
import type { MemoryVectors } from "./embeddings/types.js";
import type { Chunk, IndexedDoc } from "./memory-index.js";

/** bytes of a passage that are embedded (embedding models read a few thousand tokens at most) */
export const MAX_EMBED_TEXT_BYTES = 6_000;

export interface MemoryDoc extends IndexedDoc {
  mtimeMs: number;
}

export interface SearchVectors {
  query: Float32Array;
  of(chunk: Chunk): Float32Array | undefined;
  /** passages with a vector (at most maxChunks) */
  withVectors: number;
}

const hashes = new WeakMap<Chunk, string>();
/** the vectors of the last search in this worker, by model and hash (chunk objects live in the index cache) */
let recent = new Map<string, Float32Array>();

export function chunkHash(chunk: Chunk): string {
  let hash = hashes.get(chunk);
  if (hash === undefined) hashes.set(chunk, (hash = createHash("sha256").update(chunk.text).digest("hex")));
  return hash;
}

/** The passages that get vectors: MEMORY.md, then files newest first, at most `max`. */
export function chunksForVectors(docs: readonly MemoryDoc[], max: number): Chunk[] {
  const ordered = [...docs].sort((a, b) => Number(b.path === "MEMORY.md") - Number(a.path === "MEMORY.md") || b.mtimeMs - a.mtimeMs || (a.path < b.path ? -1 : 1));
  const out: Chunk[] = [];
  for (const doc of ordered) {
    for (const chunk of doc.chunks) {
      if (out.length >= max) return out;
      out.push(chunk);
    }
  }
  return out;
}

export async function searchVectors(docs: readonly MemoryDoc[], query: string, access: MemoryVectors): Promise<SearchVectors> {
  const chosen = chunksForVectors(docs, access.maxChunks);
  const textOf = new Map(chosen.map((c) => [chunkHash(c), c.text]));
  const key = (hash: string) => `${access.model}\u0000${hash}`;
  const found = new Map<string, Float32Array>();
  const unknown: string[] = [];
  for (const hash of textOf.keys()) {
    const v = recent.get(key(hash));
    if (v) found.set(hash, v);
    else unknown.push(hash);
  }
  if (unknown.length > 0) {
    const looked = await access.lookup(unknown);
    unknown.forEach((hash, i) => {
      const v = looked[i];
      if (v) found.set(hash, v);
    });
  }
  const embed = async (list: string[], withQuery: boolean) => {
    const texts = list.map((h) => cutUtf8(textOf.get(h)!, MAX_EMBED_TEXT_BYTES));
    const vectors = await access.embed(withQuery ? [cutUtf8(query, MAX_EMBED_TEXT_BYTES), ...texts] : texts, withQuery ? [null, ...list] : list);
    const own = withQuery ? vectors.slice(1) : vectors;
    list.forEach((h, i) => found.set(h, own[i]!));
    return vectors[0]!;
  };
  const missing = [...textOf.keys()].filter((h) => !found.has(h));
  const queryVector = await embed(missing, true);
  const stale = [...found].filter(([, v]) => v.length !== queryVector.length).map(([h]) => h);
  if (stale.length > 0) await embed(stale, false);
  recent = new Map([...found].map(([h, v]) => [key(h), v]));
  const byChunk = new Map(chosen.map((c) => [c, found.get(chunkHash(c))]));
  return { query: queryVector, of: (chunk) => byChunk.get(chunk), withVectors: chosen.length };
}
