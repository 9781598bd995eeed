/**
 * Jobs replicated between cron instances through the JetStream KV bucket `lurk_cron_jobs`
 * (CRON_JOBS_BUCKET, history 1, key = job id, value = the CronJob). LMDB stays the local store
 * the actor reads; this keeps it equal to the bucket on every host.
 *
 * Contract:
 * - Every job change committed to LMDB here (a request or a fire, CronStore.onJobChange) is
 *   written to the bucket with compare-and-set on the revision last seen for that key; `drain()`
 *   resolves once everything changed so far is in JetStream (request handlers await it before
 *   answering, so an acknowledged add survives the loss of this host).
 * - A lost compare-and-set (another instance wrote the key meanwhile) merges the two versions
 *   (mergeJobs) and writes again: the newer definition (updatedAtMs) wins; the fire-owned state
 *   comes from the side that fired; a removal wins over everything.
 * - Entries written by other instances (the watch) are applied to LMDB unless this instance has
 *   an unwritten change of that job (its next write merges them).
 * - `start()` first applies every entry in the bucket (an emptied LMDB gets its jobs back; a job
 *   removed elsewhere while we were down goes), then publishes local jobs the bucket never had
 *   (an install from before the bucket existed).
 */
import { Kvm, type KV, type KvEntry } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { CRON_JOBS_BUCKET, cronJobSchema, type CronJob } from "../../shared/contract/index.js";
import { isWrongRevision, parseKvValue } from "../../shared/runtime/lease.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { CronStore } from "./store.js";

type Origin = "request" | "fire";
const RETRY_MS = 1_000;
const MAX_CAS_TRIES = 5;

export class JobReplica {
  /** the bucket revision this instance last applied or wrote, per job */
  private readonly revisions = new Map<string, number>();
  /** changes not yet written, by job (a fire wins over a request for the state) */
  private readonly pending = new Map<string, Origin>();
  private readonly inflight = new Set<string>();
  private worker: Promise<void> | undefined;
  private watcher: { stop(): void } | undefined;
  private stopped = false;
  private idle: Array<() => void> = [];

  private constructor(
    private readonly kv: KV,
    private readonly store: CronStore,
    private readonly log: Logger,
    /** a job changed by another instance (undefined: removed) */
    private readonly onRemote: (jobId: string, job: CronJob | undefined) => void,
  ) {
    store.onJobChange((ids, origin) => {
      for (const id of ids) this.pending.set(id, this.pending.get(id) === "fire" ? "fire" : origin);
      this.kick();
    });
  }

  static async open(nc: NatsConnection, store: CronStore, log: Logger, onRemote: (jobId: string, job: CronJob | undefined) => void): Promise<JobReplica> {
    const kv = await new Kvm(nc).open(CRON_JOBS_BUCKET);
    return new JobReplica(kv, store, log, onRemote);
  }

  /** Applies the bucket to LMDB, publishes local-only jobs, then follows the bucket. */
  async start(): Promise<void> {
    const { values } = await this.kv.status();
    const seen = new Set<string>();
    let initialDone!: () => void;
    const initial = new Promise<void>((resolve) => (initialDone = resolve));
    if (values === 0) initialDone();
    const iter = await this.kv.watch();
    this.watcher = iter;
    void (async () => {
      for await (const entry of iter) {
        seen.add(entry.key);
        await this.applyRemote(entry).catch((err) => this.log.warn({ err, jobId: entry.key }, "could not apply a replicated cron job"));
        if (entry.isUpdate) initialDone();
      }
    })();
    await initial;
    const localOnly = [...this.store.jobs()].filter((job) => !seen.has(job.id));
    for (const job of localOnly) this.pending.set(job.id, "request");
    if (localOnly.length > 0) this.log.info({ jobs: localOnly.length }, "publishing cron jobs the replica bucket did not have");
    this.kick();
    await this.drain();
  }

  /** Resolves once every change made so far is written (or the replica stopped). */
  drain(): Promise<void> {
    if (this.stopped || (this.pending.size === 0 && this.inflight.size === 0)) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.watcher?.stop();
    await this.worker?.catch(() => undefined);
    for (const resolve of this.idle.splice(0)) resolve();
  }

  private kick(): void {
    if (this.worker || this.stopped) return;
    this.worker = this.work().finally(() => {
      this.worker = undefined;
      if (this.pending.size > 0 && !this.stopped) setTimeout(() => this.kick(), RETRY_MS).unref();
    });
  }

