/**
 * Firing a job and recording how its run ended.
 *
 * A fire has the id `jobId:scheduledAtMs` (fireIdFor); it is the `Nats-Msg-Id` and the envelope
 * id of what is published, so a retried or doubled fire (a crash between publish and record, a
 * second cron instance during a lease hand-over) is stored once by JetStream:
 *   systemEvent -> `lurk.inject.<agentId>` (INBOUND) for the agent's main session; the router
 *                  appends it (wake "next-heartbeat") or starts a run with it (wake "now",
 *                  run id runIdFor("inject", fireId))
 *   agentTurn   -> `lurk.run.req.<agentId>` (RUNS) in the job's own cron session (reset before
 *                  each fire, so every run starts fresh), run id runIdFor("cron", fireId), with
 *                  model, thinking, timeout and the delivery origin
 * Order: publish, then record. A publish that fails leaves the job's slot unchanged, so the
 * retry has the same fire id. A fire id already in the run log is never published again.
 */
import {
  buildSessionKey, envelope, LurkError, runIdFor, type CronJob, type Origin, type RunRequest, type SystemInject,
} from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { ClaimResult } from "./claims.js";
import { fireIdFor, planDue } from "./schedule.js";
import type { Clock } from "./scheduler.js";
import type { CronStore, RunLogEntry } from "./store.js";

export interface FireBus {
  publishInject(agentId: string, inject: SystemInject): Promise<void>;
  publishRun(agentId: string, request: RunRequest): Promise<void>;
  /** the last conversation of the agent's main session, if any */
  lastOrigin(agentId: string): Promise<Origin | undefined>;
  /** a fresh transcript for the cron session (best effort) */
  resetSession(sessionKey: string): Promise<void>;
  /** the cluster-wide claim of a fire id (claims.ts): "ours" to publish it */
  claimFire(fireId: string): Promise<ClaimResult>;
  /** the fire is stored in its stream (best effort) */
  firePublished(fireId: string): Promise<void>;
}

export interface FireResult {
  status: "fired" | "skipped";
  fireId?: string;
  reason?: string;
  /** when to look at the job again (its next slot, or a retry) */
  checkAgainAt?: number | undefined;
}

/** A systemEvent run waits this long for its end before it counts as lost. */
const SYSTEM_EVENT_RUN_TIMEOUT_MS = 3600_000;
const PUBLISH_RETRY_MS = 5_000;

export function runTimeoutMs(job: Pick<CronJob, "payload">): number {
  return job.payload.kind === "agentTurn" ? job.payload.timeoutSeconds * 1000 : SYSTEM_EVENT_RUN_TIMEOUT_MS;
}

/** The run id a fire leads to (none for a systemEvent that waits for the next heartbeat). */
export function runIdOfFire(job: Pick<CronJob, "payload" | "wakeMode">, fireId: string): string | undefined {
  if (job.payload.kind === "agentTurn") return runIdFor("cron", fireId);
  return job.wakeMode === "now" ? runIdFor("inject", fireId) : undefined;
}

export function cronSessionKey(job: Pick<CronJob, "agentId" | "id" | "sessionTarget">): string {
  return job.sessionTarget === "main" ? buildSessionKey({ type: "main", agentId: job.agentId }) : buildSessionKey({ type: "cron", agentId: job.agentId, jobId: job.id });
}

export function buildInject(job: CronJob, fireId: string, nowMs: number): SystemInject {
  if (job.payload.kind !== "systemEvent") throw new LurkError("INTERNAL", "not a systemEvent job");
  return envelope("lurk.inject.v1", {
    agentId: job.agentId,
    sessionKey: cronSessionKey(job),
    source: "cron" as const,
    text: job.payload.text,
    wake: job.wakeMode,
    trigger: "cron" as const,
    deliverTo: "last" as const,
    id: fireId,
    ts: nowMs,
  }) as SystemInject;
}

