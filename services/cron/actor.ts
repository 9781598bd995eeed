/**
 * The cron actor (seeds 001 §3.8): scheduled jobs (`at`, `every` with an anchor, `cron` with a
 * time zone) that inject a systemEvent into an agent's main session or run an agentTurn in an
 * isolated cron session. Serves `lurk.cron.add|list|get|edit|rm|run|runs|status` from its LMDB
 * store under `<dataDir>/cron`.
 *
 * One instance is active (the lease `cron` in lurk_leases, shared/runtime/active-instance.ts); only
 * the active one runs the scheduler. Any instance answers requests. Every instance keeps every
 * job: LMDB is the local store and the KV bucket lurk_cron_jobs replicates it between hosts
 * (replica.ts); instances on one data dir also notice changes through the store's generation.
 * After downtime a missed job fires once; the fire id `jobId:scheduledAt` is claimed
 * cluster-wide in the KV bucket lurk_cron_fires before it is published (claims.ts) and is the
 * Nats-Msg-Id, so each fire is published once across instances and hosts. A run's terminal event
 * (`lurk.run.evt.<runId>.done|error`) records lastStatus and lastDurationMs; runs whose end was
 * missed are reconciled through `lurk.sessions.run`.
 */
import { join } from "node:path";
import { buildSessionKey, LurkError, type CronJob } from "../../shared/contract/index.js";
import { ActiveInstance } from "../../shared/runtime/active-instance.js";
import type { ActorDefinition, ActorRuntime } from "../../shared/runtime/actor.js";
import { runEndFromRecords, subscribeRunEnds } from "../../shared/runtime/run-ends.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { FireClaims } from "./claims.js";
import { cronSessionKey, Firer, runTimeoutMs, type FireBus } from "./fire.js";
import { applyPatch, createJob, newJobId } from "./jobs.js";
import { JobReplica } from "./replica.js";
import { Scheduler, systemClock, type Clock } from "./scheduler.js";
import { CronStore } from "./store.js";

const GENERATION_POLL_MS = 1_000;
const RECONCILE_EVERY_MS = 10_000;
/** a run this old without a terminal event is looked up in its transcript */
const RECONCILE_AFTER_MS = 15_000;
/** past its timeout plus this, a run whose end never showed counts as failed */
const LOST_RUN_GRACE_MS = 60_000;

export interface CronActorOptions {
  /** "now" and timers; tests run the actor in-process with a clock they move (test/harness/clock.ts) */
  clock?: Clock;
}

export function cronActor(opts: CronActorOptions = {}): ActorDefinition {
  return {
    name: "cron",
    version: LURKBOT_VERSION,
    description: "scheduled jobs: at / every / cron expressions, systemEvent and agentTurn (LMDB + KV)",
    start: (rt) => start(rt, opts.clock ?? systemClock),
  };
}

export const definition: ActorDefinition = cronActor();

