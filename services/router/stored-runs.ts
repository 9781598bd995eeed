/**
 * The run requests RUNS holds. RUNS is a work queue: it keeps a request until a runner recorded its
 * run's end and acked it (or gave it up), so these are the runs stored and not ended yet.
 * - When a router instance takes the lease (actor.ts): the runs another actor stored, or a runner
 *   started, while no router was active (between two terms) reached no router; they hold their
 *   sessions' lanes from the new term's start like the replica's runs.
 * - The status check (term.ts `check`): a held run whose request RUNS does not hold will never be
 *   run (never stored, or gone without its end recorded).
 *
 * Read one message at a time (STREAM.MSG.GET with `next_by_subj`, nats-server 2.9), at most
 * MAX_SCANNED; a memory consolidation (no lane) and a request that does not parse are skipped. A
 * failed read is logged and ends the scan: `complete` false, and the caller assumes nothing of the
 * runs it did not reach.
 */
import { jetstreamManager, type JetStreamManager, type MsgRequest } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { runRequestSchema, safeParseJson, STREAMS, type SafeParseLimits, type Subjects } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { HeldRun } from "./replica.js";

export const MAX_SCANNED = 10_000;

export interface StoredRuns {
  /** the runs to hold: parsed and validated, consolidations left out (`full` reads only) */
  runs: HeldRun[];
  /** the run id of every request read */
  runIds: Set<string>;
  /** every request was read */
  complete: boolean;
}

export class RunsReader {
  private jsm: Promise<JetStreamManager> | undefined;

  constructor(private readonly nc: NatsConnection, private readonly subjects: Subjects, private readonly limits: SafeParseLimits, private readonly log: Logger) {}

  /** `full`: each request validated, for the runs to hold; otherwise only its run id is read. */
  async read(full: boolean): Promise<StoredRuns> {
    const out: StoredRuns = { runs: [], runIds: new Set(), complete: false };
    let skipped = 0;
    try {
      this.jsm ??= jetstreamManager(this.nc);
      const jsm = await this.jsm;
      let seq = 1;
      for (let read = 0; read < MAX_SCANNED; read++) {
        // the next request at or after `seq`
        const query = { seq, next_by_subj: this.subjects.runRequestAll } as unknown as MsgRequest;
        const stored = await jsm.streams.getMessage(STREAMS.runs, query);
        if (!stored) {
          out.complete = true;
          break;
        }
        seq = stored.seq + 1;
        const body = this.parse(stored.data);
        const runId = (body as { runId?: unknown } | undefined)?.runId;
        if (typeof runId === "string") out.runIds.add(runId);
        if (!full) continue;
        const parsed = runRequestSchema.safeParse(body);
        if (!parsed.success) skipped++;
        else if (parsed.data.options.command !== "consolidate") out.runs.push({ runId: parsed.data.runId, sessionKey: parsed.data.sessionKey, since: stored.time.getTime() });
      }
    } catch (err) {
      this.jsm = undefined;
      this.log.warn({ err, read: out.runIds.size }, "could not read the run requests stored in RUNS");
    }
    if (skipped > 0) this.log.warn({ skipped }, "skipped stored run requests that do not parse");
    return out;
  }

  private parse(data: Uint8Array): unknown {
    try {
      return safeParseJson(data, this.limits);
    } catch {
      return undefined;
    }
  }
}
