/**
 * The run requests RUNS holds when a router instance takes over. RUNS is a work queue: it keeps a
 * request until a runner ended its run (the ack), so these are the runs stored and not ended yet,
 * among them those another actor stored, or a runner started, while no router was active (between
 * two terms), which no event tells the new term about before their end. They hold their sessions'
 * lanes from the term's start like the replica's runs (term.ts checks each at once). The status
 * check reads them again (`requestInRuns`): a held run whose request RUNS does not hold will never
 * be run (never stored, or gone without its end recorded).
 *
 * Read one message at a time (`next_by_subj`), at most MAX_SCANNED; a memory consolidation (no
 * lane) and a request that does not parse are skipped. A failed read is logged and ends the scan
 * (`complete` false): the runs it did not reach are known from their next event, as without it.
 */
import { jetstreamManager, type MsgRequest } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { runRequestSchema, safeParseJson, STREAMS, type SafeParseLimits, type Subjects } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { HeldRun } from "./replica.js";

export const MAX_SCANNED = 10_000;

export async function readStoredRuns(nc: NatsConnection, subjects: Subjects, limits: SafeParseLimits, log: Logger): Promise<{ runs: HeldRun[]; complete: boolean }> {
  const runs: HeldRun[] = [];
  let skipped = 0;
  let complete = false;
  try {
    const jsm = await jetstreamManager(nc);
    let seq = 1;
    for (let read = 0; read < MAX_SCANNED; read++) {
      // the next request at or after `seq` (STREAM.MSG.GET takes next_by_subj since nats-server 2.9)
      const query = { seq, next_by_subj: subjects.runRequestAll } as unknown as MsgRequest;
      const stored = await jsm.streams.getMessage(STREAMS.runs, query);
      if (!stored) {
        complete = true;
        break;
      }
      seq = stored.seq + 1;
      const parsed = runRequestSchema.safeParse(safeParseJsonOrUndefined(stored.data, limits));
      if (!parsed.success) {
        skipped++;
        continue;
      }
      const req = parsed.data;
      if (req.options.command === "consolidate") continue;
      runs.push({ runId: req.runId, sessionKey: req.sessionKey, since: stored.time.getTime() });
    }
  } catch (err) {
    log.warn({ err, read: runs.length }, "could not read the run requests stored in RUNS; the runs not read are known from their next event");
  }
  if (skipped > 0) log.warn({ skipped }, "skipped stored run requests that do not parse");
  return { runs, complete };
}

function safeParseJsonOrUndefined(data: Uint8Array, limits: SafeParseLimits): unknown {
  try {
    return safeParseJson(data, limits);
  } catch {
    return undefined;
  }
}