async function start(rt: ActorRuntime, clock: Clock) {
  const cfg = rt.config.cron;
  const store = new CronStore(join(rt.config.dataDir, "cron"), cfg.runLogMax);
  const agentIds = rt.config.agents.map((a) => a.id);
  // only the active instance schedules; the jobs are reloaded into the scheduler when it takes over
  const instance = await ActiveInstance.open(rt, "cron", {
    ttlMs: cfg.leaseTtlMs,
    renewMs: cfg.leaseRenewMs,
    takeOver: async () => reload(),
    activated: () => scheduler.start(),
    standBy: () => void scheduler.stop(),
  });
  const claims = await FireClaims.open(rt.nc, instance.holder, cfg.leaseTtlMs, () => clock.now());
  const firer = new Firer(store, busFor(rt, claims), clock, rt.log, (event, data) => rt.emit(event, data));

  const scheduler = new Scheduler(clock, async (jobIds) => {
    for (const jobId of jobIds) {
      if (!instance.isActive()) {
        scheduler.set(jobId, clock.now() + cfg.leaseRenewMs);
        continue;
      }
      try {
        const result = await firer.fire(jobId, "due");
        scheduler.set(jobId, result.checkAgainAt);
      } catch (err) {
        rt.log.warn({ err, jobId }, "cron fire failed; retrying shortly");
        scheduler.set(jobId, clock.now() + 5_000);
      }
    }
  });
  let generation = -1;
  const reload = () => {
    generation = store.generation();
    const entries: Array<[string, number | undefined]> = [];
    for (const job of store.jobs()) entries.push([job.id, slotOf(job)]);
    scheduler.rebuild(entries);
  };

  /** The active instance's scheduler follows a job's change (undefined: removed). */
  const plan = (jobId: string, job: CronJob | undefined) => {
    if (instance.isActive()) scheduler.set(jobId, slotOf(job));
  };
  // the bucket's jobs are in LMDB before this instance may schedule; jobs changed on another
  // instance later reach the scheduler
  const replica = await JobReplica.open(rt.nc, store, rt.log, plan);
  await replica.start();
  if (cfg.enabled) await instance.start();
  const poll = setInterval(() => {
    if (instance.isActive() && store.generation() !== generation) reload();
  }, GENERATION_POLL_MS);

  // a run's terminal event ends its fire
  const terminal = subscribeRunEnds(rt.nc, rt.subjects, rt.limits, rt.log, (runId, kind, read) => {
    const fireId = store.fireIdOfRun(runId);
    if (!fireId) return;
    // a malformed event is judged by its subject
    const event = read();
    const status = kind === "done" && event?.kind !== "error" ? "ok" : "error";
    const error = event?.kind === "error" ? `${event.code}: ${event.message}` : undefined;
    const reply = event?.kind === "done" && !event.silent ? event.text : "";
    endFire(firer, fireId, status, reply, error).catch((err) => rt.log.warn({ err, runId }, "could not record the end of a cron run"));
  });

  const reconcile = setInterval(() => void reconcileRuns(rt, store, firer, clock).catch((err) => rt.log.warn({ err }, "cron reconcile failed")), RECONCILE_EVERY_MS);
  reconcile.unref();

  const find = (jobId: string): CronJob => {
    const job = store.job(jobId);
    if (!job) throw new LurkError("NOT_FOUND", `no cron job ${jobId} (see \`lurkbot cron list\`)`);
    return job;
  };

  rt.serve("cron", "add", async (req) => {
    const now = clock.now();
    const job = createJob(req, newJobId(), now, agentIds);
    const added = await store.txn(() => {
      if (store.jobCount() >= cfg.maxJobs) return false;
      store.putJob(job, true);
      return true;
    }, "request");
    await replica.drain();
    if (!added) throw new LurkError("LIMIT_EXCEEDED", `there are ${cfg.maxJobs} cron jobs already (cron.maxJobs); remove some with \`lurkbot cron rm ID\``);
    plan(job.id, job);
    rt.emit("job_added", { jobId: job.id, name: job.name, kind: job.schedule.kind });
    return { job };
  });

  rt.serve("cron", "list", (req) => {
    const jobs = [...store.jobs()].filter((j) => (req.agentId === undefined || j.agentId === req.agentId) && (req.includeDisabled || j.enabled));
    jobs.sort((a, b) => (a.state.nextRunAtMs ?? Infinity) - (b.state.nextRunAtMs ?? Infinity) || a.createdAtMs - b.createdAtMs);
    return { jobs };
  });

  rt.serve("cron", "get", (req) => ({ job: find(req.jobId) }));

  rt.serve("cron", "edit", async (req) => {
    const updated = await store.txn(() => {
      const job = store.job(req.jobId);
      if (!job) return undefined;
      const next = applyPatch(job, req.patch, clock.now(), agentIds);
      store.putJob(next, true);
      return next;
    }, "request");
    await replica.drain();
    if (!updated) find(req.jobId);
    plan(req.jobId, updated);
    return { job: updated! };
  });

  rt.serve("cron", "rm", async (req) => {
    const removed = await store.txn(() => store.deleteJob(req.jobId, true), "request");
    await replica.drain();
    plan(req.jobId, undefined);
    if (removed) rt.emit("job_removed", { jobId: req.jobId });
    return { removed };
  });

  rt.serve("cron", "run", async (req) => {
    find(req.jobId);
    const result = await firer.fire(req.jobId, req.mode);
    if (req.mode === "due") plan(req.jobId, store.job(req.jobId));
    return { status: result.status, ...(result.fireId ? { fireId: result.fireId } : {}), ...(result.reason ? { reason: result.reason } : {}) };
  });

  rt.serve("cron", "runs", (req) => {
    if (req.jobId !== undefined && !store.job(req.jobId) && store.runs(req.jobId, 1).length === 0) find(req.jobId);
    return { runs: store.runs(req.jobId, req.limit, req.agentId) };
  });

  rt.serve("cron", "status", () => {
    let next: number | undefined = instance.isActive() ? scheduler.nextAt : undefined;
    if (next === undefined) {
      for (const j of store.jobs()) if (j.enabled && j.state.nextRunAtMs !== undefined && (next === undefined || j.state.nextRunAtMs < next)) next = j.state.nextRunAtMs;
    }
    return { running: cfg.enabled, active: instance.isActive(), jobs: store.jobCount(), ...(next !== undefined ? { nextRunAtMs: next } : {}) };
  });

  return {
    async stop() {
      clearInterval(poll);
      clearInterval(reconcile);
      terminal.stop();
      await instance.stop();
      await scheduler.stop();
      await replica.drain();
      await replica.stop();
      await store.close();
    },
  };
}

