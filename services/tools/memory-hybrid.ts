/**
 * Hybrid ranking for `memory_search` with embeddings (pure: no I/O). Candidates are the union of
 * the best chunks by keywords (BM25, memory-index.ts) and the best by meaning (cosine similarity
 * of unit vectors to the query's), `candidates` of each; each gets
 *   score = textWeight × BM25 / (the best BM25 of this search) + vectorWeight × max(0, cosine),
 * with textWeight = 1 - vectorWeight, so scores run from 0 to 1. A chunk without a vector (over
 * maxChunks, or of another length than the query's) competes by keywords alone.
 */
import { keywordScores, snippetOf, type Chunk, type IndexedDoc, type SearchHit } from "./memory-index.js";
import { compareCodeUnits } from "../../shared/runtime/order.js";

export interface HybridHit extends SearchHit {
  /** BM25 / best BM25 (0 without a keyword match) */
  textScore: number;
  /** cosine similarity to the query (undefined: the chunk has no vector) */
  vectorScore: number | undefined;
}

export interface HybridOptions {
  maxResults: number;
  vectorWeight: number;
  /** drop results below this hybrid score (0..1) */
  minScore?: number;
  snippetChars?: number;
}

/** How many candidates each side contributes. */
export const candidateCount = (maxResults: number) => Math.max(maxResults * 4, 20);

export function hybridSearch(docs: readonly IndexedDoc[], query: string, queryVector: Float32Array, vectorOf: (chunk: Chunk) => Float32Array | undefined, opts: HybridOptions): HybridHit[] {
  const k = candidateCount(opts.maxResults);
  const keyword = keywordScores(docs, query).sort((a, b) => b.score - a.score);
  const best = keyword[0]?.score ?? 0;
  // each chunk's cosine, computed once (a chunk without a vector of the query's length has none)
  const cosines = new Map<Chunk, number>();
  const byMeaning: Array<{ path: string; chunk: Chunk; cosine: number }> = [];
  for (const doc of docs) {
    for (const chunk of doc.chunks) {
      const v = vectorOf(chunk);
      if (!v || v.length !== queryVector.length) continue;
      const cosine = dot(queryVector, v);
      cosines.set(chunk, cosine);
      byMeaning.push({ path: doc.path, chunk, cosine });
    }
  }
  byMeaning.sort((a, b) => b.cosine - a.cosine);

  const candidates = new Map<Chunk, { path: string; matched: string[]; text: number }>();
  for (const s of keyword.slice(0, k)) candidates.set(s.chunk, { path: s.path, matched: s.matched, text: best > 0 ? s.score / best : 0 });
  for (const m of byMeaning.slice(0, k)) if (!candidates.has(m.chunk)) candidates.set(m.chunk, { path: m.path, matched: [], text: 0 });

  const textWeight = 1 - opts.vectorWeight;
  const ranked: Array<{ hit: HybridHit; chunk: Chunk }> = [];
  for (const [chunk, c] of candidates) {
    const cosine = cosines.get(chunk);
    const score = textWeight * c.text + opts.vectorWeight * Math.max(0, cosine ?? 0);
    if (opts.minScore !== undefined && score < opts.minScore) continue;
    ranked.push({ chunk, hit: { path: c.path, startLine: chunk.startLine, endLine: chunk.endLine, heading: chunk.heading, score, matched: c.matched, snippet: "", textScore: c.text, vectorScore: cosine } });
  }
  ranked.sort((a, b) => b.hit.score - a.hit.score || compareCodeUnits(a.hit.path, b.hit.path) || a.hit.startLine - b.hit.startLine);
  return ranked.slice(0, opts.maxResults).map(({ hit, chunk }) => ({ ...hit, snippet: snippetOf(chunk, chunk.startLine, new Set(hit.matched), opts.snippetChars ?? 320) }));
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}
