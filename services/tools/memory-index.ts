/**
 * The keyword index behind `memory_search` (pure: no I/O). A memory file is split into chunks
 * (by Markdown headings, then by paragraphs; long paragraphs by line count), each with its line
 * range and the heading it sits under. Text is tokenized for a multilingual workspace: lower
 * case (NFKC), words for Latin and other space-separated scripts, overlapping character bigrams
 * for Han, Hiragana, Katakana and Hangul runs (a one-character run is a unigram), so a Chinese
 * or Japanese query matches without a segmenter. Ranking is Okapi BM25 (k1 1.2, b 0.75) over
 * all chunks of all files, plus a small additive boost for query terms in the chunk's heading
 * and a multiplicative boost when the query occurs verbatim (as a phrase) in the chunk.
 * Scores are raw BM25 values: comparable within one search, not across corpora.
 */
import { compareCodeUnits } from "../../shared/runtime/order.js";

export const BM25_K1 = 1.2;
export const BM25_B = 0.75;
/** weight of the idf of each query term found in the chunk's heading */
export const HEADING_BOOST = 0.3;
/** factor for a chunk that contains the whole query as a phrase (2+ tokens) */
export const PHRASE_BOOST = 1.25;
/** a paragraph longer than this is split into pieces of this many lines */
export const MAX_CHUNK_LINES = 40;

/** Han, kana, Hangul, and the katakana prolonged sound mark (Script=Common) */
const CJK = "\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}\\u30FC";
const TOKEN_RE = new RegExp(`[${CJK}]+|(?:(?![${CJK}])[\\p{L}\\p{N}\\p{M}])+`, "gu");
const CJK_RUN = new RegExp(`^[${CJK}]`, "u");

/** Common English function words: they carry no meaning in a keyword search. */
const STOPWORDS = new Set([
  "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "has", "have", "i", "if", "in", "is", "it",
  "its", "of", "on", "or", "so", "that", "the", "this", "to", "was", "were", "what", "when", "which", "who", "with",
]);

/** Lower-case search tokens of `text`: words, CJK bigrams; English stopwords dropped. */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  for (const match of text.normalize("NFKC").toLowerCase().matchAll(TOKEN_RE)) {
    const run = match[0];
    if (CJK_RUN.test(run)) {
      const chars = Array.from(run);
      if (chars.length === 1) out.push(chars[0]!);
      for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i]! + chars[i + 1]!);
    } else if (!STOPWORDS.has(run)) {
      out.push(run);
    }
  }
  return out;
}

/** Whitespace-collapsed lower-case text, for phrase matching. */
export function normalizeForPhrase(text: string): string {
  return text.normalize("NFKC").toLowerCase().replace(/\s+/g, " ").trim();
}

export interface Chunk {
  /** 1-based, inclusive */
  startLine: number;
  endLine: number;
  /** the nearest heading above (or of) the chunk, without the #s; "" before the first heading */
  heading: string;
  text: string;
  /** term -> count */
  tf: Map<string, number>;
  length: number;
  headingTerms: Set<string>;
  phraseText: string;
}

