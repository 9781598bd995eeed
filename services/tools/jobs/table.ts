/**
 * The background jobs of one tools instance. Jobs live in the actor process (they outlive the
 * tool call that started them), are capped in number (config.tools.jobs.maxJobs: a finished job
 * is forgotten to make room, a table full of running jobs refuses with LIMIT_EXCEEDED) and in
 * runtime (maxRuntimeMs) and output (maxOutputMb), and are all killed when the actor stops.
 *
 * A job id names its instance: `job-<instanceId>-<n>`. Another tools instance that gets a call
 * for the job forwards it to `lurk.tools.job.<instanceId>` (route.ts). A job belongs to the
 * agent and session that started it: anyone else gets NOT_FOUND.
 */
import { randomBytes } from "node:crypto";
import { LurkError } from "../../../shared/contract/index.js";
import type { JobsConfig } from "../../../shared/runtime/config-tools-jobs.js";
import type { ExecHost } from "../exec/sandbox.js";
import { Job, type JobOwner } from "./job.js";

const JOB_ID = /^job-([a-z0-9]{1,32})-(\d{1,9})$/;

/** A fresh id for a tools instance (lowercase letters and digits: a subject token). */
export function newInstanceId(): string {
  return `t${randomBytes(5).toString("hex")}`;
}

/** The instance a job id belongs to, or undefined for something that is not a job id. */
export function jobInstance(jobId: string): string | undefined {
  return JOB_ID.exec(jobId)?.[1];
}

export class JobTable {
  private readonly jobs = new Map<string, Job>();
  private sequence = 0;
  private sweeper: NodeJS.Timeout;
  private stopped = false;

  constructor(readonly instanceId: string, private readonly config: JobsConfig, private readonly exec: ExecHost) {
    this.sweeper = setInterval(() => this.forgetOld(), 60_000);
    this.sweeper.unref();
  }

  async start(owner: JobOwner, command: string, workspace: string, timeoutMs: number | undefined): Promise<Job> {
    if (this.stopped) throw new LurkError("UNAVAILABLE", "the tools actor is shutting down", { retryable: true });
    this.forgetOld();
    if (this.jobs.size >= this.config.maxJobs) {
      const oldest = [...this.jobs.values()].filter((j) => !j.running).sort((a, b) => (a.endedAt ?? 0) - (b.endedAt ?? 0))[0];
      if (!oldest) {
        throw new LurkError("LIMIT_EXCEEDED", `this tools instance runs ${this.jobs.size} background jobs already (the cap is ${this.config.maxJobs}); `
          + "kill one (process action \"kill\") or wait for one to finish");
      }
      await this.forget(oldest);
    }
    const jobId = `job-${this.instanceId}-${++this.sequence}`;
    const job = await Job.start(this.exec, {
      jobId, command, workspace, owner,
      timeoutMs: Math.min(timeoutMs ?? this.config.maxRuntimeMs, this.config.maxRuntimeMs),
      maxOutputBytes: this.config.maxOutputMb * 1024 * 1024,
    });
    this.jobs.set(jobId, job);
    return job;
  }

  /** The job, if it is here and belongs to `owner`; NOT_FOUND otherwise (no probing of others' jobs). */
  get(jobId: string, owner: JobOwner): Job {
    const job = this.jobs.get(jobId);
    if (!job || job.owner.agentId !== owner.agentId || job.owner.sessionKey !== owner.sessionKey) {
      throw new LurkError("NOT_FOUND", `no background job ${jobId} in this session (see process action "list")`);
    }
    return job;
  }

  list(owner: JobOwner): Job[] {
    return [...this.jobs.values()].filter((j) => j.owner.agentId === owner.agentId && j.owner.sessionKey === owner.sessionKey);
  }

  /** Kills every job and waits (briefly) until they are gone. */
  async stopAll(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweeper);
    const all = [...this.jobs.values()];
    for (const job of all) job.stop("killed");
    await Promise.all(all.map(async (job) => {
      await job.waitEnded(3_000);
      await job.log.close();
    }));
    this.jobs.clear();
  }

  private forgetOld(): void {
    const cutoff = Date.now() - this.config.keepFinishedMs;
    for (const job of this.jobs.values()) if (!job.running && (job.endedAt ?? 0) <= cutoff) void this.forget(job);
  }

  private async forget(job: Job): Promise<void> {
    this.jobs.delete(job.jobId);
    await job.log.close();
  }
}
