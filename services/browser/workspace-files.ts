/**
 * The agent's workspace as the browser sees it: the files an upload sends, and a finished
 * download saved. Confined by shared/runtime/workspace-fs.ts (ConfinedFs), the tools actor's own
 * implementation, so both refuse the same things the same way:
 *  - a path must resolve inside the workspace (`..` escapes and absolute paths elsewhere are
 *    PATH_ESCAPE), and so must its realpath (a symlink out is PATH_ESCAPE, also when what it
 *    points to does not exist: no probing outside); the opened fd's own path is checked again
 *    (/proc/self/fd, else device and inode), so a path swapped between check and open cannot
 *    escape; only regular files with one hard link are read, at most `maxBytes` of them
 *    (LIMIT_EXCEEDED);
 *  - a download is created in `<workspace>/<folder>/` by the exclusive-create writer (the folder
 *    opened one verified component at a time from the real root, missing ones made only inside
 *    it; O_EXCL|O_NOFOLLOW: never over an existing file or through a symlink, a taken name gets a
 *    suffix `name-2.ext`), and a copy that fails halfway is removed (no partial file is left).
 */
import { createReadStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { basename, resolve } from "node:path";
import { LurkError } from "../../shared/contract/index.js";
import { formatBytes } from "../../shared/runtime/media.js";
import { ConfinedFs, type ConfinedFile, type CreatedFile } from "../../shared/runtime/workspace-fs.js";
import { withSuffix } from "./file-name.js";

/** names tried before a save gives up (`name-2.ext` ... `name-999.ext`) */
const MAX_SUFFIX = 999;
const READ_CHUNK = 1 << 20;
const COPY_CHUNK = 1 << 20;

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

/** One upload file opened through ConfinedFs (inside, no escape, regular, one hard link). */
async function openUploadFile(workspace: string, userPath: string): Promise<ConfinedFile> {
  const fs = await ConfinedFs.create(workspace);
  return fs.openRead(userPath, { hardlinks: "refuse" });
}

/**
 * A first look at an upload's files before a human is asked about them (the actor's main
 * thread): each opened as the read will be (see the module's comment), all of them within
 * `maxBytes` together (the error names the total). Returns their sizes. The worker checks again
 * as it reads them.
 */
export async function precheckFiles(workspace: string, paths: readonly string[], maxBytes: number): Promise<{ path: string; size: number }[]> {
  let total = 0;
  const sizes: { path: string; size: number }[] = [];
  for (const path of paths) {
    const file = await openUploadFile(workspace, path);
    await file.close();
    total += file.stat.size;
    sizes.push({ path: file.path.split("\\").join("/"), size: file.stat.size });
    if (total > maxBytes) {
      const what = paths.length > 1 ? `the files up to "${path}" are ${formatBytes(total)} together` : `"${path}" is ${formatBytes(total)}`;
      throw new LurkError("LIMIT_EXCEEDED", `${what}, more than the ${formatBytes(maxBytes)} one upload may send (browser.uploads.maxBytes, all files together)`);
    }
  }
  return sizes;
}

/** Reads one workspace file for an upload (see the module's comment); at most `maxBytes`. */
export async function readWorkspaceFile(workspace: string, userPath: string, maxBytes: number): Promise<WorkspaceFile> {
  const file = await openUploadFile(workspace, userPath);
  try {
    if (file.stat.size > maxBytes) throw tooLarge(userPath, file.stat.size, maxBytes);
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, maxBytes + 1 - total));
      const { bytesRead } = await file.handle.read(chunk, 0, chunk.length, total);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      // the file grew while it was read
      if (total > maxBytes) throw tooLarge(userPath, total, maxBytes, true);
    }
    return { path: file.path.split("\\").join("/"), name: basename(file.path), bytes: Buffer.concat(chunks, total) };
  } finally {
    await file.close();
  }
}

function tooLarge(path: string, size: number, maxBytes: number, growing = false): LurkError {
  return new LurkError("LIMIT_EXCEEDED", `"${path}" is ${formatBytes(size)}${growing ? " or more (it grows)" : ""}, more than the ${formatBytes(maxBytes)} left`);
}

/**
 * Copies the finished download at `source` (a file of the browser's own staging folder) into
 * `<workspace>/<folder>/<name>` (a suffix when the name is taken). A missing workspace is
 * created (mode 700; it is the configured path itself), the folder inside it by the
 * exclusive-create writer; a folder that leads outside is PATH_ESCAPE.
 */
export async function saveIntoWorkspace(workspace: string, folder: string, name: string, source: string): Promise<SavedFile> {
  await mkdir(resolve(workspace), { recursive: true, mode: 0o700 });
  const fs = await ConfinedFs.create(workspace);
  let created: CreatedFile | undefined;
  for (let n = 1; n <= MAX_SUFFIX && !created; n++) {
    try {
      created = await fs.createExclusive(`${folder}/${withSuffix(name, n)}`);
    } catch (err) {
      if (LurkError.is(err) && err.code === "CONFLICT") continue;
      if (LurkError.is(err) && err.code === "PATH_ESCAPE") throw new LurkError("PATH_ESCAPE", `${folder}/ in the workspace leads outside it (a symlink); nothing was saved`);
      throw LurkError.is(err) ? err : new LurkError("TOOL_FAILED", `${folder}/${withSuffix(name, n)} could not be created: ${(err as Error).message}`);
    }
  }
  if (!created) throw new LurkError("CONFLICT", `${folder}/ already holds ${name} and ${MAX_SUFFIX - 1} numbered copies; nothing was saved`);
  try {
    let bytes = 0;
    for await (const chunk of createReadStream(source, { highWaterMark: COPY_CHUNK }) as AsyncIterable<Buffer>) {
      for (let at = 0; at < chunk.length;) at += (await created.handle.write(chunk, at, chunk.length - at)).bytesWritten;
      bytes += chunk.length;
    }
    await created.close();
    return { path: created.path.split("\\").join("/"), bytes };
  } catch (err) {
    await created.discard();
    throw LurkError.is(err) ? err : new LurkError("TOOL_FAILED", `the download could not be saved into ${folder}/: ${(err as Error).message}`);
  }
}
