/**
 * The cron actor's LMDB store (`<dataDir>/cron`): jobs (with their state) and the run log.
 *   jobs    jobId -> CronJob
 *   runs    [jobId, startedAtMs, fireId] -> run-log entry (capped per job, oldest dropped)
 *   fires   fireId -> runs key (one entry per fire: a fire id seen before is never fired again)
 *   runIds  runId -> fireId (the terminal run event finds its entry)
 *   byTime  [startedAtMs, fireId] -> runs key (the newest runs of all jobs)
 *   running fireId -> runs key, while the entry waits for its run's end
 *   meta    "generation" -> bumped by every add, edit or remove, so an active scheduler in
 *           another process on the same data dir notices and reloads
 * Writes that must agree (a run's end and its job's state) go through `txn`.
 */
import { mkdirSync } from "node:fs";
import { open, type Database, type RootDatabase } from "lmdb";
import type { CronJob, cronRunLogSchema } from "../../shared/contract/index.js";
import type { z } from "zod";

export type RunLogEntry = z.infer<typeof cronRunLogSchema>;
type RunKey = [string, number, string];

/** Who changed a job: a request (add/edit/rm), a fire (its state), or the replica (a change from another instance). */
export type ChangeOrigin = "request" | "fire" | "replica";
/** Called after a transaction committed, with the jobs it wrote or removed (replica writes are not reported). */
export type JobChangeListener = (jobIds: string[], origin: Exclude<ChangeOrigin, "replica">) => void;

export class CronStore {
  private readonly root: RootDatabase;
  private readonly jobsDb: Database<CronJob, string>;
  private readonly runsDb: Database<RunLogEntry, RunKey>;
  private readonly firesDb: Database<RunKey, string>;
  private readonly runIdsDb: Database<string, string>;
  private readonly byTimeDb: Database<RunKey, [number, string]>;
  private readonly metaDb: Database<number, string>;
  private readonly runningDb: Database<RunKey, string>;

  private changed: Set<string> | undefined;
  private listener: JobChangeListener | undefined;

