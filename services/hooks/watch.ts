/**
 * The file watches that wake a reload (fs.watch, one non-recursive watch per folder): each
 * folder is watched for any change, or only for changes of some names in it (config.json in
 * $LURKBOT_HOME, `hooks` in a workspace). `sync` makes the set of watches exactly the given one;
 * a folder that does not exist (yet) is not watched, and a watch that fails (its folder removed)
 * is dropped until the next sync. fs.watch is unreliable on some file systems (network, some
 * containers): the reloader's interval is the fallback, so nothing here ever throws.
 */
import { watch, type FSWatcher } from "node:fs";
import type { Logger } from "../../shared/runtime/logger.js";

/** names in the folder whose change matters; "any": every change */
export type WatchFilter = ReadonlySet<string> | "any";

export class HookWatch {
  private readonly watches = new Map<string, { watcher: FSWatcher; filter: WatchFilter }>();

  constructor(private readonly onChange: (dir: string, name: string | null) => void, private readonly log: Pick<Logger, "debug">) {}

  sync(targets: ReadonlyMap<string, WatchFilter>): void {
    for (const [dir, w] of this.watches) {
      if (!targets.has(dir)) this.drop(dir, w.watcher);
    }
    for (const [dir, filter] of targets) {
      const have = this.watches.get(dir);
      if (have) {
        have.filter = filter;
        continue;
      }
      try {
        const watcher = watch(dir, { persistent: false }, (_type, name) => {
          const f = this.watches.get(dir)?.filter;
          const file = typeof name === "string" ? name : null;
          if (f && (f === "any" || file === null || f.has(file))) this.onChange(dir, file);
        });
        watcher.on("error", () => this.drop(dir, watcher));
        this.watches.set(dir, { watcher, filter });
      } catch (err) {
        // ENOENT (not made yet) or a file system without watches: the interval covers it
        this.log.debug({ dir, err: (err as Error).message }, "not watched");
      }
    }
  }

  get size(): number {
    return this.watches.size;
  }

  close(): void {
    for (const [dir, w] of this.watches) this.drop(dir, w.watcher);
  }

  private drop(dir: string, watcher: FSWatcher): void {
    if (this.watches.get(dir)?.watcher === watcher) this.watches.delete(dir);
    try {
      watcher.close();
    } catch {
      // already closed
    }
  }
}
