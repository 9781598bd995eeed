/** CPU time of processes from /proc (Linux), for per-turn CPU figures in the benchmark. */
import { readdirSync, readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100;

/** user + system CPU milliseconds a process has used so far (0 when it is gone). */
export function cpuMs(pid: number, statPath = `/proc/${pid}/stat`): number {
  try {
    const stat = readFileSync(statPath, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[11] is utime and fields[12] stime (the 14th and 15th fields of stat)
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** user and system CPU milliseconds so far, apart */
export function cpuSplitMs(pid: number): { user: number; system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { user: (Number(fields[11]) * 1000) / TICKS_PER_SECOND, system: (Number(fields[12]) * 1000) / TICKS_PER_SECOND };
  } catch {
    return { user: 0, system: 0 };
  }
}

/** CPU milliseconds used by each named process between `start()` and `stop()`. */
export function cpuMeter(pids: Record<string, number>): { stop(): Record<string, number> } {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)]));
  return {
    stop: () => Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid) - before[k]!])),
  };
}

/** CPU milliseconds so far of each thread of a process, by thread name (threads of one name summed). */
export function threadCpuMs(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const name = `${readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim()}${Number(tid) === pid ? "(main)" : `#${tid}`}`;
      out[name] = (out[name] ?? 0) + cpuMs(Number(tid), `/proc/${pid}/task/${tid}/stat`);
    }
  } catch {
    // the process is gone
  }
  return out;
}
