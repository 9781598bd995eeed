/**
 * `<workspace>/.lurkbot/<sub>`: where exec saves long outputs and background jobs keep their
 * logs. Commands can write the workspace and may have planted symlinks there, so each of the
 * two directories must be a real one (created if missing, never a symlink), and a file in them
 * is created new (O_EXCL | O_NOFOLLOW) and its opened fd checked to be inside the workspace.
 */
import { constants } from "node:fs";
import { lstat, mkdir, open, readlink, unlink, type FileHandle } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { LurkError } from "../../shared/contract/index.js";

/** A directory inside the workspace that is really a directory (not a symlink), created if missing. */
async function realDir(path: string): Promise<void> {
  await mkdir(path, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "EEXIST") throw err;
  });
  const st = await lstat(path);
  if (st.isSymbolicLink() || !st.isDirectory()) throw new LurkError("PATH_ESCAPE", `${path} is not a plain directory`);
}

/** `<root>/.lurkbot/<sub>`, both made real directories; its absolute path. */
export async function lurkbotDir(root: string, sub: string): Promise<string> {
  const base = join(root, ".lurkbot");
  await realDir(base);
  const dir = join(base, sub);
  await realDir(dir);
  return dir;
}

/**
 * Creates `<dir>/<name>` (`dir` from lurkbotDir under `root`) as a new file: O_CREAT | O_EXCL |
 * O_NOFOLLOW plus `access`. The opened fd must be inside `root` (the directory may have been
 * swapped for a symlink meanwhile): PATH_ESCAPE otherwise, the stray file removed. Open errors
 * (EEXIST included) are thrown as they are.
 */
export async function createNewFile(root: string, dir: string, name: string, access: number): Promise<FileHandle> {
  const handle = await open(join(dir, name), access | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  try {
    const real = await readlink(`/proc/self/fd/${handle.fd}`);
    if (real !== root && !real.startsWith(root.endsWith(sep) ? root : root + sep)) {
      await unlink(real).catch(() => undefined);
      throw new LurkError("PATH_ESCAPE", `the directory ${relative(root, dir)} was moved outside the workspace`);
    }
    return handle;
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/** An id as a file name stem: [A-Za-z0-9._-] only, no leading dot, at most 120 characters. */
export function fileStem(id: string): string {
  return id.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "_").slice(0, 120);
}
