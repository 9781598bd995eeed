/**
 * The agent's workspace as the browser worker sees it: reading the files an upload sends, and
 * saving a finished download. Confined as the tools actor's file tools are (their code is not
 * imported: actors share only shared/):
 *  - a path must resolve inside the workspace (`..` escapes and absolute paths elsewhere are
 *    PATH_ESCAPE); its realpath too (a symlink out of the workspace is PATH_ESCAPE); the opened
 *    fd's own path (/proc/self/fd) is checked again, so a path swapped between check and open
 *    cannot escape; only regular files with one hard link are read (a hard link may be a file
 *    outside the workspace), at most `maxBytes` of them (LIMIT_EXCEEDED);
 *  - a download is created under `<workspace>/<folder>/` with O_EXCL|O_NOFOLLOW (never over an
 *    existing file or through a symlink: a taken name gets a suffix, `name-2.ext`), the folder
 *    must resolve inside the workspace, the fd is checked the same way, and a copy that fails
 *    halfway is removed (no partial file is left).
 */
import { constants, createReadStream } from "node:fs";
import { mkdir, open, readlink, realpath, stat, unlink, type FileHandle } from "node:fs/promises";
import { basename, join, relative, resolve, sep } from "node:path";
import { pipeline } from "node:stream/promises";
import { LurkError } from "../../shared/contract/index.js";
import { formatBytes } from "../../shared/runtime/media.js";
import { withSuffix } from "./file-name.js";

/** names tried before a save gives up (`name-2.ext` ... `name-999.ext`) */
const MAX_SUFFIX = 999;
const READ_CHUNK = 1 << 20;

export interface WorkspaceFile {
  /** workspace-relative, as the model gave it (normalized) */
  path: string;
  /** the name the page gets */
  name: string;
  bytes: Buffer;
}

export interface SavedFile {
  /** workspace-relative, `/`-separated */
  path: string;
  bytes: number;
}

function inside(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

const shownPath = (root: string, path: string) => relative(root, path).split(sep).join("/");

/** The workspace's real path; NOT_FOUND when there is none. */
async function realRoot(workspace: string): Promise<string> {
  try {
    return await realpath(workspace);
  } catch {
    throw new LurkError("NOT_FOUND", `the agent's workspace ${workspace} does not exist`);
  }
}

/** The real path of an open fd (Linux); undefined where /proc is missing. */
async function fdPath(handle: FileHandle): Promise<string | undefined> {
  try {
    return await readlink(`/proc/self/fd/${handle.fd}`);
  } catch {
    return undefined;
  }
}

const isCode = (err: unknown, code: string) => (err as NodeJS.ErrnoException)?.code === code;

/** A model's path resolved inside the workspace: its real path (PATH_ESCAPE, NOT_FOUND otherwise). */
async function resolveInside(workspace: string, userPath: string): Promise<{ root: string; abs: string; realWs: string; real: string }> {
  const root = resolve(workspace);
  const abs = workspacePath(root, userPath);
  if (abs === undefined) throw new LurkError("PATH_ESCAPE", `"${userPath}" is outside the workspace; give the path of a file relative to the workspace root`);
  const realWs = await realRoot(root);
  let real: string;
  try {
    real = await realpath(abs);
  } catch (err) {
    if (isCode(err, "ENOENT")) throw new LurkError("NOT_FOUND", `no file "${userPath}" in the workspace`);
    throw new LurkError("TOOL_FAILED", `"${userPath}" could not be read: ${(err as Error).message}`);
  }
  if (!inside(realWs, real)) throw new LurkError("PATH_ESCAPE", `"${userPath}" goes through a symlink that leads outside the workspace; refused`);
  return { root, abs, realWs, real };
}

/**
 * A first look at an upload's files before a human is asked about them (the actor's main
 * thread): each inside the workspace (no symlink out), a regular file with one hard link, all of them within
 * `maxBytes` together (the error names the total). The worker checks again as it reads them.
 */
export async function precheckFiles(workspace: string, paths: readonly string[], maxBytes: number): Promise<void> {
  let total = 0;
  for (const path of paths) {
    const { real } = await resolveInside(workspace, path);
    const s = await stat(real);
    if (!s.isFile()) throw new LurkError("TOOL_INVALID_ARGS", `"${path}" is not a regular file`);
    if (s.nlink > 1) throw hardLinked(path);
    total += s.size;
    if (total > maxBytes) {
      const what = paths.length > 1 ? `the files up to "${path}" are ${formatBytes(total)} together` : `"${path}" is ${formatBytes(total)}`;
      throw new LurkError("LIMIT_EXCEEDED", `${what}, more than the ${formatBytes(maxBytes)} one upload may send (browser.uploads.maxBytes, all files together)`);
    }
  }
}

/** Reads one workspace file for an upload (see the module's comment); at most `maxBytes`. */
export async function readWorkspaceFile(workspace: string, userPath: string, maxBytes: number): Promise<WorkspaceFile> {
  const { root, abs, realWs, real } = await resolveInside(workspace, userPath);
  const handle = await open(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW).catch((err: unknown) => {
    throw new LurkError("TOOL_FAILED", `"${userPath}" could not be opened: ${(err as Error).message}`);
  });
  try {
    const opened = await fdPath(handle);
    if (opened !== undefined && !inside(realWs, opened)) throw new LurkError("PATH_ESCAPE", `"${userPath}" changed into something outside the workspace while it was opened; refused`);
    const info = await handle.stat();
    if (!info.isFile()) throw new LurkError("TOOL_INVALID_ARGS", `"${userPath}" is not a regular file`);
    if (info.nlink > 1) throw hardLinked(userPath);
    if (info.size > maxBytes) throw tooLarge(userPath, info.size, maxBytes);
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, maxBytes + 1 - total));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      // the file grew while it was read
      if (total > maxBytes) throw tooLarge(userPath, total, maxBytes, true);
    }
    return { path: shownPath(root, abs), name: basename(abs), bytes: Buffer.concat(chunks, total) };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

