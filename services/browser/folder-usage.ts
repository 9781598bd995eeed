/**
 * How many bytes a workspace folder holds (`browser.downloads.maxFolderBytes`): the regular
 * files under it, walked without following symbolic links (a link counts nothing, a linked
 * folder is not entered). A folder that does not exist holds 0 bytes. The walk stops after
 * `maxEntries` entries and says so (`complete: false`), so a folder of millions of files costs a
 * bounded amount of work.
 */
import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

export interface FolderUsage {
  bytes: number;
  files: number;
  /** false: the walk stopped at maxEntries, and there is more than `bytes` */
  complete: boolean;
}

export const FOLDER_WALK_MAX_ENTRIES = 20_000;

export async function folderUsage(dir: string, maxEntries = FOLDER_WALK_MAX_ENTRIES): Promise<FolderUsage> {
  const usage: FolderUsage = { bytes: 0, files: 0, complete: true };
  let seen = 0;
  const pending = [dir];
  while (pending.length > 0) {
    const folder = pending.pop()!;
    let names: string[];
    try {
      const info = await lstat(folder);
      if (!info.isDirectory()) continue;
      names = await readdir(folder);
    } catch {
      continue; // gone meanwhile, or never there
    }
    for (const name of names) {
      if (++seen > maxEntries) {
        usage.complete = false;
        return usage;
      }
      const path = join(folder, name);
      const info = await lstat(path).catch(() => undefined);
      if (!info) continue;
      if (info.isDirectory()) pending.push(path);
      else if (info.isFile()) {
        usage.bytes += info.size;
        usage.files++;
      }
    }
  }
  return usage;
}