const HEADING_RE = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const FENCE_RE = /^ {0,3}(```|~~~)/;

/** Splits a Markdown file into chunks with line ranges (see the module note). */
export function chunkMarkdown(content: string): Chunk[] {
  const lines = content.split("\n").map((l) => l.replace(/\r$/, ""));
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  const chunks: Chunk[] = [];
  let heading = "";
  let start = -1; // index of the first line of the open chunk
  let inFence = false;

  const close = (endExclusive: number) => {
    if (start < 0) return;
    let end = endExclusive;
    while (end > start && lines[end - 1]!.trim() === "") end--;
    for (let s = start; s < end; s += MAX_CHUNK_LINES) {
      const e = Math.min(end, s + MAX_CHUNK_LINES);
      chunks.push(makeChunk(lines.slice(s, e).join("\n"), s + 1, e, heading));
    }
    start = -1;
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (FENCE_RE.test(line)) {
      if (start < 0) start = i;
      inFence = !inFence;
      continue;
    }
    if (inFence) continue;
    const h = HEADING_RE.exec(line);
    if (h) {
      close(i);
      heading = h[2]!;
      start = i; // the heading line opens the section's first chunk
      continue;
    }
    if (line.trim() === "") {
      // a blank line right after a heading keeps the heading with its first paragraph
      if (start >= 0 && lines.slice(start, i).some((l) => l.trim() !== "" && !HEADING_RE.test(l))) close(i);
      continue;
    }
    if (start < 0) start = i;
  }
  close(lines.length);
  return chunks;
}

function makeChunk(text: string, startLine: number, endLine: number, heading: string): Chunk {
  const tokens = tokenize(text);
  const tf = new Map<string, number>();
  for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
  return { startLine, endLine, heading, text, tf, length: tokens.length, headingTerms: new Set(tokenize(heading)), phraseText: normalizeForPhrase(text) };
}

export interface IndexedDoc {
  path: string;
  chunks: Chunk[];
}

export interface SearchHit {
  path: string;
  startLine: number;
  endLine: number;
  heading: string;
  score: number;
  /** the query terms this chunk contains (body or heading) */
  matched: string[];
  snippet: string;
}

export interface SearchOptions {
  maxResults: number;
  minScore?: number;
  snippetChars?: number;
}

/** A chunk that contains a query term, with its BM25 score (boosts included). */
export interface KeywordScore {
  path: string;
  chunk: Chunk;
  score: number;
  /** the query terms this chunk contains (body or heading) */
  matched: string[];
}

/** The BM25 score of every chunk of `docs` that contains a query term, in document order. */
export function keywordScores(docs: readonly IndexedDoc[], query: string): KeywordScore[] {
  const terms = [...new Set(tokenize(query))];
  if (terms.length === 0) return [];
  let n = 0;
  let totalLength = 0;
  const df = new Map<string, number>(terms.map((t) => [t, 0]));
  for (const doc of docs) {
    for (const chunk of doc.chunks) {
      n++;
      totalLength += chunk.length;
      for (const t of terms) if (chunk.tf.has(t)) df.set(t, df.get(t)! + 1);
    }
  }
  if (n === 0) return [];
  const avgdl = totalLength / n || 1;
  const idf = new Map(terms.map((t) => [t, Math.log(1 + (n - df.get(t)! + 0.5) / (df.get(t)! + 0.5))]));
  const phrase = terms.length >= 2 ? normalizeForPhrase(query) : "";

  const scored: KeywordScore[] = [];
  for (const doc of docs) {
    for (const chunk of doc.chunks) {
      let score = 0;
      const matched: string[] = [];
      for (const t of terms) {
        const f = chunk.tf.get(t) ?? 0;
        const inHeading = chunk.headingTerms.has(t);
        if (f === 0 && !inHeading) continue;
        matched.push(t);
        if (f > 0) score += idf.get(t)! * (f * (BM25_K1 + 1)) / (f + BM25_K1 * (1 - BM25_B + BM25_B * chunk.length / avgdl));
        if (inHeading) score += HEADING_BOOST * idf.get(t)!;
      }
      if (matched.length === 0) continue;
      if (phrase && chunk.phraseText.includes(phrase)) score *= PHRASE_BOOST;
      scored.push({ path: doc.path, chunk, score, matched });
    }
  }
  return scored;
}

/** BM25 over every chunk of `docs`, best first. An empty query (no tokens) finds nothing. */
export function searchDocs(docs: readonly IndexedDoc[], query: string, opts: SearchOptions): SearchHit[] {
  const scored = keywordScores(docs, query).filter((s) => opts.minScore === undefined || s.score >= opts.minScore);
  scored.sort((a, b) => b.score - a.score || compareCodeUnits(a.path, b.path) || a.chunk.startLine - b.chunk.startLine);
  return scored.slice(0, opts.maxResults).map(({ path, chunk, score, matched }) => ({
    path, startLine: chunk.startLine, endLine: chunk.endLine, heading: chunk.heading, score, matched,
    snippet: snippetOf(chunk, chunk.startLine, new Set(matched), opts.snippetChars ?? 320),
  }));
}

/**
 * The lines of a chunk around its best-matching line (most distinct matched terms), each
 * prefixed with its line number, cut to about `maxChars`.
 */
export function snippetOf(chunk: Chunk, startLine: number, terms: ReadonlySet<string>, maxChars: number): string {
  const lines = chunk.text.split("\n");
  let best = 0;
  let bestCount = -1;
  lines.forEach((line, i) => {
    const toks = new Set(tokenize(line));
    let count = 0;
    for (const t of terms) if (toks.has(t)) count++;
    if (count > bestCount) {
      best = i;
      bestCount = count;
    }
  });
  const out: string[] = [];
  let used = 0;
  for (let i = Math.max(0, best - 1); i < lines.length && used < maxChars; i++) {
    let line = lines[i]!;
    if (line.trim() === "" && out.length === 0) continue;
    if (line.length > maxChars - used) line = `${Array.from(line).slice(0, Math.max(40, maxChars - used)).join("")}…`;
    out.push(`${startLine + i}: ${line}`);
    used += line.length + 1;
  }
  return out.join("\n");
}