/** The post of an isolated run's reply into the main session (seeds' isolation.postToMain*), or undefined. */
export function buildPostToMain(job: CronJob, fireId: string, replyText: string, nowMs: number): SystemInject | undefined {
  const iso = job.isolation;
  const reply = replyText.trim();
  if (!iso || job.sessionTarget !== "isolated" || !reply) return undefined;
  const body = iso.postToMainMode === "full" ? reply : reply.split(/\n\s*\n/)[0]!.trim();
  const text = body.length > iso.postToMainMaxChars ? `${body.slice(0, iso.postToMainMaxChars - 1)}…` : body;
  return envelope("lurk.inject.v1", {
    agentId: job.agentId,
    sessionKey: buildSessionKey({ type: "main", agentId: job.agentId }),
    source: "cron" as const,
    text: `${iso.postToMainPrefix}: ${job.name}: ${text}`,
    wake: "next-heartbeat" as const,
    trigger: "cron" as const,
    deliverTo: "none" as const,
    id: `post:${fireId}`,
    ts: nowMs,
  }) as SystemInject;
}

export function buildRunRequest(job: CronJob, fireId: string, nowMs: number, origin: Origin | undefined): RunRequest {
  if (job.payload.kind !== "agentTurn") throw new LurkError("INTERNAL", "not an agentTurn job");
  const p = job.payload;
  return envelope("lurk.run.request.v1", {
    runId: runIdFor("cron", fireId),
    sessionKey: cronSessionKey(job),
    agentId: job.agentId,
    sessionType: "cron" as const,
    trigger: "cron" as const,
    causationId: fireId,
    inputs: [{ kind: "user" as const, text: p.message, attachments: [], sourceId: fireId }],
    ...(origin ? { origin: { ...origin, messageIds: [] } } : {}),
    deliver: origin !== undefined,
    options: { ...(p.model ? { model: p.model } : {}), ...(p.thinking ? { thinking: p.thinking } : {}), timeoutMs: p.timeoutSeconds * 1000 },
    id: fireId,
    ts: nowMs,
  }) as RunRequest;
}

export class Firer {
  constructor(
    private readonly store: CronStore,
    private readonly bus: FireBus,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly emit: (event: string, data: Record<string, unknown>) => void = () => undefined,
  ) {}

