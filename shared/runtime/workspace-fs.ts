/**
 * The workspace-confined filesystem: every tool of the tools actor gets it instead of `node:fs`
 * (services/tools/fs-confined.ts re-exports it), and the browser actor reads an upload's files
 * and writes downloads through it (one implementation: actors share only shared/).
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
 * normal file by path, and where the other links are cannot be found out. So a regular file
 * with more than one link is refused (PATH_ESCAPE), for reads and writes alike: no tool reads
 * or writes a file that may be shared with one outside the workspace. (`hardlinks: "allow"`
 * exists for callers that need it; no tool passes it. The read-only skill roots are outside
 * the workspace by design and not subject to this rule.)
 *
 * I/O: the read path (create, openRead and the reads through its handle) runs synchronous fs
 * calls when `syncIo` is set (the piscina worker: one task per thread, so blocking it costs
 * nothing and saves a libuv thread-pool round trip per step), async ones otherwise (the actor's
 * own thread). Both go through the same code, so the checks and their order are identical.
 *
 * Writes (writeFileAtomic, mkdirp, unlink) open the target's directory one component at a
 * time, each step through the previous directory fd and checked via /proc/self/fd, then create
 * a temp file and rename it through that fd's path: the directory written into is the one that
 * was checked, whatever happens to the path meanwhile.
 */