function hardLinked(path: string): LurkError {
  return new LurkError("PATH_ESCAPE", `"${path}" has more than one hard link (it may be a file outside the workspace); refused`);
}

function tooLarge(path: string, size: number, maxBytes: number, growing = false): LurkError {
  return new LurkError("LIMIT_EXCEEDED", `"${path}" is ${formatBytes(size)}${growing ? " or more (it grows)" : ""}, more than the ${formatBytes(maxBytes)} left`);
}

/**
 * Copies the finished download at `source` (a file of the worker's own staging folder) into
 * `<workspace>/<folder>/<name>` (a suffix when the name is taken); the workspace and the folder
 * are created when missing.
 */
export async function saveIntoWorkspace(workspace: string, folder: string, name: string, source: string): Promise<SavedFile> {
  const root = resolve(workspace);
  await mkdir(root, { recursive: true, mode: 0o700 });
  const realWs = await realRoot(root);
  const dir = join(realWs, folder);
  await mkdir(dir, { recursive: true }).catch((err: unknown) => {
    if (!isCode(err, "EEXIST")) throw new LurkError("TOOL_FAILED", `the folder ${folder}/ could not be created in the workspace: ${(err as Error).message}`);
  });
  const realDir = await realpath(dir);
  if (!inside(realWs, realDir) || realDir === realWs) throw new LurkError("PATH_ESCAPE", `${folder}/ in the workspace leads outside it (a symlink); nothing was saved`);
  let handle: FileHandle | undefined;
  let target = "";
  for (let n = 1; n <= MAX_SUFFIX && !handle; n++) {
    target = join(realDir, withSuffix(name, n));
    try {
      handle = await open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
    } catch (err) {
      if (!isCode(err, "EEXIST")) throw new LurkError("TOOL_FAILED", `${folder}/${withSuffix(name, n)} could not be created: ${(err as Error).message}`);
    }
  }
  if (!handle) throw new LurkError("CONFLICT", `${folder}/ already holds ${name} and ${MAX_SUFFIX - 1} numbered copies; nothing was saved`);
  let bytes = 0;
  try {
    const opened = await fdPath(handle);
    if (opened !== undefined && !inside(realWs, opened)) throw new LurkError("PATH_ESCAPE", `${folder}/ moved outside the workspace while the download was saved; nothing was saved`);
    const out = handle.createWriteStream();
    await pipeline(createReadStream(source), out);
    bytes = out.bytesWritten;
  } catch (err) {
    await handle.close().catch(() => undefined);
    await unlink(target).catch(() => undefined);
    throw LurkError.is(err) ? err : new LurkError("TOOL_FAILED", `the download could not be saved into ${folder}/: ${(err as Error).message}`);
  }
  return { path: shownPath(realWs, target), bytes };
}

/** The absolute path a model's path names when it is inside the workspace (lexically; the reads check the rest), else undefined. */
export function workspacePath(workspace: string, userPath: string): string | undefined {
  const root = resolve(workspace);
  const abs = resolve(root, userPath);
  return inside(root, abs) && abs !== root && !userPath.includes("\0") ? abs : undefined;
}
