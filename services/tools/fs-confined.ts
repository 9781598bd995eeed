/**
 * The workspace-confined filesystem every tool gets instead of `node:fs`.
 *
 * A path from the model is refused unless it names something inside the workspace root:
 *  1. lexical checks: a string, no NUL byte, not too long; resolved against the root, it must
 *     stay inside it (`..` escapes and absolute paths elsewhere are PATH_ESCAPE). `~` is not
 *     expanded (it is an ordinary file name here).
 *  2. a realpath pre-check: a symlink (last component or a parent directory) that leads out of
 *     the workspace is PATH_ESCAPE with a clear message. Symlinks that stay inside are followed.
 *  3. the file is opened (O_NONBLOCK, so a FIFO cannot hang the worker), and the *opened fd's*
 *     path (`/proc/self/fd/N`) is checked again. Everything is then read through that fd, so a
 *     directory swapped for a symlink between the check and the open cannot escape: the kernel
 *     tells us what was actually opened. Without /proc (not Linux), the fd's device and inode
 *     must equal those of the realpath, which must be inside the root.
 *  4. only regular files are opened for reading (no devices, FIFOs or sockets).
 *
 * Hard links: a hard link inside the workspace to a file elsewhere cannot be told from a
 * normal file by path. Reads allow them by default (creating one needs write access to the
 * workspace and, with fs.protected_hardlinks, ownership of the target; the data was readable
 * by this user anyway). Writers (a later issue) must pass `hardlinks: "refuse"`, which refuses
 * regular files with more than one link, so a write can never land outside the workspace.
 */
import { constants, type Stats } from "node:fs";
import { open, readlink, realpath, stat, type FileHandle } from "node:fs/promises";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { LurkError } from "../../shared/contract/index.js";

export const MAX_PATH_LENGTH = 4096;

export interface ConfinedFsOptions {
  /** test hook: runs between the pre-check and the open (to prove the fd check) */
  beforeOpen?: (absolutePath: string) => Promise<void> | void;
}

export interface OpenReadOptions {
  /** "refuse": regular files with more than one hard link are refused (writers use this) */
  hardlinks?: "allow" | "refuse";
}

/** A file opened inside the workspace. Read through `handle` only; close it when done. */
export interface ConfinedFile {
  handle: FileHandle;
  /** workspace-relative path, for messages to the model */
  path: string;
  /** the real path of the opened fd */
  realPath: string;
  stat: Stats;
  close(): Promise<void>;
}

export class ConfinedFs {
  private constructor(
    /** the workspace as configured (absolute) */
    readonly root: string,
    /** the workspace with symlinks resolved: what fds must be inside */
    readonly realRoot: string,
    private readonly opts: ConfinedFsOptions,
  ) {}

  static async create(root: string, opts: ConfinedFsOptions = {}): Promise<ConfinedFs> {
    const absolute = resolve(root);
    let real: string;
    try {
      real = await realpath(absolute);
      if (!(await stat(real)).isDirectory()) throw Object.assign(new Error("not a directory"), { code: "ENOTDIR" });
    } catch (err) {
      throw new LurkError("NOT_FOUND", `the workspace ${absolute} does not exist or is not a directory (${(err as NodeJS.ErrnoException).code ?? "error"})`);
    }
    return new ConfinedFs(absolute, real, opts);
  }

  /** True if `absolutePath` is the real root or below it. */
  isInside(absolutePath: string): boolean {
    return within(this.realRoot, absolutePath);
  }

  /** Lexical resolution of a model-supplied path to an absolute path inside the workspace. */
  resolve(userPath: unknown): string {
    if (typeof userPath !== "string" || userPath.length === 0) {
      throw new LurkError("TOOL_INVALID_ARGS", "path must be a non-empty string (relative to the workspace)");
    }
    if (userPath.includes("\0")) throw new LurkError("TOOL_INVALID_ARGS", "path contains a NUL byte");
    if (userPath.length > MAX_PATH_LENGTH) throw new LurkError("TOOL_INVALID_ARGS", `path is longer than ${MAX_PATH_LENGTH} characters`);
    const absolute = resolve(this.root, userPath);
    if (within(this.root, absolute)) return absolute;
    // an absolute path spelled through the real root (e.g. /private/tmp for /tmp) is fine too
    if (isAbsolute(userPath) && within(this.realRoot, absolute)) return resolve(this.root, relative(this.realRoot, absolute));
    throw new LurkError("PATH_ESCAPE", `the path "${userPath}" is outside the workspace; use a path relative to the workspace root`);
  }

