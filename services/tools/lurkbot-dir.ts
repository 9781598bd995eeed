/**
 * `<workspace>/.lurkbot/<sub>`: where exec saves long outputs and background jobs keep their
 * logs. Commands can write the workspace and may have planted symlinks there, so each of the
 * two directories must be a real one (created if missing, never a symlink). Callers then create
 * their file with O_EXCL | O_NOFOLLOW and check the opened fd is inside the workspace.
 */
import { lstat, mkdir } from "node:fs/promises";
import { join } from "node:path";
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

/** An id as a file name stem: [A-Za-z0-9._-] only, no leading dot, at most 120 characters. */
export function fileStem(id: string): string {
  return id.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "_").slice(0, 120);
}