import { constants, type Stats } from "node:fs";
import { randomBytes } from "node:crypto";
import { lstat, mkdir, open, readlink, realpath, rename, unlink, type FileHandle } from "node:fs/promises";
import { basename, dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { LurkError } from "../contract/index.js";
import { asyncIo, fsError, join2, readAt, syncIo, within, type DirRef, type ReadHandle, type ReadIo } from "./workspace-fs-io.js";

export { readAt, type ReadHandle } from "./workspace-fs-io.js";

export const MAX_PATH_LENGTH = 4096;


export interface ConfinedFsOptions {
  /** test hook: runs between the pre-check and the open (to prove the fd check) */
  beforeOpen?: (absolutePath: string) => Promise<void> | void;
  /** test hook: runs after the directory fd of a write was verified, before the file is written */
  beforeWrite?: (absolutePath: string) => Promise<void> | void;
  /**
   * absolute directories that `openRead` with `readOnlyRoots: true` may also open (the skill
   * folders outside the workspace), by absolute path: the realpath and the opened fd must be
   * inside the realpath of one of them. Nothing writes there (every writer uses the workspace).
   */
  readOnlyRoots?: readonly string[];
  /**
   * run the read path with synchronous fs calls (only where blocking the thread is free: a
   * worker thread running one task at a time); the test hooks are still awaited
   */
  syncIo?: boolean;
}

export interface WriteOptions {
  /** refuse data longer than this (LIMIT_EXCEEDED) */
  maxBytes?: number;
  /** create missing parent directories (default true) */
  createParents?: boolean;
  /** refuse (CONFLICT) unless the file is still the one read (inode, size, mtime), for read-modify-write */
  ifUnchanged?: Stats;
  /** refuse (CONFLICT) if the file exists */
  mustNotExist?: boolean;
}

export interface WriteResult {
  /** workspace-relative path written (a symlink inside the workspace is followed) */
  path: string;
  bytes: number;
  created: boolean;
}

export interface OpenReadOptions {
  /** "refuse" (default): regular files with more than one hard link are refused */
  hardlinks?: "allow" | "refuse";
  /** an absolute path inside one of the options' readOnlyRoots is allowed too (`read` only) */
  readOnlyRoots?: boolean;
}

/** A file opened inside the workspace. Read through `handle` only; close it when done. */
export interface ConfinedFile {
  handle: ReadHandle;
  /** workspace-relative path, for messages to the model */
  path: string;
  /** the real path of the opened fd */
  realPath: string;
  stat: Stats;
  close(): Promise<void>;
}

/** A file createExclusive made: write through `handle`, then `close()` (kept) or `discard()` (removed). */
export interface CreatedFile {
  handle: FileHandle;
  /** workspace-relative path, for messages */
  path: string;
  close(): Promise<void>;
  discard(): Promise<void>;
}

export class ConfinedFs {
  private constructor(
    /** the workspace as configured (absolute) */
    readonly root: string,
    /** the workspace with symlinks resolved: what fds must be inside */
    readonly realRoot: string,
    private readonly opts: ConfinedFsOptions,
    private readonly io: ReadIo,
  ) {}

  static async create(root: string, opts: ConfinedFsOptions = {}): Promise<ConfinedFs> {
    const absolute = resolve(root);
    const io = opts.syncIo ? syncIo : asyncIo;
    let real: string;
    try {
      real = await io.realpath(absolute);
      if (!(await io.stat(real)).isDirectory()) throw Object.assign(new Error("not a directory"), { code: "ENOTDIR" });
    } catch (err) {
      throw new LurkError("NOT_FOUND", `the workspace ${absolute} does not exist or is not a directory (${(err as NodeJS.ErrnoException).code ?? "error"})`);
    }
    return new ConfinedFs(absolute, real, opts, io);
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
    if (opts.readOnlyRoots && typeof userPath === "string" && isAbsolute(userPath) && !userPath.includes("\0") && userPath.length <= MAX_PATH_LENGTH) {
      const absolute = resolve(userPath);
      if (!within(this.root, absolute) && !within(this.realRoot, absolute)) {
        const root = await this.readOnlyRootOf(absolute);
        if (root) return this.openReadOnlyRoot(absolute, root);
      }
    }
    const absolute = this.resolve(userPath);
    const shown = this.display(absolute);
    const pre = await this.io.realpath(absolute).catch(async (err: NodeJS.ErrnoException) => {
      // a missing file behind a symlink leading out is an escape, not "not found" (no probing outside)
      if (err.code === "ENOENT" && !(await this.nearestRealInside(absolute))) {
        throw new LurkError("PATH_ESCAPE", `"${shown}" goes through a symlink that leads outside the workspace; refused`);
      }
      throw fsError(err, shown);
    });
    if (!this.isInside(pre)) {
      throw new LurkError("PATH_ESCAPE", `"${shown}" is (or goes through) a symlink that leads outside the workspace; refused`);
    }
    await this.opts.beforeOpen?.(absolute);
    let handle: ReadHandle;
    try {
      handle = await this.io.open(absolute, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
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
      if ((opts.hardlinks ?? "refuse") === "refuse" && st.nlink > 1) {
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

  /**
   * Reads a whole regular text file for a read-modify-write (edit, apply_patch): hard links
   * refused, over `maxBytes` is LIMIT_EXCEEDED. `stat` goes back as `ifUnchanged` of the write.
   */
  async readForEdit(userPath: unknown, opts: { maxBytes: number }): Promise<{ data: Buffer; path: string; stat: Stats }> {
    const file = await this.openRead(userPath, { hardlinks: "refuse" });
    try {
      if (file.stat.size > opts.maxBytes) {
        throw new LurkError("LIMIT_EXCEEDED", `"${file.path}" is ${file.stat.size} bytes, over the ${opts.maxBytes}-byte cap for files the tools edit`);
      }
      const data = await readAt(file.handle, 0, opts.maxBytes + 1);
      if (data.length > opts.maxBytes) throw new LurkError("LIMIT_EXCEEDED", `"${file.path}" grew over the ${opts.maxBytes}-byte cap while it was read`);
      return { data, path: file.path, stat: file.stat };
    } finally {
      await file.close();
    }
  }

  /** Creates a directory and its parents inside the workspace; returns its workspace-relative path. */
  async mkdirp(userPath: unknown): Promise<string> {
    const absolute = this.resolve(userPath);
    const dir = await this.openDir(absolute, this.display(absolute), true);
    await dir.close();
    return this.display(absolute);
  }

  /**
   * Writes a file atomically: a temp file in the same directory, fsynced, then renamed over the
   * target, so a reader sees the old or the new content, never a mix. The directory is opened
   * one component at a time, each fd's real path checked (`/proc/self/fd/N`), and the temp file
   * and rename go through that fd's path, so a directory swapped for a symlink after the check
   * cannot redirect the write. A target that is a symlink is followed only if it stays inside;
   * a target with more than one hard link, a directory or a special file is refused.
   */
  async writeFileAtomic(userPath: unknown, data: Buffer | string, opts: WriteOptions = {}): Promise<WriteResult> {
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    const absolute = this.resolve(userPath);
    if (opts.maxBytes !== undefined && bytes.length > opts.maxBytes) {
      throw new LurkError("LIMIT_EXCEEDED", `the content is ${bytes.length} bytes, over the ${opts.maxBytes}-byte cap for a written file`);
    }
    return this.writeResolved(absolute, bytes, opts, 0);
  }

  /**
   * Every check of writeFileAtomic without writing anything (apply_patch validates all files
   * first). Missing parent directories are fine if `createParents` is not false.
   */
  async checkWritable(userPath: unknown, opts: Pick<WriteOptions, "createParents" | "mustNotExist"> = {}): Promise<{ path: string; exists: boolean }> {
    const absolute = this.resolve(userPath);
    const shown = this.display(absolute);
    let dir: DirRef;
    try {
      dir = await this.openDir(dirname(absolute), shown, false);
    } catch (err) {
      if (LurkError.is(err) && err.code === "NOT_FOUND" && opts.createParents !== false && (err.details as { missing?: boolean } | undefined)?.missing) {
        return { path: shown, exists: false };
      }
      throw err;
    }
    try {
      const target = await this.inspectTarget(dir, basename(absolute), shown);
      if (target.kind === "symlink") {
        const inner = await this.checkWritable(target.absolute, opts);
        return inner;
      }
      if (target.kind === "file" && opts.mustNotExist) throw new LurkError("CONFLICT", `"${shown}" already exists`);
      return { path: shown, exists: target.kind === "file" };
    } finally {
      await dir.close();
    }
  }

  /** Removes a regular file (not a directory, symlink, or hard-linked file) inside the workspace. */
  async unlink(userPath: unknown): Promise<string> {
    const absolute = this.resolve(userPath);
    const shown = this.display(absolute);
    const dir = await this.openDir(dirname(absolute), shown, false);
    try {
      const name = basename(absolute);
      const st = await lstat(join2(dir.ref, name)).catch((err: NodeJS.ErrnoException) => {
        throw fsError(err, shown);
      });
      if (st.isSymbolicLink()) throw new LurkError("TOOL_INVALID_ARGS", `"${shown}" is a symbolic link; only regular files are deleted`);
      if (!st.isFile()) throw new LurkError("TOOL_INVALID_ARGS", `"${shown}" is not a regular file; only regular files are deleted`);
      if (st.nlink > 1) throw new LurkError("PATH_ESCAPE", `"${shown}" has ${st.nlink} hard links and may be shared with a file outside the workspace; refused`);
      await unlink(join2(dir.ref, name)).catch((err: NodeJS.ErrnoException) => {
        throw fsError(err, shown);
      });
      return shown;
    } finally {
      await dir.close();
    }
  }

  /**
   * Creates a new file for writing (the exclusive-create writer: a download's copy): never over
   * an existing name (CONFLICT, so the caller can pick another), never through a symlink
   * (O_EXCL|O_NOFOLLOW), in a directory opened from the real root one verified component at a
   * time as the writes' (`createParents`: missing components are made inside verified
   * directories only). Write through `handle`; `close()` keeps the file, `discard()` removes it
   * (a copy that failed halfway leaves nothing). The directory stays open until then, so both
   * act on the very directory that was checked.
   */
  async createExclusive(userPath: unknown, opts: { createParents?: boolean; mode?: number } = {}): Promise<CreatedFile> {
    const absolute = this.resolve(userPath);
    const shown = this.display(absolute);
    const dir = await this.openDir(dirname(absolute), shown, opts.createParents !== false);
    const target = join2(dir.ref, basename(absolute));
    let handle: FileHandle;
    try {
      handle = await open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW | constants.O_NOCTTY, opts.mode ?? 0o644);
    } catch (err) {
      await dir.close();
      const e = err as NodeJS.ErrnoException;
      if (e.code === "EEXIST") throw new LurkError("CONFLICT", `"${shown}" already exists`);
      if (e.code === "ENOSPC" || e.code === "EDQUOT") throw new LurkError("TOOL_FAILED", `no space left to write "${shown}"`);
      throw fsError(e, shown);
    }
    let done = false;
    const finish = async (keep: boolean) => {
      if (done) return;
      done = true;
      await handle.close().catch(() => undefined);
      if (!keep) await unlink(target).catch(() => undefined);
      await dir.close();
    };
    return { handle, path: shown, close: () => finish(true), discard: () => finish(false) };
  }

  private async writeResolved(absolute: string, bytes: Buffer, opts: WriteOptions, depth: number): Promise<WriteResult> {
    const shown = this.display(absolute);
    await this.opts.beforeOpen?.(absolute);
    const dir = await this.openDir(dirname(absolute), shown, opts.createParents !== false);
    try {
      const name = basename(absolute);
      const target = await this.inspectTarget(dir, name, shown);
      if (target.kind === "symlink") {
        if (depth > 0) throw new LurkError("PATH_ESCAPE", `"${shown}" changed while it was written; refused`);
        return await this.writeResolved(target.absolute, bytes, opts, depth + 1);
      }
      if (target.kind === "file" && opts.mustNotExist) throw new LurkError("CONFLICT", `"${shown}" already exists`);
      if (opts.ifUnchanged) {
        const was = opts.ifUnchanged;
        const now = target.kind === "file" ? target.stat : undefined;
        if (!now || now.ino !== was.ino || now.dev !== was.dev || now.size !== was.size || now.mtimeMs !== was.mtimeMs) {
          throw new LurkError("CONFLICT", `"${shown}" changed since it was read; read it again and retry`);
        }
      }
      await this.opts.beforeWrite?.(absolute);
      const tmpName = `.${name.slice(0, 200)}.lurk-tmp-${randomBytes(6).toString("hex")}`;
      const tmpPath = join2(dir.ref, tmpName);
      const mode = target.kind === "file" ? target.stat.mode & 0o7777 : 0o666;
      let handle: FileHandle | undefined;
      try {
        handle = await open(tmpPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
        if (target.kind === "file") await handle.chmod(mode).catch(() => undefined);
        let written = 0;
        while (written < bytes.length) {
          const { bytesWritten } = await handle.write(bytes, written, bytes.length - written, written);
          written += bytesWritten;
        }
        await handle.sync();
        await handle.close();
        handle = undefined;
        await rename(tmpPath, join2(dir.ref, name));
      } catch (err) {
        await handle?.close().catch(() => undefined);
        await unlink(tmpPath).catch(() => undefined);
        if (LurkError.is(err)) throw err;
        const e = err as NodeJS.ErrnoException;
        if (e.code === "ENOSPC" || e.code === "EDQUOT") throw new LurkError("TOOL_FAILED", `no space left to write "${shown}"`);
        throw fsError(e, shown);
      }
      return { path: shown, bytes: bytes.length, created: target.kind === "missing" };
    } finally {
      await dir.close();
    }
  }

  /** What is at `name` in `dir` (not following a last symlink, but judging where it leads). */
  private async inspectTarget(dir: DirRef, name: string, shown: string): Promise<
    { kind: "missing" } | { kind: "file"; stat: Stats } | { kind: "symlink"; absolute: string }
  > {
    let st: Stats;
    try {
      st = await lstat(join2(dir.ref, name));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return { kind: "missing" };
      throw fsError(err as NodeJS.ErrnoException, shown);
    }
    if (st.isSymbolicLink()) {
      const link = await readlink(join2(dir.ref, name)).catch((err: NodeJS.ErrnoException) => {
        throw fsError(err, shown);
      });
      const lexical = resolve(dir.realPath, link);
      let real: string;
      try {
        real = await realpath(lexical);
      } catch {
        // dangling: judge by where it points
        if (!this.isInside(lexical)) throw new LurkError("PATH_ESCAPE", `"${shown}" is a symlink that leads outside the workspace; refused`);
        throw new LurkError("TOOL_INVALID_ARGS", `"${shown}" is a dangling symlink; write to the path it names instead`);
      }
      if (!this.isInside(real)) throw new LurkError("PATH_ESCAPE", `"${shown}" is a symlink that leads outside the workspace; refused`);
      return { kind: "symlink", absolute: real };
    }
    if (st.isDirectory()) throw new LurkError("TOOL_INVALID_ARGS", `"${shown}" is a directory, not a file`);
    if (!st.isFile()) throw new LurkError("TOOL_INVALID_ARGS", `"${shown}" is not a regular file (device, FIFO or socket); refused`);
    if (st.nlink > 1) {
      throw new LurkError("PATH_ESCAPE", `"${shown}" has ${st.nlink} hard links and may be shared with a file outside the workspace; refused`);
    }
    return { kind: "file", stat: st };
  }

  /**
   * Opens the directory `absDir` (inside the root) one component at a time from the real root,
   * each step through the previous fd (`/proc/self/fd/N/<name>`) and checked: the fd's real
   * path must be inside the workspace. With `create`, missing components are made. Symlinked
   * directories that stay inside are followed. The result's `ref` is a path that names exactly
   * the opened directory (the fd's /proc path), for the operations in it.
   */
  private async openDir(absDir: string, shown: string, create: boolean): Promise<DirRef> {
    const rel = relative(within(this.root, absDir) || !within(this.realRoot, absDir) ? this.root : this.realRoot, absDir);
    const parts = rel === "" ? [] : rel.split(sep).filter((p) => p !== "" && p !== ".");
    if (parts.includes("..")) throw new LurkError("PATH_ESCAPE", `the path "${shown}" is outside the workspace`);
    let current = await this.openDirFd(this.realRoot, shown);
    try {
      for (const part of parts) {
        const next = join2(current.ref, part);
        if (create) {
          await mkdir(next, { mode: 0o777 }).catch((err: NodeJS.ErrnoException) => {
            if (err.code !== "EEXIST") throw fsError(err, shown);
          });
        }
        const opened = await this.openDirFd(next, shown);
        await current.close();
        current = opened;
      }
      return current;
    } catch (err) {
      await current.close();
      throw err;
    }
  }

  private async openDirFd(path: string, shown: string): Promise<DirRef> {
    let handle: FileHandle;
    try {
      handle = await open(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOCTTY);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === "ENOENT") {
        throw new LurkError("NOT_FOUND", `a parent directory of "${shown}" does not exist`, { details: { missing: true } });
      }
      if (e.code === "ENOTDIR") throw new LurkError("TOOL_INVALID_ARGS", `a parent of "${shown}" is not a directory`);
      throw fsError(e, shown);
    }
    const close = () => handle.close().catch(() => undefined);
    try {
      const st = await handle.stat();
      let real: string | undefined;
      let ref: string;
      try {
        real = await readlink(`/proc/self/fd/${handle.fd}`);
        if (real.endsWith(" (deleted)") || !isAbsolute(real)) real = undefined;
        ref = `/proc/self/fd/${handle.fd}`;
      } catch {
        // no /proc: the path's realpath must be the very inode we opened (a small race remains)
        real = await this.fdRealPath(handle, path, st);
        ref = real ?? path;
      }
      if (real === undefined || !this.isInside(real)) {
        throw new LurkError("PATH_ESCAPE", `"${shown}" is (or goes through) a symlink that leads outside the workspace, or changed while it was opened; refused`);
      }
      return { ref, realPath: real, close };
    } catch (err) {
      await close();
      throw err;
    }
  }

  /** The real path of the read-only root `absolute` is (lexically) in, if any. */
  private async readOnlyRootOf(absolute: string): Promise<string | undefined> {
    for (const root of this.opts.readOnlyRoots ?? []) {
      const configured = resolve(root);
      const real = await this.io.realpath(configured).catch(() => undefined);
      if (real === undefined) continue;
      if (within(configured, absolute) || within(real, absolute)) return real;
    }
    return undefined;
  }

  /** openRead for a file under a read-only root: realpath and fd inside that root, a regular file. */
  private async openReadOnlyRoot(absolute: string, realRootOf: string): Promise<ConfinedFile> {
    const shown = absolute;
    const pre = await this.io.realpath(absolute).catch((err: NodeJS.ErrnoException) => {
      throw fsError(err, shown);
    });
    if (!within(realRootOf, pre)) throw new LurkError("PATH_ESCAPE", `"${shown}" is (or goes through) a symlink that leads outside the skill folder; refused`);
    let handle: ReadHandle;
    try {
      handle = await this.io.open(pre, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    } catch (err) {
      throw fsError(err as NodeJS.ErrnoException, shown);
    }
    try {
      const st = await handle.stat();
      const real = await this.io.readlink(`/proc/self/fd/${handle.fd}`).catch(() => pre);
      if (!within(realRootOf, real)) throw new LurkError("PATH_ESCAPE", `"${shown}" changed while it was opened and now leads outside the skill folder; refused`);
      if (st.isDirectory()) throw new LurkError("TOOL_INVALID_ARGS", `"${shown}" is a directory, not a file`);
      if (!st.isFile()) throw new LurkError("TOOL_INVALID_ARGS", `"${shown}" is not a regular file (device, FIFO or socket); refused`);
      return { handle, path: shown, realPath: real, stat: st, close: () => handle.close().catch(() => undefined) };
    } catch (err) {
      await handle.close().catch(() => undefined);
      throw err;
    }
  }

  /** Whether the deepest existing ancestor of `absolute` (a dangling link judged by its target) is inside. */
  private async nearestRealInside(absolute: string): Promise<boolean> {
    for (let p = absolute; ; p = dirname(p)) {
      try {
        return this.isInside(await this.io.realpath(p));
      } catch {
        const link = await this.io.readlink(p).catch(() => undefined);
        if (link !== undefined && !this.isInside(resolve(dirname(p), link))) return false;
        if (dirname(p) === p) return false;
      }
    }
  }

  /** What the kernel says the fd is; undefined if it cannot be established. */
  private async fdRealPath(handle: ReadHandle, absolute: string, st: Stats): Promise<string | undefined> {
    try {
      const link = await this.io.readlink(`/proc/self/fd/${handle.fd}`);
      if (!isAbsolute(link)) return undefined;
      if (link.endsWith(" (deleted)")) {
        // replaced (an atomic write renamed over it) or removed after the open: the kernel still
        // names the directory it was in. A file is never the root itself, which also keeps a
        // sibling of the root literally named "<root> (deleted)" out.
        const was = link.slice(0, -" (deleted)".length);
        return this.isInside(was) && was !== this.realRoot ? was : undefined;
      }
      return link;
    } catch {
      // no /proc: the realpath now must be the very inode we opened
      try {
        const real = await this.io.realpath(absolute);
        const now = await this.io.stat(real);
        return now.dev === st.dev && now.ino === st.ino ? real : undefined;
      } catch {
        return undefined;
      }
    }
  }
}

