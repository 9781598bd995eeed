/** CPU time of processes from /proc (Linux), for per-turn CPU figures in the benchmark. */
import { readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100;

/** user + system CPU milliseconds a process has used so far (0 when it is gone). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[11] is utime and fields[12] stime (the 14th and 15th fields of stat)
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** CPU milliseconds used by each named process between `start()` and `stop()`. */
export function cpuMeter(pids: Record<string, number>): { stop(): Record<string, number> } {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)]));
  return {
    stop: () => Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid) - before[k]!])),
  };
}
