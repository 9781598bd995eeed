/**
 * Cron scheduling cost with many jobs (default 10 000: a third `every`, a third cron
 * expressions in five time zones, a third `at`), against a baseline measured in the same run:
 * a bare croner loop (`new Cron(expr, {timezone}).nextRun()` per cron job, what a naive
 * scheduler does). Measured: next-run computation for every job (twice: cold and warm JIT),
 * heap rebuild, popping every job, writing the jobs to the LMDB store and rebuilding the
 * schedule from it (what a standby does when it takes over), and the heap/RSS the schedule holds.
 * Wiring: `results.cron = await cronScheduling()` in test/bench/main.ts (no bus needed).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Cron } from "croner";
import type { CronJob } from "../../shared/contract/index.js";
import { createJob } from "../../services/cron/jobs.js";
import { firstRun, nextRunAfter } from "../../services/cron/schedule.js";
import { DueHeap } from "../../services/cron/scheduler.js";
import { CronStore } from "../../services/cron/store.js";

const ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney"];

function schedules(n: number, now: number): CronJob["schedule"][] {
  return Array.from({ length: n }, (_, i) => {
    switch (i % 3) {
      case 0: return { kind: "every", everyMs: 60_000 * (1 + (i % 720)) };
      case 1: return { kind: "cron", expr: `${i % 60} ${(i >> 6) % 24} * * ${i % 7}`, tz: ZONES[i % ZONES.length]! };
      default: return { kind: "at", atMs: now + 1000 * (i + 1) };
    }
  });
}

const time = (fn: () => void): number => {
  const t = performance.now();
  fn();
  return performance.now() - t;
};

const gc = () => (globalThis as { gc?: () => void }).gc?.();

export async function cronScheduling(n = 10_000): Promise<Record<string, number>> {
  const now = Date.now();
  const all = schedules(n, now);
  const crons = all.filter((s): s is Extract<CronJob["schedule"], { kind: "cron" }> => s.kind === "cron");

  // baseline: a fresh croner job per cron schedule (same options as the actor), one nextRun each;
  // measured before and after our runs, the faster one counts (the machine may be busy)
  const bare = () => time(() => {
    for (const s of crons) new Cron(s.expr, { timezone: s.tz, paused: true, mode: "5-or-6-parts" }).nextRun(new Date(now));
  });
  let baselineCronerMs = bare();

  gc();
  const before = process.memoryUsage();
  let next: Array<number | undefined> = [];
  const planColdMs = time(() => {
    next = all.map((s) => firstRun(s, now, now));
  });
  const planWarmMs = time(() => {
    next = all.map((s) => nextRunAfter(s, now, now));
  });
  const cronOnlyWarmMs = time(() => {
    for (const s of crons) nextRunAfter(s, now, now);
  });
  const heap = new DueHeap();
  const heapRebuildMs = time(() => heap.rebuild(next.map((at, i) => [`job${i}`, at])));
  gc();
  const after = process.memoryUsage();
  const popAllMs = time(() => heap.popDue(Infinity));
  baselineCronerMs = Math.min(baselineCronerMs, bare());

  const dir = mkdtempSync(join(tmpdir(), "lurk-bench-cron-"));
  const store = new CronStore(dir, 200);
  try {
    const jobs = all.map((schedule, i) => createJob({
      name: `job ${i}`, agentId: "main", enabled: true, deleteAfterRun: false, schedule, sessionTarget: "main", wakeMode: "next-heartbeat",
      payload: { kind: "systemEvent", text: `reminder ${i}` },
    }, `cron_${i.toString(16).padStart(8, "0")}`, now, ["main"]));
    const t0 = performance.now();
    await store.txn(() => {
      for (const job of jobs) store.putJob(job, true);
    });
    const storeWriteMs = performance.now() - t0;
    const reloadHeap = new DueHeap();
    const storeReloadMs = time(() => {
      const entries: Array<[string, number | undefined]> = [];
      for (const job of store.jobs()) entries.push([job.id, job.state.nextRunAtMs]);
      reloadHeap.rebuild(entries);
    });
    return {
      jobs: n,
      cronJobs: crons.length,
      baselineCronerMs: round(baselineCronerMs),
      planColdMs: round(planColdMs),
      planWarmMs: round(planWarmMs),
      cronOnlyWarmMs: round(cronOnlyWarmMs),
      heapRebuildMs: round(heapRebuildMs),
      popAllMs: round(popAllMs),
      storeWriteMs: round(storeWriteMs),
      storeReloadMs: round(storeReloadMs),
      perJobPlanWarmUs: round((planWarmMs * 1000) / n),
      /** next runs of all jobs (cold JIT) and of the cron jobs (warm) vs the bare croner loop over the cron jobs */
      cronVsBaselineCold: round(planColdMs / baselineCronerMs),
      cronVsBaselineWarm: round(cronOnlyWarmMs / baselineCronerMs),
      /** what the schedule (pattern cache + heap) holds; exact only with node --expose-gc */
      heapUsedMb: round((after.heapUsed - before.heapUsed) / 2 ** 20),
      rssMb: round((after.rss - before.rss) / 2 ** 20),
    };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const round = (x: number) => Math.round(x * 100) / 100;

// `node dist/test/bench/cron.js` prints the figures
if (import.meta.url === `file://${process.argv[1]}`) {
  cronScheduling().then((r) => process.stdout.write(JSON.stringify(r, null, 2) + "\n"), (e) => {
    process.stderr.write(String(e) + "\n");
    process.exit(1);
  });
}
