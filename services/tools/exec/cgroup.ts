/**
 * A pids cgroup per exec call, when this process may create one: the only process bound that
 * also holds for root (the kernel never applies RLIMIT_NPROC to uid 0), and a reliable way to
 * kill everything a command started, whatever session or process group it moved to.
 *
 * Found at start from /proc/self/cgroup: cgroup v1 (`/sys/fs/cgroup/pids/<own path>`) or a
 * pure v2 hierarchy whose `cgroup.subtree_control` already delegates `pids`. The probe creates
 * and removes a child; if anything fails, exec runs without it (RLIMIT_NPROC only).
 */
import { existsSync } from "node:fs";
import { mkdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

export interface PidsCgroupRoot {
  dir: string;
  version: 1 | 2;
}

export async function findPidsCgroupRoot(): Promise<PidsCgroupRoot | undefined> {
  let lines: string[];
  try {
    lines = (await readFile("/proc/self/cgroup", "utf8")).split("\n");
  } catch {
    return undefined;
  }
  const candidates: PidsCgroupRoot[] = [];
  for (const line of lines) {
    const [, controllers, path] = line.split(":", 3) as [string, string | undefined, string | undefined];
    if (path === undefined || controllers === undefined) continue;
    if (controllers.split(",").includes("pids")) candidates.push({ dir: join("/sys/fs/cgroup/pids", path), version: 1 });
    else if (controllers === "" && existsSync("/sys/fs/cgroup/cgroup.controllers")) candidates.push({ dir: join("/sys/fs/cgroup", path), version: 2 });
  }
  for (const root of candidates) {
    if (root.version === 2) {
      const control = await readFile(join(root.dir, "cgroup.subtree_control"), "utf8").catch(() => "");
      if (!control.split(/\s+/).includes("pids")) continue;
    }
    const probe = await PidsCgroup.create(root, `lurkbot-probe-${process.pid}-${Date.now()}`, 8).catch(() => undefined);
    if (probe) {
      await probe.remove();
      return root;
    }
  }
  return undefined;
}

export class PidsCgroup {
  private constructor(readonly root: PidsCgroupRoot, readonly dir: string) {}

  static async create(root: PidsCgroupRoot, name: string, maxPids: number): Promise<PidsCgroup> {
    const dir = join(root.dir, name);
    await mkdir(dir);
    try {
      await writeFile(join(dir, "pids.max"), String(maxPids));
    } catch (err) {
      await rmdir(dir).catch(() => undefined);
      throw err;
    }
    return new PidsCgroup(root, dir);
  }

  /** the file a process writes its pid to, to enter the group (before it forks) */
  get procsFile(): string {
    return join(this.dir, "cgroup.procs");
  }

  async pids(): Promise<number[]> {
    const text = await readFile(this.procsFile, "utf8").catch(() => "");
    return text.split("\n").filter(Boolean).map(Number).filter((n) => Number.isInteger(n) && n > 0);
  }

  /** SIGKILLs every member until the group is empty (or `timeoutMs` passes). */
  async killAll(timeoutMs = 2_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    if (this.root.version === 2) await writeFile(join(this.dir, "cgroup.kill"), "1").catch(() => undefined);
    for (;;) {
      const pids = await this.pids();
      if (pids.length === 0) return true;
      if (Date.now() > deadline) return false;
      for (const pid of pids) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** Kills what is left and removes the group. */
  async remove(): Promise<void> {
    await this.killAll();
    for (let i = 0; i < 50; i++) {
      try {
        await rmdir(this.dir);
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }
}
