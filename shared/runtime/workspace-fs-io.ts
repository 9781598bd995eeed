/**
 * The fs steps under shared/runtime/workspace-fs.ts (ConfinedFs): the read path's sync and async
 * forms (the same code runs both), verified directory references, and the error mapping. No
 * confinement decision is made here; workspace-fs.ts makes them all.
 */
import { closeSync, fstatSync, openSync, readFileSync, readlinkSync, readSync, realpathSync, statSync, type Stats } from "node:fs";
import { open, readlink, realpath, stat } from "node:fs/promises";
import { sep } from "node:path";
import { LurkError } from "../contract/index.js";

/** The part of a FileHandle the tools read through (a FileHandle, or a sync fd in a worker). */
export interface ReadHandle {
  readonly fd: number;
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  /** the rest of the file from the current position (0 if only positional reads were done) */
  readFile(): Promise<Buffer>;
  stat(): Promise<Stats>;
  close(): Promise<void>;
}

/** The fs steps of the read path; the async form rejects where the sync form throws. */
export interface ReadIo {
  realpath(path: string): Promise<string>;
  stat(path: string): Promise<Stats>;
  readlink(path: string): Promise<string>;
  open(path: string, flags: number): Promise<ReadHandle>;
}

export const asyncIo: ReadIo = { realpath, stat, readlink, open };

/** Sync fs calls behind the async interface (a throw becomes a rejection: same error paths). */
export const syncIo: ReadIo = {
  realpath: async (path) => realpathSync.native(path),
  stat: async (path) => statSync(path),
  readlink: async (path) => readlinkSync(path),
  open: async (path, flags) => new SyncReadHandle(openSync(path, flags)),
};

/** A raw fd read with sync calls; closed at most once (a reused fd number is never closed twice). */
class SyncReadHandle implements ReadHandle {
  private closed = false;
  constructor(readonly fd: number) {}
  async read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }> {
    return { bytesRead: readSync(this.fd, buffer, offset, length, position) };
  }
  async readFile(): Promise<Buffer> {
    return readFileSync(this.fd);
  }
  async stat(): Promise<Stats> {
    return fstatSync(this.fd);
  }
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }
}

/** A directory opened and verified inside the workspace; `ref` names exactly it. */
export interface DirRef {
  ref: string;
  realPath: string;
  close(): Promise<void>;
}

/** `dir/name` for a name without separators (no normalisation of /proc/self/fd paths). */
export function join2(dir: string, name: string): string {
  return dir.endsWith(sep) ? dir + name : dir + sep + name;
}

/** Reads up to `length` bytes at `position` (fewer at end of file). */
export async function readAt(handle: ReadHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

export function within(root: string, absolute: string): boolean {
  if (absolute === root) return true;
  const prefix = root.endsWith(sep) ? root : root + sep;
  return absolute.startsWith(prefix);
}

export function fsError(err: NodeJS.ErrnoException, shown: string): LurkError {
  switch (err.code) {
    case "ENOENT":
      return new LurkError("NOT_FOUND", `no such file in the workspace: "${shown}"`);
    case "ENOTDIR":
      return new LurkError("NOT_FOUND", `"${shown}": a parent of it is not a directory`);
    case "EACCES":
    case "EPERM":
      return new LurkError("FORBIDDEN", `permission denied: "${shown}"`);
    case "ELOOP":
      return new LurkError("TOOL_INVALID_ARGS", `"${shown}": too many levels of symbolic links`);
    case "ENAMETOOLONG":
      return new LurkError("TOOL_INVALID_ARGS", `"${shown}": a path component is too long`);
    default:
      return new LurkError("TOOL_FAILED", `cannot open "${shown}": ${err.code ?? err.message}`);
  }
}