  /**
   * "due": fires the job's current slot if it has come (once, however many slots it missed).
   * "force": fires now, whatever the schedule says (also a disabled job); the slot stays.
   */
  async fire(jobId: string, mode: "due" | "force"): Promise<FireResult> {
    const now = this.clock.now();
    const job = this.store.job(jobId);
    if (!job) return { status: "skipped", reason: "no such job" };
    const plan = mode === "force" ? { scheduledAtMs: now, nextRunAtMs: job.state.nextRunAtMs } : planDue(job, now);
    if (!plan) {
      const reason = !job.enabled ? "the job is disabled" : job.state.nextRunAtMs === undefined ? "the job has no next run" : `not due until ${new Date(job.state.nextRunAtMs).toISOString()}`;
      return { status: "skipped", reason, checkAgainAt: job.enabled ? job.state.nextRunAtMs : undefined };
    }
    const fireId = fireIdFor(job.id, plan.scheduledAtMs);
    const log = this.log.child({ jobId: job.id, fireId });
    if (this.store.hasFire(fireId)) {
      // fired before (by us or another instance); make sure the slot moved on
      const after = await this.advance(job.id, plan.scheduledAtMs, plan.nextRunAtMs, mode);
      return { status: "fired", fireId, reason: "fired before", checkAgainAt: after };
    }
    const base = { jobId: job.id, agentId: job.agentId, fireId, scheduledAtMs: plan.scheduledAtMs, startedAtMs: now };
    const state = job.state;
    if (state.runningAtMs !== undefined && now - state.runningAtMs < runTimeoutMs(job)) {
      const reason = `the previous run (since ${new Date(state.runningAtMs).toISOString()}) is still running`;
      const after = await this.record(job, { ...base, status: "skipped", error: reason, endedAtMs: now }, plan.nextRunAtMs, mode);
      log.info({ reason }, "cron fire skipped");
      this.emit("fire_skipped", { jobId: job.id, fireId, reason });
      return { status: "skipped", fireId, reason, checkAgainAt: after };
    }
    const claim = await this.bus.claimFire(fireId);
    if (claim === "published") {
      // another instance (or this host before it lost its store) fired this slot
      const after = await this.advance(job.id, plan.scheduledAtMs, plan.nextRunAtMs, mode);
      log.info("cron fire already published by another instance");
      return { status: "fired", fireId, reason: "fired before", checkAgainAt: after };
    }
    if (claim === "busy") return { status: "skipped", fireId, reason: "another cron instance is publishing this fire", checkAgainAt: now + PUBLISH_RETRY_MS };
    let runId: string | undefined;
    try {
      runId = await this.publish(job, fireId, now);
    } catch (err) {
      const error = LurkError.from(err);
      if (error.code === "VALIDATION_FAILED") {
        // nothing to retry: the job cannot run as configured (e.g. no conversation to deliver to)
        const after = await this.record(job, { ...base, status: "error", error: error.message, endedAtMs: now }, plan.nextRunAtMs, mode);
        log.warn({ err: error.message }, "cron fire failed");
        await this.bus.firePublished(fireId).catch(() => undefined); // settled: nobody retries this slot
        this.emit("fire_failed", { jobId: job.id, fireId, error: error.message });
        return { status: "skipped", fireId, reason: error.message, checkAgainAt: after };
      }
      log.warn({ err: error.message }, "cron fire could not be published; retrying");
      if (mode === "force") throw error;
      return { status: "skipped", fireId, reason: error.message, checkAgainAt: now + PUBLISH_RETRY_MS };
    }
    await this.bus.firePublished(fireId).catch((err) => log.warn({ err }, "could not mark the fire claim published"));
    const entry: RunLogEntry = runId ? { ...base, status: "running", runId } : { ...base, status: "ok", endedAtMs: this.clock.now() };
    const after = await this.record(job, entry, plan.nextRunAtMs, mode);
    log.info({ runId, kind: job.payload.kind, mode }, "cron job fired");
    this.emit("fired", { jobId: job.id, fireId, ...(runId ? { runId } : {}), mode });
    return { status: "fired", fireId, checkAgainAt: after };
  }

  /**
   * Posts an isolated run's reply into the agent's main session when its job asks for it
   * (`isolation`); the inject's id `post:<fireId>` makes a repeat land once. Call before finish
   * (a deleteAfterRun job is gone after it).
   */
  async postToMain(fireId: string, replyText: string): Promise<void> {
    const entry = this.store.run(fireId);
    const job = entry && entry.status === "running" ? this.store.job(entry.jobId) : undefined;
    const inject = job ? buildPostToMain(job, fireId, replyText, this.clock.now()) : undefined;
    if (!job || !inject) return;
    await this.bus.publishInject(job.agentId, inject);
    this.emit("posted_to_main", { fireId, jobId: job.id });
  }

  /** Records how a fire's run ended (terminal event or reconciliation); idempotent. */
  async finish(fireId: string, status: "ok" | "error", error?: string): Promise<boolean> {
    const endedAtMs = this.clock.now();
    const done = await this.store.txn(() => {
      const entry = this.store.run(fireId);
      if (!entry || entry.status !== "running") return false;
      this.store.putRun({ ...entry, status, endedAtMs, ...(error !== undefined ? { error } : {}) });
      const job = this.store.job(entry.jobId);
      if (!job || job.state.runningAtMs !== entry.startedAtMs) return true;
      const { runningAtMs: _running, lastError: _lastError, ...rest } = job.state;
      const state = { ...rest, lastStatus: status, lastDurationMs: Math.max(0, endedAtMs - entry.startedAtMs), ...(error !== undefined ? { lastError: error } : {}) };
      if (status === "ok" && job.deleteAfterRun) this.store.deleteJob(job.id, false);
      else this.store.putJob({ ...job, state }, false);
      return true;
    });
    if (done) this.emit("run_finished", { fireId, status, ...(error ? { error } : {}) });
    return done;
  }