  private async work(): Promise<void> {
    while (this.pending.size > 0 && !this.stopped) {
      const [jobId, origin] = this.pending.entries().next().value as [string, Origin];
      this.pending.delete(jobId);
      this.inflight.add(jobId);
      try {
        await this.write(jobId, origin);
      } catch (err) {
        this.log.warn({ err, jobId }, "could not replicate a cron job; retrying");
        if (!this.pending.has(jobId)) this.pending.set(jobId, origin);
        return;
      } finally {
        this.inflight.delete(jobId);
      }
    }
    if (this.pending.size === 0) for (const resolve of this.idle.splice(0)) resolve();
  }

  /** Writes LMDB's version of the job with compare-and-set, merging with a newer remote one. */
  private async write(jobId: string, origin: Origin): Promise<void> {
    for (let attempt = 0; attempt < MAX_CAS_TRIES; attempt++) {
      const local = this.store.job(jobId);
      const known = this.revisions.get(jobId);
      try {
        if (!local) {
          if (known !== undefined) await this.kv.delete(jobId, { previousSeq: known });
          else await this.kv.delete(jobId);
          return;
        }
        const data = JSON.stringify(local);
        this.revisions.set(jobId, known === undefined ? await this.kv.create(jobId, data) : await this.kv.update(jobId, data, known));
        return;
      } catch (err) {
        if (!isWrongRevision(err)) throw err;
      }
      // someone else wrote the key: merge and try again at its revision
      const remote = await this.kv.get(jobId);
      if (!remote) {
        this.revisions.delete(jobId);
        continue;
      }
      this.revisions.set(jobId, remote.revision);
      const theirs = remote.operation === "PUT" ? parseKvValue(cronJobSchema, remote.value) : undefined;
      if (!theirs) {
        // removed elsewhere: a removal wins
        await this.store.txn(() => this.store.deleteJob(jobId, false), "replica");
        this.onRemote(jobId, undefined);
        return;
      }
      if (!local) continue; // our removal, written at the new revision
      const merged = mergeJobs(local, theirs, origin);
      await this.store.txn(() => this.store.putJob(merged, false), "replica");
      this.onRemote(jobId, merged);
    }
    throw new Error(`cron job ${jobId}: the replica bucket kept changing under ${MAX_CAS_TRIES} writes`);
  }

  /** An entry from the watch: applied unless we know it or have an unwritten change of the job. */
  private async applyRemote(entry: KvEntry): Promise<void> {
    const jobId = entry.key;
    if (entry.revision <= (this.revisions.get(jobId) ?? 0)) return;
    if (this.pending.has(jobId) || this.inflight.has(jobId)) return;
    this.revisions.set(jobId, entry.revision);
    const job = entry.operation === "PUT" ? parseKvValue(cronJobSchema, entry.value) : undefined;
    if (entry.operation === "PUT" && !job) {
      this.log.warn({ jobId, revision: entry.revision }, "a replicated cron job did not parse; ignored");
      return;
    }
    const current = this.store.job(jobId);
    if (!job && !current) return;
    if (job && current && JSON.stringify(current) === JSON.stringify(job)) return;
    await this.store.txn(() => (job ? this.store.putJob(job, false) : this.store.deleteJob(jobId, false)), "replica");
    this.onRemote(jobId, job);
  }
}

const FIRE_STATE = ["lastRunAtMs", "lastStatus", "lastError", "lastDurationMs", "runningAtMs"] as const;

/**
 * Two versions of one job written concurrently: the definition of the one edited last
 * (updatedAtMs; a tie goes to a request over a fire); the fire-owned state from the side that
 * fired (`ours` "fire": local, else remote); nextRunAtMs from the newer definition when the
 * definitions differ (a new schedule re-plans), else from the side that fired.
 */
function mergeJobs(local: CronJob, remote: CronJob, ours: Origin): CronJob {
  const definitionIsLocal = local.updatedAtMs > remote.updatedAtMs || (local.updatedAtMs === remote.updatedAtMs && ours === "request");
  const definition = definitionIsLocal ? local : remote;
  const fired = ours === "fire" ? local : remote;
  const planned = local.updatedAtMs !== remote.updatedAtMs ? definition : fired;
  const state: CronJob["state"] = {};
  for (const key of FIRE_STATE) if (fired.state[key] !== undefined) (state as Record<string, unknown>)[key] = fired.state[key];
  if (definition.enabled && planned.state.nextRunAtMs !== undefined) state.nextRunAtMs = planned.state.nextRunAtMs;
  return { ...definition, state };
}
