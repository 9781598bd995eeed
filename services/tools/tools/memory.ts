/**
 * The memory tools (seeds 001 §3.3 "Memory Recall", 004 workspace layout):
 *
 * `memory_search` {query, maxResults?, minScore?}: keyword search (BM25, see memory-index.ts)
 * over the agent's memory files: MEMORY.md, HISTORY.md and memory/**\/*.md in its workspace.
 * Files over MAX_MEMORY_FILE_BYTES are skipped (and named in the reply). The index lives in
 * module state per workspace (a piscina worker thread keeps it between tasks; each worker has
 * its own) and a file is re-chunked only when its size, mtime or inode changed: a stat per file
 * per call. Every read goes through the confined fs (ctx.fs.openRead); the directory walk only
 * lists names under memory/ and never follows a symlinked directory.
 *
 * With memory.embeddings the ranking is hybrid (memory-hybrid.ts): keywords and the cosine
 * similarity of the passages' vectors to the query's (memory-vectors.ts gathers them through
 * `ctx.embeddings`: this worker's last ones, the actor's LMDB cache, the agent-runner), and the
 * header says so. If the vectors cannot be had (no agent-runner, a provider failure, the time
 * for embeddings used up) the results are the keyword ones, with a note saying why.
 *
 * `memory_get` {path, fromLine?, lines?}: numbered lines of one memory file. Any other path
 * (SOUL.md, ../x, a symlink from memory/ to elsewhere) is refused with FORBIDDEN.
 */