/** The time the scheduler holds for a job: its next slot while enabled. */
function slotOf(job: CronJob | undefined): number | undefined {
  return job?.enabled ? job.state.nextRunAtMs : undefined;
}

/** The bus side of a fire: JetStream publishes deduplicated by the fire id, sessions calls. */
function busFor(rt: ActorRuntime, claims: FireClaims): FireBus {
  const publish = async (subject: string, body: { id: string }) => {
    await rt.js.publish(subject, JSON.stringify(body), { msgID: body.id, timeout: 5_000 });
  };
  return {
    claimFire: (fireId) => claims.claim(fireId),
    firePublished: (fireId) => claims.published(fireId),
    publishInject: (agentId, inject) => publish(rt.subjects.inject(agentId), inject),
    publishRun: (agentId, request) => publish(rt.subjects.runRequest(agentId), request),
    async lastOrigin(agentId) {
      const { session } = await rt.client.call("sessions", "get", { sessionKey: buildSessionKey({ type: "main", agentId }) });
      return session?.lastOrigin;
    },
    async resetSession(sessionKey) {
      try {
        const { session } = await rt.client.call("sessions", "get", { sessionKey });
        if (session) await rt.client.call("sessions", "reset", { sessionKey, reason: "cron" });
      } catch (err) {
        rt.log.warn({ err, sessionKey }, "could not reset the cron session; the run continues its transcript");
      }
    },
  };
}

/** A fire's run ended: a successful isolated run's reply is posted to the main session first (isolation). */
async function endFire(firer: Firer, fireId: string, status: "ok" | "error", reply: string, error?: string): Promise<void> {
  if (status === "ok" && reply) await firer.postToMain(fireId, reply);
  await firer.finish(fireId, status, error);
}

/** Runs that never reported their end: ask their transcript, or give up after their timeout. */
async function reconcileRuns(rt: ActorRuntime, store: CronStore, firer: Firer, clock: Clock): Promise<void> {
  const now = clock.now();
  for (const entry of store.running()) {
    if (now - entry.startedAtMs < RECONCILE_AFTER_MS || !entry.runId) continue;
    const job = store.job(entry.jobId);
    if (job) {
      try {
        const { status, records } = await rt.client.call("sessions", "run", { sessionKey: cronSessionKey(job), runId: entry.runId });
        if (status === "done") await endFire(firer, entry.fireId, "ok", runEndFromRecords(records)?.text ?? "");
        else if (status === "error" || status === "aborted") await firer.finish(entry.fireId, "error", `the run ended with ${status}`);
        if (status !== "unknown" && status !== "started") continue;
      } catch (err) {
        rt.log.debug({ err, fireId: entry.fireId }, "could not look up a cron run");
      }
    }
    const limit = (job ? runTimeoutMs(job) : 3600_000) + LOST_RUN_GRACE_MS;
    if (now - entry.startedAtMs > limit) await firer.finish(entry.fireId, "error", `no end of run ${entry.runId} was seen within ${Math.round(limit / 1000)} s`);
  }
}
