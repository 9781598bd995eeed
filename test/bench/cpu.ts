/** CPU time of processes and threads from /proc (Linux), for per-turn CPU figures in the benchmark. */
import { readdirSync, readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100;

export interface CpuTime {
  user: number;
  system: number;
}

/** user and system CPU milliseconds a process (or a thread's `/proc/PID/task/TID/stat`) has used so far; zeros when it is gone. */
export function cpuTime(statPath: string): CpuTime {
  try {
    const stat = readFileSync(statPath, "utf8");
    // utime and stime are the 14th and 15th fields; the command name before them may hold spaces
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { user: (Number(fields[11]) * 1000) / TICKS_PER_SECOND, system: (Number(fields[12]) * 1000) / TICKS_PER_SECOND };
  } catch {
    return { user: 0, system: 0 };
  }
}

/** CPU milliseconds (user, system) each named process used between the call and `stop()`. */
export function cpuMeter(pids: Record<string, number>): { stop(): Record<string, CpuTime> } {
  const read = () => Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuTime(`/proc/${pid}/stat`)]));
  const before = read();
  return {
    stop: () => Object.fromEntries(Object.entries(read()).map(([k, now]) => [k, { user: now.user - before[k]!.user, system: now.system - before[k]!.system }])),
  };
}

/** CPU milliseconds so far of each thread of a process, keyed `name(main)` or `name#TID`. */
export function threadCpuMs(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const name = `${readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim()}${Number(tid) === pid ? "(main)" : `#${tid}`}`;
      const t = cpuTime(`/proc/${pid}/task/${tid}/stat`);
      out[name] = t.user + t.system;
    }
  } catch {
    // the process is gone
  }
  return out;
}

/** Read and write syscalls a process has made so far (`/proc/PID/io` syscr/syscw, all threads); zeros when unreadable. */
export function ioCalls(pid: number): { reads: number; writes: number } {
  try {
    const io = readFileSync(`/proc/${pid}/io`, "utf8");
    return { reads: Number(/syscr: (\d+)/.exec(io)?.[1] ?? 0), writes: Number(/syscw: (\d+)/.exec(io)?.[1] ?? 0) };
  } catch {
    return { reads: 0, writes: 0 };
  }
}
