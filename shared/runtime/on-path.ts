/**
 * Whether an executable is on PATH: the `requires.bins` gate of skills (agent-runner) and hooks
 * (hooks actor, `lurkbot hooks`). Lookups are cached for 30 s.
 */
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { delimiter, join } from "node:path";

const BIN_CACHE_MS = 30_000;
const binCache = new Map<string, { at: number; found: boolean }>();

/** whether an executable `bin` is in one of PATH's directories (names with a slash are never looked up) */
export async function onPath(bin: string, path: string): Promise<boolean> {
  if (!bin || bin.includes("/") || bin.includes("\0")) return false;
  const key = `${path}\0${bin}`;
  const hit = binCache.get(key);
  if (hit && Date.now() - hit.at < BIN_CACHE_MS) return hit.found;
  let found = false;
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    try {
      const file = join(dir, bin);
      await access(file, constants.X_OK);
      if ((await stat(file)).isFile()) {
        found = true;
        break;
      }
    } catch {
      // not here
    }
  }
  if (binCache.size > 500) binCache.clear();
  binCache.set(key, { at: Date.now(), found });
  return found;
}