  /** The workspace-relative form of an absolute path inside the root ("." for the root). */
  display(absolutePath: string): string {
    const base = within(this.realRoot, absolutePath) ? this.realRoot : this.root;
    return relative(base, absolutePath) || ".";
  }

  /** Opens a regular file for reading, confined as described above. */
  async openRead(userPath: unknown, opts: OpenReadOptions = {}): Promise<ConfinedFile> {
    const absolute = this.resolve(userPath);
    const shown = this.display(absolute);
    const pre = await realpath(absolute).catch((err: NodeJS.ErrnoException) => {
      throw fsError(err, shown);
    });
    if (!this.isInside(pre)) {
      throw new LurkError("PATH_ESCAPE", `"${shown}" is (or goes through) a symlink that leads outside the workspace; refused`);
    }
    await this.opts.beforeOpen?.(absolute);
    let handle: FileHandle;
    try {
      handle = await open(absolute, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    } catch (err) {
      throw fsError(err as NodeJS.ErrnoException, shown);
    }
    try {
      const st = await handle.stat();
      const real = await this.fdRealPath(handle, absolute, st);
      if (real === undefined || !this.isInside(real)) {
        throw new LurkError("PATH_ESCAPE", `"${shown}" changed while it was opened and now leads outside the workspace; refused`);
      }
      if (st.isDirectory()) throw new LurkError("TOOL_INVALID_ARGS", `"${shown}" is a directory, not a file`);
      if (!st.isFile()) throw new LurkError("TOOL_INVALID_ARGS", `"${shown}" is not a regular file (device, FIFO or socket); refused`);
      if (opts.hardlinks === "refuse" && st.nlink > 1) {
        throw new LurkError("PATH_ESCAPE", `"${shown}" has ${st.nlink} hard links and may be shared with a file outside the workspace; refused`);
      }
      return { handle, path: shown, realPath: real, stat: st, close: () => handle.close().catch(() => undefined) };
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  }

  /** Reads at most `maxBytes` of a file; `truncated` says whether more followed. */
  async readFile(userPath: unknown, opts: OpenReadOptions & { maxBytes: number }): Promise<{ data: Buffer; size: number; truncated: boolean; path: string }> {
    const file = await this.openRead(userPath, opts);
    try {
      const data = await readAt(file.handle, 0, opts.maxBytes + 1);
      const truncated = data.length > opts.maxBytes;
      return { data: truncated ? data.subarray(0, opts.maxBytes) : data, size: file.stat.size, truncated, path: file.path };
    } finally {
      await file.close();
    }
  }

  /** What the kernel says the fd is; undefined if it cannot be established. */
  private async fdRealPath(handle: FileHandle, absolute: string, st: Stats): Promise<string | undefined> {
    try {
      const link = await readlink(`/proc/self/fd/${handle.fd}`);
      if (link.endsWith(" (deleted)") || !isAbsolute(link)) return undefined;
      return link;
    } catch {
      // no /proc: the realpath now must be the very inode we opened
      try {
        const real = await realpath(absolute);
        const now = await stat(real);
        return now.dev === st.dev && now.ino === st.ino ? real : undefined;
      } catch {
        return undefined;
      }
    }
  }
}

/** Reads up to `length` bytes at `position` (fewer at end of file). */
export async function readAt(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

function within(root: string, absolute: string): boolean {
  if (absolute === root) return true;
  const prefix = root.endsWith(sep) ? root : root + sep;
  return absolute.startsWith(prefix);
}

function fsError(err: NodeJS.ErrnoException, shown: string): LurkError {
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
