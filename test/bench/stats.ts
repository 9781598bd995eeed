/** Latency statistics for the benchmark. */
import { readFileSync } from "node:fs";
export interface LatencyStats {
  n: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
}

export function latencyStats(samplesMs: number[]): LatencyStats {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return { n: sorted.length, p50Ms: round(at(0.5)), p99Ms: round(at(0.99)), meanMs: round(sorted.reduce((a, b) => a + b, 0) / Math.max(1, sorted.length)) };
}

/** `a` over `base` at the p50, two decimals (a base under a microsecond counts as one). */
export function p50Ratio(a: LatencyStats, base: LatencyStats): number {
  return Math.round((a.p50Ms / Math.max(0.001, base.p50Ms)) * 100) / 100;
}

/** Statistics of calls too short for milliseconds: microseconds per call. */
export interface MicroStats {
  n: number;
  p50Us: number;
  p99Us: number;
  meanUs: number;
}

/**
 * Times `fn` in `samples` batches of `batch` sequential calls; each sample is the batch's time
 * divided by `batch` (one call alone is below the timer's resolution).
 */
export async function timePerCallUs(samples: number, batch: number, fn: () => Promise<unknown>): Promise<MicroStats> {
  const perCallUs: number[] = [];
  for (let i = 0; i < samples; i++) {
    const start = process.hrtime.bigint();
    for (let j = 0; j < batch; j++) await fn();
    perCallUs.push(Number(process.hrtime.bigint() - start) / 1e3 / batch);
  }
  const s = latencyStats(perCallUs); // the same order statistics; the unit is microseconds
  return { n: s.n, p50Us: s.p50Ms, p99Us: s.p99Ms, meanUs: s.meanMs };
}

/** Runs `fn` n times sequentially and returns the per-call milliseconds. */
export async function timeEach(n: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    await fn(i);
    out.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return out;
}

export function rssMb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return Math.round((kb / 1024) * 10) / 10;
  } catch {
    return 0;
  }
}

export function progress(text: string): void {
  process.stderr.write(`[bench] ${text}\n`);
}
