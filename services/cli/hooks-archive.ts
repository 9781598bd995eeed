/**
 * A hook archive (.tgz/.tar.gz/.tar, .zip, `npm pack`'s tarball) read whole into memory and checked
 * before anything is extracted: at most MAX_ARCHIVE_BYTES on disk, MAX_ENTRIES entries and
 * MAX_UNPACKED_BYTES unpacked (counted while inflating, the sizes an archive declares are not
 * trusted); every path relative, without `..`, backslashes or NUL; only files, folders and
 * symbolic links that stay inside the archive (no entry through a link, no hard links, devices or
 * FIFOs); a path at most once. `extractArchive` then writes the checked entries under a fresh
 * folder (files 0644, or 0755 when executable; never following anything already there; the
 * links last, so nothing is written through one even where the file system folds case) and
 * refuses the archive when a link, followed as the file system does (through other links),
 * leads out of it or to nothing (`linkOut`).
 * Failures are ArchiveErrors (exit 1) that say what was wrong.
 */
import { mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, posix, relative, sep } from "node:path";
import { gunzipSync } from "node:zlib";
import JSZip from "jszip";
import { readZipEntry, zipEntriesAtMost } from "../../shared/runtime/zip-entries.js";
import { CliError } from "./errors.js";

const MB = 1024 * 1024;
const MAX_ARCHIVE_BYTES = 50 * MB;
export const MAX_UNPACKED_BYTES = 100 * MB;
export const MAX_ENTRIES = 5_000;

export interface ArchiveEntry {
  /** relative, `/`-separated, normalized */
  path: string;
  type: "file" | "dir" | "symlink";
  /** file: executable by its owner */
  executable?: boolean;
  data?: Buffer;
  /** symlink: its target as written */
  target?: string;
}

class ArchiveError extends CliError {
  constructor(file: string, reason: string) {
    super(`${file}: ${reason}; nothing was installed.`);
    this.name = "ArchiveError";
  }
}

/** The checked entries of the archive at `file` (gzip, zip or tar by its first bytes). */
export async function readArchive(file: string): Promise<ArchiveEntry[]> {
  const size = statSync(file).size;
  if (size > MAX_ARCHIVE_BYTES) throw new ArchiveError(file, `the archive is ${(size / MB).toFixed(1)} MB, more than the ${MAX_ARCHIVE_BYTES / MB} MB a hook archive may be`);
  const bytes = readFileSync(file);
  let raw: ArchiveEntry[];
  try {
    if (bytes[0] === 0x50 && bytes[1] === 0x4b) raw = await readZip(bytes);
    else if (bytes[0] === 0x1f && bytes[1] === 0x8b) raw = readTar(gunzip(bytes));
    else raw = readTar(bytes);
  } catch (err) {
    if (err instanceof ArchiveProblem) throw new ArchiveError(file, err.message);
    throw new ArchiveError(file, `not a readable .tgz, .tar or .zip archive (${(err as Error).message})`);
  }
  try {
    return checkEntries(raw);
  } catch (err) {
    if (err instanceof ArchiveProblem) throw new ArchiveError(file, err.message);
    throw err;
  }
}

/** Writes checked entries of the archive `file` under `dest` (created; it must not exist yet). */
export function extractArchive(entries: readonly ArchiveEntry[], dest: string, file: string): void {
  mkdirSync(dest, { recursive: false, mode: 0o755 });
  const at = (e: ArchiveEntry) => join(dest, ...e.path.split("/"));
  for (const e of entries) {
    if (e.type === "dir") mkdirSync(at(e), { recursive: true, mode: 0o755 });
    else if (e.type === "file") {
      mkdirSync(dirname(at(e)), { recursive: true, mode: 0o755 });
      writeFileSync(at(e), e.data!, { flag: "wx", mode: e.executable ? 0o755 : 0o644 });
    }
  }
  // links last: a link whose path differs from a folder's only in case ("Lib" and "lib/x.js", one
  // path on macOS or Windows) would otherwise have the file written through it
  for (const e of entries) {
    if (e.type !== "symlink") continue;
    mkdirSync(dirname(at(e)), { recursive: true, mode: 0o755 });
    symlinkSync(e.target!, at(e));
  }
  const out = linkOut(dest);
  if (out) throw new ArchiveError(file, `"${out.path}" is a symbolic link to "${out.target}", ${out.why}`);
}

/**
 * The first symbolic link under `root` that, followed as the file system follows it (through the
 * other links: "up" -> ".." and "x" -> "up/../.." leave the folder though each looks inside on its
 * own), leads out of `root` or to nothing; undefined when every link stays inside. Its callers'
 * trees are bounded (MAX_ENTRIES); folders are entered only as folders, never through a link.
 */
