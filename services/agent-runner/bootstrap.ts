/**
 * Bootstrap files: the workspace's Markdown files that shape the agent (persona, identity, the
 * user, operating instructions, tool notes, heartbeat checklist, long-term memory, first-run
 * ritual), injected into the system prompt's Project Context. Rules (seed 001 §3.2):
 *  - the order is BOOTSTRAP_FILES;
 *  - subagent sessions get only AGENTS.md and TOOLS.md;
 *  - group, topic and thread sessions never get MEMORY.md (private memory stays out of shared chats);
 *  - each file is trimmed at BOOTSTRAP_MAX_CHARS: the first 70% and the last 20% with a marker between.
 * Missing and blank files are left out. Reads are cached by path + mtime + size, so a run costs
 * one synchronous `stat` per file when nothing changed (a few microseconds; no thread-pool hop,
 * no exception for a missing file); huge files are read as head and tail only.
 */
import { statSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { BOOTSTRAP_HOOK_LIMITS } from "../../shared/contract/index.js";

export const BOOTSTRAP_FILES = [
  "SOUL.md", "IDENTITY.md", "USER.md", "AGENTS.md", "TOOLS.md", "HEARTBEAT.md", "MEMORY.md", "BOOTSTRAP.md",
] as const;
export type BootstrapName = (typeof BOOTSTRAP_FILES)[number];

export const SUBAGENT_BOOTSTRAP_ALLOWLIST: ReadonlySet<string> = new Set(["AGENTS.md", "TOOLS.md"]);
/** session types that are shared with other people: MEMORY.md is never injected there */
export const SHARED_SESSION_TYPES: ReadonlySet<string> = new Set(["group", "topic", "thread"]);
/** the per-file cap, the one lurk.hooks.bootstrap's contract holds each file to (agent:bootstrap hooks) */
export const BOOTSTRAP_MAX_CHARS = BOOTSTRAP_HOOK_LIMITS.fileChars;
export const BOOTSTRAP_HEAD_RATIO = 0.7;
export const BOOTSTRAP_TAIL_RATIO = 0.2;

export interface BootstrapFile {
  /** a BootstrapName as read from the workspace; an agent:bootstrap hook may add others (NAME.md) */
  name: string;
  path: string;
  /** the (possibly trimmed) text */
  content: string;
  trimmed: boolean;
}

/** The file names a session of this type gets, in order. */
export function bootstrapNamesFor(sessionType: string): BootstrapName[] {
  if (sessionType === "subagent") return BOOTSTRAP_FILES.filter((n) => SUBAGENT_BOOTSTRAP_ALLOWLIST.has(n));
  if (SHARED_SESSION_TYPES.has(sessionType)) return BOOTSTRAP_FILES.filter((n) => n !== "MEMORY.md");
  return [...BOOTSTRAP_FILES];
}

export function trimMarker(name: string, omitted: number): string {
  return `\n\n[... ${name} trimmed: ${omitted} characters omitted here; read the file for the full text ...]\n\n`;
}

/** Keeps the first 70% and the last 20% of `maxChars` with a marker between (surrogate pairs are not split). */
export function trimBootstrap(content: string, name: string, maxChars = BOOTSTRAP_MAX_CHARS, totalChars = content.length): { content: string; trimmed: boolean } {
  if (totalChars <= maxChars) return { content, trimmed: false };
  let head = content.slice(0, Math.floor(maxChars * BOOTSTRAP_HEAD_RATIO));
  let tail = content.slice(content.length - Math.floor(maxChars * BOOTSTRAP_TAIL_RATIO));
  if (/[\uD800-\uDBFF]$/.test(head)) head = head.slice(0, -1);
  if (/^[\uDC00-\uDFFF]/.test(tail)) tail = tail.slice(1);
  return { content: head + trimMarker(name, totalChars - head.length - tail.length) + tail, trimmed: true };
}

/** a file bigger than this is read as its first and last READ_EDGE_BYTES only */
const WHOLE_READ_MAX_BYTES = 1024 * 1024;
const READ_EDGE_BYTES = 128 * 1024;
const CACHE_MAX = 512;

interface Cached { mtimeMs: number; size: number; content: string; trimmed: boolean }
const cache = new Map<string, Cached>();

/** Loads the bootstrap files of a workspace for a session type. */
export async function loadBootstrapFiles(workspace: string, sessionType: string): Promise<BootstrapFile[]> {
  const names = bootstrapNamesFor(sessionType);
  const loaded = await Promise.all(names.map((name) => loadOne(workspace, name)));
  return loaded.filter((f): f is BootstrapFile => f !== null);
}

async function loadOne(workspace: string, name: BootstrapName): Promise<BootstrapFile | null> {
  const path = join(workspace, name);
  const st = statOrNull(path);
  if (!st) {
    cache.delete(path);
    return null;
  }
  if (!st.isFile()) return null;
  let entry = cache.get(path);
  if (!entry || entry.mtimeMs !== st.mtimeMs || entry.size !== st.size) {
    try {
      entry = { mtimeMs: st.mtimeMs, size: st.size, ...(await readTrimmed(path, name, st.size)) };
    } catch {
      return null;
    }
    cache.delete(path);
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
    cache.set(path, entry);
  }
  if (entry.content.trim() === "") return null;
  return { name, path, content: entry.content, trimmed: entry.trimmed };
}

/** stat without an exception for a missing file; null when the path cannot be stat'ed */
export function statOrNull(path: string): import("node:fs").Stats | null {
  try {
    return statSync(path, { throwIfNoEntry: false }) ?? null;
  } catch {
    return null;
  }
}

async function readTrimmed(path: string, name: string, size: number): Promise<{ content: string; trimmed: boolean }> {
  const fh = await open(path, "r");
  try {
    if (size <= WHOLE_READ_MAX_BYTES) {
      const text = (await fh.readFile()).toString("utf8").replace(/^\uFEFF/, "");
      return trimBootstrap(text, name);
    }
    // huge file: the head and the tail hold more characters than the trim keeps
    const head = Buffer.alloc(READ_EDGE_BYTES);
    const tail = Buffer.alloc(READ_EDGE_BYTES);
    await fh.read(head, 0, READ_EDGE_BYTES, 0);
    await fh.read(tail, 0, READ_EDGE_BYTES, size - READ_EDGE_BYTES);
    const headText = head.toString("utf8").replace(/^\uFEFF/, "").slice(0, Math.floor(BOOTSTRAP_MAX_CHARS * BOOTSTRAP_HEAD_RATIO));
    const tailText = tail.toString("utf8");
    const keepTail = tailText.slice(tailText.length - Math.floor(BOOTSTRAP_MAX_CHARS * BOOTSTRAP_TAIL_RATIO));
    // the omitted count is an estimate in bytes here (the middle is never decoded)
    const omitted = size - Buffer.byteLength(headText) - Buffer.byteLength(keepTail);
    return { content: headText + trimMarker(name, omitted).replace("characters", "bytes") + keepTail, trimmed: true };
  } finally {
    await fh.close();
  }
}