  constructor(path: string, private readonly runLogMax: number) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    this.root = open({ path, compression: true });
    this.jobsDb = this.root.openDB({ name: "jobs" });
    this.runsDb = this.root.openDB({ name: "runs" });
    this.firesDb = this.root.openDB({ name: "fires" });
    this.runIdsDb = this.root.openDB({ name: "runIds" });
    this.byTimeDb = this.root.openDB({ name: "byTime" });
    this.metaDb = this.root.openDB({ name: "meta" });
    this.runningDb = this.root.openDB({ name: "running" });
  }

  /** The replica (replica.ts) hears of every committed job change made here. */
  onJobChange(listener: JobChangeListener): void {
    this.listener = listener;
  }

  /** Runs `fn` in one write transaction (reads inside see the latest data); `origin` tells the listener who changed jobs. */
  txn<T>(fn: () => T, origin: ChangeOrigin = "fire"): Promise<T> {
    let result!: T;
    const changed = new Set<string>();
    return this.root.transaction(() => {
      changed.clear();
      this.changed = origin === "replica" ? undefined : changed;
      try {
        result = fn();
      } finally {
        this.changed = undefined;
      }
    }).then(() => {
      if (changed.size > 0 && origin !== "replica") this.listener?.([...changed], origin);
      return result;
    });
  }

  // ------------------------------------------------------------------ jobs

  job(jobId: string): CronJob | undefined {
    return this.jobsDb.get(jobId);
  }

  *jobs(): Iterable<CronJob> {
    for (const { value } of this.jobsDb.getRange()) yield value;
  }

  jobCount(): number {
    return this.jobsDb.getKeysCount();
  }

  /** Inside txn: writes the job; `definitionChanged` bumps the generation. */
  putJob(job: CronJob, definitionChanged: boolean): void {
    void this.jobsDb.put(job.id, job);
    this.changed?.add(job.id);
    if (definitionChanged) this.bump();
  }

  /** Inside txn: removes the job (and, with `withRuns`, its run log). */
  deleteJob(jobId: string, withRuns: boolean): boolean {
    const existed = this.jobsDb.get(jobId) !== undefined;
    void this.jobsDb.remove(jobId);
    if (existed) this.changed?.add(jobId);
    if (withRuns) for (const { key, value } of this.runsDb.getRange({ start: [jobId], end: [`${jobId}\u0000`] })) this.dropRun(key, value);
    if (existed) this.bump();
    return existed;
  }

  generation(): number {
    return this.metaDb.get("generation") ?? 0;
  }

  private bump(): void {
    void this.metaDb.put("generation", this.generation() + 1);
  }

  // ------------------------------------------------------------------ run log

  hasFire(fireId: string): boolean {
    return this.firesDb.get(fireId) !== undefined;
  }

  run(fireId: string): RunLogEntry | undefined {
    const key = this.firesDb.get(fireId);
    return key ? this.runsDb.get(key) : undefined;
  }

  fireIdOfRun(runId: string): string | undefined {
    return this.runIdsDb.get(runId);
  }

  /** Inside txn: adds or replaces a run-log entry; the job's oldest entries beyond the cap go. */
  putRun(entry: RunLogEntry): void {
    const existing = this.firesDb.get(entry.fireId);
    const key: RunKey = existing ?? [entry.jobId, entry.startedAtMs, entry.fireId];
    void this.runsDb.put(key, { ...entry, startedAtMs: key[1] });
    if (!existing) {
      void this.firesDb.put(entry.fireId, key);
      void this.byTimeDb.put([key[1], entry.fireId], key);
      this.cap(entry.jobId);
    }
    if (entry.runId) void this.runIdsDb.put(entry.runId, entry.fireId);
    if (entry.status === "running") void this.runningDb.put(entry.fireId, key);
    else void this.runningDb.remove(entry.fireId);
  }

  /** Newest first; one job's or all jobs', optionally only those of one agent. */
  runs(jobId: string | undefined, limit: number, agentId?: string): RunLogEntry[] {
    const out: RunLogEntry[] = [];
    const ofAgent = (entry: RunLogEntry) => agentId === undefined || (entry.agentId ?? this.jobsDb.get(entry.jobId)?.agentId) === agentId;
    if (jobId !== undefined) {
      for (const { value } of this.runsDb.getRange({ start: [`${jobId}\u0000`], end: [jobId], reverse: true })) {
        if (out.length >= limit) break;
        if (ofAgent(value)) out.push(value);
      }
      return out;
    }
    for (const { value } of this.byTimeDb.getRange({ reverse: true })) {
      if (out.length >= limit) break;
      const entry = this.runsDb.get(value);
      if (entry && ofAgent(entry)) out.push(entry);
    }
    return out;
  }

  /** Entries still waiting for their run's end. */
  running(): RunLogEntry[] {
    const out: RunLogEntry[] = [];
    for (const { value } of this.runningDb.getRange()) {
      const entry = this.runsDb.get(value);
      if (entry?.status === "running") out.push(entry);
    }
    return out;
  }

  private cap(jobId: string): void {
    const range = { start: [jobId] as unknown as RunKey, end: [`${jobId}\u0000`] as unknown as RunKey };
    const count = this.runsDb.getKeysCount(range);
    if (count <= this.runLogMax) return;
    for (const { key, value } of this.runsDb.getRange({ ...range, limit: count - this.runLogMax })) this.dropRun(key, value);
  }

  private dropRun(key: RunKey, value: RunLogEntry): void {
    void this.runsDb.remove(key);
    void this.firesDb.remove(value.fireId);
    void this.byTimeDb.remove([key[1], value.fireId]);
    void this.runningDb.remove(value.fireId);
    if (value.runId) void this.runIdsDb.remove(value.runId);
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