export function linkOut(root: string): { path: string; target: string; why: string } | undefined {
  // .native: the kernel's resolution; fs.realpathSync folds "up/.." to "." before it follows "up"
  const top = realpathSync.native(root);
  const walk = (dir: string): { path: string; target: string; why: string } | undefined => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) {
        const found = walk(path);
        if (found) return found;
      } else if (e.isSymbolicLink()) {
        let real: string;
        const rel = relative(root, path).split(sep).join("/");
        try {
          real = realpathSync.native(path);
        } catch {
          return { path: rel, target: readlinkTarget(path), why: "which leads to nothing (or in a circle)" };
        }
        if (real !== top && !real.startsWith(top + sep)) return { path: rel, target: readlinkTarget(path), why: "outside the archive's folder" };
      }
    }
    return undefined;
  };
  return walk(root);
}

function readlinkTarget(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return "?";
  }
}

/** a reason an archive is refused (turned into an ArchiveError naming the file) */
class ArchiveProblem extends Error {}

function gunzip(bytes: Buffer): Buffer {
  try {
    return gunzipSync(bytes, { maxOutputLength: MAX_UNPACKED_BYTES + 1024 * 1024 });
  } catch (err) {
    if (err instanceof RangeError || (err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") {
      throw new ArchiveProblem(`it unpacks to more than ${MAX_UNPACKED_BYTES / MB} MB`);
    }
    throw err;
  }
}

/** ustar/pax/GNU tar: regular files, folders, symbolic links; anything else is refused. */
function readTar(buf: Buffer): ArchiveEntry[] {
  const entries: ArchiveEntry[] = [];
  let at = 0;
  let pax: Record<string, string> = {};
  let longName: string | undefined;
  let longLink: string | undefined;
  let total = 0;
  while (at + 512 <= buf.length) {
    const header = buf.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    checkTarChecksum(header);
    const size = tarNumber(header.subarray(124, 136));
    const type = String.fromCharCode(header[156]!);
    const dataStart = at + 512;
    if (dataStart + size > buf.length) throw new ArchiveProblem("the archive is cut short");
    const data = buf.subarray(dataStart, dataStart + size);
    at = dataStart + Math.ceil(size / 512) * 512;
    if (type === "x") {
      pax = parsePax(data);
      continue;
    }
    if (type === "g") continue;
    if (type === "L" || type === "K") {
      const text = data.toString("utf8").replace(/\0+$/, "");
      if (type === "L") longName = text;
      else longLink = text;
      continue;
    }
    const magic = header.subarray(257, 262).toString("latin1");
    const prefix = magic === "ustar" ? cString(header.subarray(345, 500)) : "";
    const name = pax.path ?? longName ?? (prefix ? `${prefix}/${cString(header.subarray(0, 100))}` : cString(header.subarray(0, 100)));
    const link = pax.linkpath ?? longLink ?? cString(header.subarray(157, 257));
    pax = {};
    longName = longLink = undefined;
    if (++total > MAX_ENTRIES) throw new ArchiveProblem(`it holds more than ${MAX_ENTRIES} entries`);
    const mode = tarNumber(header.subarray(100, 108));
    if (type === "0" || type === "\0" || type === "7") entries.push({ path: name, type: "file", executable: (mode & 0o100) !== 0, data });
    else if (type === "5") entries.push({ path: name, type: "dir" });
    else if (type === "2") entries.push({ path: name, type: "symlink", target: link });
    else if (type === "1") throw new ArchiveProblem(`"${name}" is a hard link; hook archives may hold files, folders and symbolic links only`);
    else throw new ArchiveProblem(`"${name}" is not a file, folder or symbolic link (tar type "${type}")`);
  }
  return entries;
}

function cString(b: Buffer): string {
  const end = b.indexOf(0);
  return b.subarray(0, end === -1 ? b.length : end).toString("utf8");
}

function tarNumber(b: Buffer): number {
  if (b[0]! & 0x80) {
    // base-256 (GNU): big sizes
    let n = 0;
    for (let i = 1; i < b.length; i++) n = n * 256 + b[i]!;
    return n;
  }
  const text = cString(b).trim();
  const n = text === "" ? 0 : parseInt(text, 8);
  if (!Number.isSafeInteger(n) || n < 0) throw new ArchiveProblem("a tar header has a bad number");
  return n;
}

function checkTarChecksum(header: Buffer): void {
  const stored = tarNumber(header.subarray(148, 156));
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : header[i]!;
  if (sum !== stored) throw new Error("bad tar header checksum");
}

function parsePax(data: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    if (space === -1) break;
    const len = parseInt(data.subarray(at, space).toString("latin1"), 10);
    if (!Number.isSafeInteger(len) || len <= 0) break;
    const record = data.subarray(space + 1, at + len - 1).toString("utf8");
    const eq = record.indexOf("=");
    if (eq > 0) out[record.slice(0, eq)] = record.slice(eq + 1);
    at += len;
  }
  return out;
}

