/**
 * Where Chromium writes downloads before they are checked: `<dataDir>/browser/staging/`, one
 * folder per running Chromium (`<pid>-<random>`, mode 700, removed when that Chromium is gone).
 * Under the actor's data dir rather than the OS temp folder (often a RAM-backed tmpfs), and
 * named by the actor process's pid so that what a killed actor (SIGKILL, a worker out of memory)
 * left behind is removed when an actor starts (`removeStale`): every entry whose pid is not a
 * running process, or that is not such a folder. A live instance's folders (another actor on the
 * same home) are kept.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";

/** The staging root of a data dir. */
export function stagingRoot(dataDir: string): string {
  return join(dataDir, "browser", "staging");
}

const ENTRY = /^(\d+)-[0-9a-f]{12}$/;

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Removes what earlier actor processes left in `root` (see the module's comment); the names removed. */
export async function removeStale(root: string): Promise<string[]> {
  const names = await readdir(root).catch(() => [] as string[]);
  const stale = names.filter((name) => {
    const pid = ENTRY.exec(name)?.[1];
    return pid === undefined || (Number(pid) !== process.pid && !running(Number(pid)));
  });
  await Promise.all(stale.map((name) => rm(join(root, name), { recursive: true, force: true }).catch(() => undefined)));
  return stale;
}

/** A fresh staging folder for one Chromium (mode 700; the root is made 700 too when missing). */
export async function createStagingDir(root: string): Promise<string> {
  await mkdir(root, { recursive: true, mode: 0o700 });
  const dir = join(root, `${process.pid}-${randomBytes(6).toString("hex")}`);
  await mkdir(dir, { mode: 0o700 });
  return dir;
}