  private async publish(job: CronJob, fireId: string, now: number): Promise<string | undefined> {
    if (job.payload.kind === "systemEvent") {
      await this.bus.publishInject(job.agentId, buildInject(job, fireId, now));
      return runIdOfFire(job, fireId);
    }
    const origin = await this.deliveryOrigin(job);
    await this.bus.resetSession(cronSessionKey(job));
    const request = buildRunRequest(job, fireId, now, origin);
    await this.bus.publishRun(job.agentId, request);
    return request.runId;
  }

  private async deliveryOrigin(job: CronJob): Promise<Origin | undefined> {
    if (job.payload.kind !== "agentTurn" || !job.payload.deliver) return undefined;
    const p = job.payload;
    if (p.channel !== "last" && p.to !== undefined) return { channel: p.channel, conversation: p.to, messageIds: [] };
    const origin = await this.bus.lastOrigin(job.agentId);
    if (origin || p.bestEffortDeliver) return origin;
    throw new LurkError("VALIDATION_FAILED", `nowhere to deliver: agent ${job.agentId}'s main session has no last conversation yet; set a target (channel and to), deliver false, or bestEffortDeliver`);
  }

  /** Writes the entry and the job's new state in one transaction; returns the job's next slot. */
  private async record(job: CronJob, entry: RunLogEntry, nextRunAtMs: number | undefined, mode: "due" | "force"): Promise<number | undefined> {
    return this.store.txn(() => {
      this.store.putRun(entry);
      const current = this.store.job(job.id);
      if (!current) return undefined;
      const { runningAtMs: _r, lastError: _e, ...rest } = current.state;
      const next = mode === "due" ? nextRunAtMs : current.state.nextRunAtMs;
      const state: CronJob["state"] = {
        ...rest,
        ...(next !== undefined ? { nextRunAtMs: next } : {}),
        ...(entry.status === "running" ? { runningAtMs: entry.startedAtMs } : {}),
        // a slot skipped because the previous run still goes: that run stays the running one
        ...(entry.status === "skipped" && current.state.runningAtMs !== undefined ? { runningAtMs: current.state.runningAtMs } : {}),
        lastRunAtMs: entry.startedAtMs,
        ...(entry.status !== "running" ? { lastStatus: entry.status, lastDurationMs: (entry.endedAtMs ?? entry.startedAtMs) - entry.startedAtMs } : {}),
        ...(entry.error !== undefined ? { lastError: entry.error } : {}),
      };
      if (next === undefined) delete state.nextRunAtMs;
      if (entry.status === "running") {
        // keep the last finished outcome until this run ends
        if (current.state.lastStatus) state.lastStatus = current.state.lastStatus;
        if (current.state.lastError !== undefined) state.lastError = current.state.lastError;
      }
      if (entry.status === "ok" && current.deleteAfterRun) {
        this.store.deleteJob(current.id, false);
        return undefined;
      }
      this.store.putJob({ ...current, state }, false);
      return current.enabled ? next : undefined;
    });
  }

  /** The slot moves on without a new fire (the fire id was recorded before). */
  private advance(jobId: string, scheduledAtMs: number, nextRunAtMs: number | undefined, mode: "due" | "force"): Promise<number | undefined> {
    return this.store.txn(() => {
      const current = this.store.job(jobId);
      if (!current) return undefined;
      if (mode === "due" && current.state.nextRunAtMs === scheduledAtMs) {
        const state = { ...current.state };
        if (nextRunAtMs === undefined) delete state.nextRunAtMs;
        else state.nextRunAtMs = nextRunAtMs;
        this.store.putJob({ ...current, state }, false);
        return current.enabled ? nextRunAtMs : undefined;
      }
      return current.enabled ? current.state.nextRunAtMs : undefined;
    });
  }
}