async function readZip(bytes: Buffer): Promise<ArchiveEntry[]> {
  // counted before jszip builds an object per entry (a 50 MB zip of empty entries is a million)
  if (zipEntriesAtMost(bytes, MAX_ENTRIES) > MAX_ENTRIES) throw new ArchiveProblem(`it holds more than ${MAX_ENTRIES} entries`);
  // jszip makes one file per central-directory header (it adds no folders), so at most the count above
  const files = Object.values((await JSZip.loadAsync(bytes)).files);
  const entries: ArchiveEntry[] = [];
  const budget = { left: MAX_UNPACKED_BYTES };
  for (const f of files) {
    // jszip resolves `../` in `name`; the name as stored is what a naive unzip would write
    const path = (f as unknown as { unsafeOriginalName?: string }).unsafeOriginalName ?? f.name;
    const mode = typeof f.unixPermissions === "number" ? f.unixPermissions : 0;
    const kind = mode & 0o170000;
    if (f.dir) entries.push({ path, type: "dir" });
    else if (kind === 0o120000) entries.push({ path, type: "symlink", target: (await readEntry(f, budget)).toString("utf8") });
    else if (kind === 0 || kind === 0o100000) entries.push({ path, type: "file", executable: (mode & 0o100) !== 0, data: await readEntry(f, budget) });
    else throw new ArchiveProblem(`"${path}" is not a file, folder or symbolic link`);
  }
  return entries;
}

/** an entry's bytes, counted against the archive's unpacked budget as they are inflated */
function readEntry(entry: JSZip.JSZipObject, budget: { left: number }): Promise<Buffer> {
  return readZipEntry(entry, (bytes) => {
    budget.left -= bytes;
    return budget.left < 0 ? new ArchiveProblem(`it unpacks to more than ${MAX_UNPACKED_BYTES / MB} MB`) : undefined;
  });
}

/** Normalized entries, or the first reason the archive is refused. */
function checkEntries(raw: readonly ArchiveEntry[]): ArchiveEntry[] {
  const byPath = new Map<string, ArchiveEntry>();
  let total = 0;
  for (const e of raw) {
    const path = safePath(e.path);
    if (path === "") continue; // "./" itself
    const have = byPath.get(path);
    if (have && !(have.type === "dir" && e.type === "dir")) throw new ArchiveProblem(`it holds "${path}" more than once`);
    if (e.type === "symlink") {
      const target = e.target ?? "";
      if (target === "" || target.includes("\0") || target.startsWith("/") || /^[A-Za-z]:/.test(target) || target.includes("\\")) {
        throw new ArchiveProblem(`"${path}" is a symbolic link to "${target}", outside the archive`);
      }
      const resolved = posix.normalize(posix.join(posix.dirname(path), target));
      if (resolved === ".." || resolved.startsWith("../")) throw new ArchiveProblem(`"${path}" is a symbolic link to "${target}", outside the archive`);
    }
    total += e.data?.length ?? 0;
    if (total > MAX_UNPACKED_BYTES) throw new ArchiveProblem(`it unpacks to more than ${MAX_UNPACKED_BYTES / MB} MB`);
    byPath.set(path, { ...e, path });
  }
  const links = [...byPath.values()].filter((e) => e.type === "symlink").map((e) => e.path);
  for (const path of byPath.keys()) {
    const through = links.find((l) => path.startsWith(`${l}/`));
    if (through) throw new ArchiveProblem(`"${path}" lies under the symbolic link "${through}"`);
  }
  // folders first (shallow to deep), then the rest in archive order
  const all = [...byPath.values()];
  return [...all.filter((e) => e.type === "dir").sort((a, b) => a.path.split("/").length - b.path.split("/").length), ...all.filter((e) => e.type !== "dir")];
}

/** `raw` relative and normalized ("" for the root), or an ArchiveProblem: absolute, `..`, backslash, NUL. */
function safePath(raw: string): string {
  if (raw.includes("\0")) throw new ArchiveProblem(`an entry's path holds a NUL character`);
  if (raw.includes("\\")) throw new ArchiveProblem(`"${raw}" holds a backslash; archive paths are /-separated and relative`);
  if (raw.startsWith("/") || /^[A-Za-z]:/.test(raw)) throw new ArchiveProblem(`"${raw}" is an absolute path`);
  const parts = raw.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.includes("..")) throw new ArchiveProblem(`"${raw}" climbs out of the archive (path traversal)`);
  return parts.join("/");
}