import type { Dirent } from "node:fs";
import { readdir, realpath, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { z } from "zod";
import { LurkError, type ToolDefinition } from "../../../shared/contract/index.js";
import { cutUtf8, looksBinary } from "../content.js";
import type { ConfinedFs } from "../fs-confined.js";
import { hybridSearch, type HybridHit } from "../memory-hybrid.js";
import { chunkMarkdown, searchDocs, type Chunk, type SearchHit } from "../memory-index.js";
import { searchVectors, type MemoryDoc } from "../memory-vectors.js";
import { defineTool, type ToolResult } from "../tool.js";
import { compareCodeUnits } from "../../../shared/runtime/order.js";

export const MAX_MEMORY_FILE_BYTES = 2 * 1024 * 1024;
export const MAX_MEMORY_FILES = 2000;
const MAX_WALK_DEPTH = 8;
export const DEFAULT_GET_LINES = 200;
export const MAX_GET_LINES = 2000;
const MAX_LINE_CHARS = 2000;
const NOTE_RESERVE = 300;

const ROOT_FILES = ["MEMORY.md", "HISTORY.md"];
const MEMORY_DIR = "memory";

/** True for a workspace-relative path (with "/" separators) memory_get may read. */
export function isMemoryPath(rel: string): boolean {
  return ROOT_FILES.includes(rel) || (rel.startsWith(`${MEMORY_DIR}/`) && !rel.split("/").includes(".."));
}

function toPosix(rel: string): string {
  return sep === "/" ? rel : rel.split(sep).join("/");
}

const refusal = (path: string) => new LurkError("FORBIDDEN",
  `memory_get reads only the memory files (MEMORY.md, HISTORY.md and files under memory/); "${path}" is not one. Use read for other files.`);

// ---------------------------------------------------------------- the per-workspace index

interface CachedFile {
  size: number;
  mtimeMs: number;
  ino: number;
  chunks: Chunk[];
}

/** realRoot -> workspace-relative path -> chunks */
const indexes = new Map<string, Map<string, CachedFile>>();

/** test/diagnostic hook: how many files were (re)chunked by the last refresh */
export const indexStats = { lastReindexed: 0 };

/** The memory files of the workspace that exist now (workspace-relative, "/" separators). */
async function listMemoryFiles(fs: ConfinedFs): Promise<string[]> {
  const found: string[] = [];
  for (const name of ROOT_FILES) found.push(name);
  let dirReal: string;
  try {
    dirReal = await realpath(fs.resolve(MEMORY_DIR));
  } catch {
    return found;
  }
  if (!fs.isInside(dirReal)) return found; // memory/ is a symlink out of the workspace: ignore it
  const walk = async (abs: string, rel: string, depth: number): Promise<void> => {
    if (depth > MAX_WALK_DEPTH || found.length >= MAX_MEMORY_FILES) return;
    let entries: Dirent[];
    try {
      entries = await readdir(abs, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => compareCodeUnits(a.name, b.name));
    for (const e of entries) {
      if (found.length >= MAX_MEMORY_FILES) return;
      if (e.name.startsWith(".")) continue;
      const childRel = `${rel}/${e.name}`;
      if (e.isDirectory()) await walk(join(abs, e.name), childRel, depth + 1);
      // a symlinked file is allowed here; openRead confines it and the real path is checked
      else if ((e.isFile() || e.isSymbolicLink()) && /\.md$/i.test(e.name)) found.push(childRel);
    }
  };
  await walk(dirReal, MEMORY_DIR, 1);
  return found;
}

/** Brings the workspace's index up to date; returns the docs and the files skipped as too big. */
async function refreshIndex(fs: ConfinedFs, signal: AbortSignal): Promise<{ docs: MemoryDoc[]; skipped: string[] }> {
  let cache = indexes.get(fs.realRoot);
  if (!cache) indexes.set(fs.realRoot, (cache = new Map()));
  const paths = await listMemoryFiles(fs);
  const docs: MemoryDoc[] = [];
  const skipped: string[] = [];
  const seen = new Set<string>();
  indexStats.lastReindexed = 0;
  for (const rel of paths) {
    if (signal.aborted) throw new LurkError("ABORTED", "the search was stopped");
    let st;
    try {
      st = await stat(fs.resolve(rel));
    } catch {
      continue; // missing (MEMORY.md not written yet) or vanished
    }
    if (!st.isFile()) continue;
    if (st.size > MAX_MEMORY_FILE_BYTES) {
      skipped.push(`${rel} (${st.size} bytes)`);
      continue;
    }
    seen.add(rel);
    const cached = cache.get(rel);
    if (cached && cached.size === st.size && cached.mtimeMs === st.mtimeMs && cached.ino === st.ino) {
      docs.push({ path: rel, chunks: cached.chunks, mtimeMs: cached.mtimeMs });
      continue;
    }
    try {
      const file = await fs.openRead(rel);
      let data: Buffer;
      let fileStat;
      try {
        if (!isMemoryPath(toPosix(relative(fs.realRoot, file.realPath)))) continue; // a symlink to a non-memory file
        fileStat = file.stat;
        if (fileStat.size > MAX_MEMORY_FILE_BYTES) continue;
        data = await file.handle.readFile();
      } finally {
        await file.close();
      }
      if (looksBinary(data.subarray(0, 8192))) continue;
      const chunks = chunkMarkdown(data.toString("utf8"));
      cache.set(rel, { size: fileStat.size, mtimeMs: fileStat.mtimeMs, ino: fileStat.ino, chunks });
      indexStats.lastReindexed++;
      docs.push({ path: rel, chunks, mtimeMs: fileStat.mtimeMs });
    } catch (err) {
      if (LurkError.is(err) && err.code === "PATH_ESCAPE") continue;
      if (LurkError.is(err) && err.code === "NOT_FOUND") continue;
      throw err;
    }
  }
  for (const key of [...cache.keys()]) if (!seen.has(key)) cache.delete(key);
  return { docs, skipped };
}

// ---------------------------------------------------------------- memory_search

const searchParameters = z.object({
  query: z.string().min(1).max(2000).describe("What to look for: keywords or a phrase, in any language"),
  maxResults: z.number().int().min(1).max(50).optional().describe("How many results at most (default 8)"),
  minScore: z.number().min(0).optional().describe("Drop results scoring below this (BM25 score; typical hits score 1-10)"),
});

const SEARCH_DESCRIPTION = "Search your memory files (MEMORY.md, HISTORY.md and memory/*.md) by keywords, in any language. "
  + "Returns the best-matching passages with file path, line range, score and a snippet; "
  + "use memory_get with the path and line range to read more. Search memory before answering questions about past events, preferences or decisions.";

export const memorySearchTool = defineTool({
  name: "memory_search",
  description: SEARCH_DESCRIPTION,
  parameters: searchParameters,
  sideEffects: false,
  parallelSafe: true,
  groups: ["group:memory"],
  usesEmbeddings: true,
  async execute(args, ctx) {
    const { docs, skipped } = await refreshIndex(ctx.fs, ctx.signal);
    const chunkCount = docs.reduce((n, d) => n + d.chunks.length, 0);
    const maxResults = args.maxResults ?? 8;
    const scope = `${docs.length} memory file${docs.length === 1 ? "" : "s"}, ${chunkCount} passages searched`;
    const skipNote = skipped.length > 0 ? `\n[skipped, over the ${MAX_MEMORY_FILE_BYTES}-byte cap: ${skipped.join(", ")}]` : "";
    const keywordHits = () => searchDocs(docs, args.query, { maxResults, ...(args.minScore === undefined ? {} : { minScore: args.minScore }) });
    const embeddings = ctx.embeddings;
    // without memory.embeddings: the keyword search, worded as it always was
    if (!embeddings) return render(args.query, keywordHits(), scope, "", skipNote, ctx.limits.outputCapBytes);
    if (args.query.trim() === "" || chunkCount === 0) return render(args.query, keywordHits(), `keywords only; ${scope}`, "", skipNote, ctx.limits.outputCapBytes);
    let vectors;
    try {
      vectors = await searchVectors(docs, args.query.trim(), embeddings);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      // never fail the search because embeddings are down: keyword results, saying why
      const reason = cutUtf8(String((err as { message?: unknown })?.message ?? err), 240);
      return render(args.query, keywordHits(), `keywords only; ${scope}`, `\n[not ranked by meaning this time: ${reason}]`, skipNote, ctx.limits.outputCapBytes);
    }
    const hits = hybridSearch(docs, args.query, vectors.query, vectors.of, { maxResults, vectorWeight: embeddings.vectorWeight, ...(args.minScore === undefined ? {} : { minScore: args.minScore }) });
    const partial = vectors.withVectors < chunkCount ? `; ${vectors.withVectors} of them ranked by meaning (memory.embeddings.maxChunks), the rest by keywords` : "";
    return render(args.query, hits, `hybrid ranking, keywords and meaning (${embeddings.model}); ${scope}${partial}`, "", skipNote, ctx.limits.outputCapBytes);
  },
});

/** memory_search's catalog entry when memory.embeddings is set: the description and minScore say the ranking is hybrid. */
export function hybridSearchDefinition(def: ToolDefinition): ToolDefinition {
  const parameters = structuredClone(def.parameters) as { properties?: { minScore?: { description?: string } } };
  if (parameters.properties?.minScore) parameters.properties.minScore.description = "Drop results scoring below this (hybrid score from 0 to 1; keyword-only results: BM25, typical hits score 1-10)";
  return {
    ...def,
    description: SEARCH_DESCRIPTION.replace("by keywords, in any language", "by keywords and by meaning (so a different wording of the same thing is found too), in any language"),
    parameters: parameters as Record<string, unknown>,
  };
}

/** The reply: a header with the scope (and the ranking when embeddings are configured), a note, numbered hits within the output cap. */
function render(query: string, hits: Array<SearchHit | HybridHit>, scope: string, note: string, skipNote: string, outputCapBytes: number): ToolResult {
  if (hits.length === 0) {
    return { content: [{ type: "text", text: `No memory matches "${query}" (${scope}).${note}${skipNote}` }] };
  }
  const budget = Math.max(512, outputCapBytes - NOTE_RESERVE);
  let text = `${hits.length} result${hits.length === 1 ? "" : "s"} for "${query}" (${scope}):${note}\n`;
  let shown = 0;
  for (const [i, hit] of hits.entries()) {
    const hybrid = "textScore" in hit;
    const score = hybrid ? `score ${hit.score.toFixed(2)}: keywords ${hit.textScore.toFixed(2)}, meaning ${hit.vectorScore === undefined ? "-" : hit.vectorScore.toFixed(2)}` : `score ${hit.score.toFixed(2)}`;
    const matched = hit.matched.length > 0 ? hit.matched.join(", ") : "(no keyword; found by meaning)";
    const block = `\n${i + 1}. ${hit.path}:${hit.startLine}-${hit.endLine} (${score})${hit.heading ? ` under "${hit.heading}"` : ""}\n`
      + `   matched: ${matched}\n`
      + hit.snippet.split("\n").map((l) => `   ${l}`).join("\n") + "\n";
    if (Buffer.byteLength(text + block, "utf8") > budget) break;
    text += block;
    shown++;
  }
  if (shown < hits.length) text += `\n[output capped: showed ${shown} of ${hits.length} results; ask for fewer with maxResults]`;
  return { content: [{ type: "text", text: text + skipNote }] };
}

// ---------------------------------------------------------------- memory_get

const getParameters = z.object({
  path: z.string().min(1).max(4096).describe("The memory file: MEMORY.md, HISTORY.md or a path under memory/ (as memory_search shows it)"),
  fromLine: z.number().int().min(1).optional().describe("The 1-based line to start at (default 1)"),
  lines: z.number().int().min(1).max(MAX_GET_LINES).optional().describe(`How many lines (default ${DEFAULT_GET_LINES}, at most ${MAX_GET_LINES})`),
});

export const memoryGetTool = defineTool({
  name: "memory_get",
  description: "Read lines of a memory file (MEMORY.md, HISTORY.md or a file under memory/), e.g. around a memory_search result. "
    + "Returns numbered lines (number, tab, line); other files are refused (use read for them).",
  parameters: getParameters,
  sideEffects: false,
  parallelSafe: true,
  groups: ["group:memory"],
  async execute(args, ctx) {
    let rel: string;
    try {
      rel = toPosix(relative(ctx.fs.root, ctx.fs.resolve(args.path)));
    } catch {
      throw refusal(args.path);
    }
    if (!isMemoryPath(rel)) throw refusal(args.path);
    const file = await ctx.fs.openRead(rel);
    let data: Buffer;
    try {
      // a symlink under memory/ must not lead to another workspace file (SOUL.md, config...)
      if (!isMemoryPath(toPosix(relative(ctx.fs.realRoot, file.realPath)))) throw refusal(args.path);
      if (file.stat.size > MAX_MEMORY_FILE_BYTES) {
        throw new LurkError("LIMIT_EXCEEDED", `"${rel}" is ${file.stat.size} bytes, over the ${MAX_MEMORY_FILE_BYTES}-byte cap of memory_get; use read with an offset`);
      }
      data = await file.handle.readFile();
    } finally {
      await file.close();
    }
    if (looksBinary(data.subarray(0, 8192))) throw new LurkError("TOOL_FAILED", `"${rel}" is a binary file, not a memory note`);
    const all = data.toString("utf8").split("\n");
    if (all.length > 0 && all[all.length - 1] === "") all.pop();
    if (all.length === 0) return { content: [{ type: "text", text: `(${rel} is empty)` }] };
    const from = args.fromLine ?? 1;
    if (from > all.length) {
      throw new LurkError("TOOL_INVALID_ARGS", `fromLine ${from} is past the end of "${rel}", which has ${all.length} line${all.length === 1 ? "" : "s"}`);
    }
    const want = args.lines ?? DEFAULT_GET_LINES;
    const budget = Math.max(256, ctx.limits.outputCapBytes - NOTE_RESERVE);
    let out = "";
    let last = from - 1;
    for (let i = from - 1; i < all.length && i < from - 1 + want; i++) {
      let line = all[i]!.replace(/\r$/, "");
      if (line.length > MAX_LINE_CHARS) line = `${line.slice(0, MAX_LINE_CHARS)} [... line cut at ${MAX_LINE_CHARS} characters]`;
      let formatted = `${String(i + 1).padStart(6)}\t${line}\n`;
      if (Buffer.byteLength(out + formatted, "utf8") > budget) {
        if (out !== "") break;
        formatted = `${cutUtf8(formatted, budget - 40)} [... cut to fit the output cap]\n`;
      }
      out += formatted;
      last = i + 1;
    }
    if (last < all.length) {
      out += `[showed lines ${from}-${last} of ${all.length} in "${rel}"; read on with fromLine=${last + 1}]`;
    }
    return { content: [{ type: "text", text: out }] };
  },
});
