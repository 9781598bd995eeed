/** Reading the contract's streams in tests (as the admin user). */
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { runRequestSchema, STREAMS, type RunRequest } from "../../shared/contract/index.js";

/** The run requests stored in RUNS right now (a work queue: only what no runner has taken). */
export async function storedRunRequests(admin: NatsConnection): Promise<RunRequest[]> {
  const jsm = await jetstreamManager(admin);
  const info = await jsm.streams.info(STREAMS.runs);
  const out: RunRequest[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(STREAMS.runs, { seq }).catch(() => null);
    if (m) out.push(runRequestSchema.parse(m.json()));
  }
  return out;
}

/** Removes the run's request from RUNS, as a runner's ack at the run's end does (none there: nothing). */
export async function removeRunRequest(admin: NatsConnection, runId: string): Promise<void> {
  const jsm = await jetstreamManager(admin);
  const info = await jsm.streams.info(STREAMS.runs);
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(STREAMS.runs, { seq }).catch(() => null);
    if (m && (m.json() as { runId?: unknown }).runId === runId) await jsm.streams.deleteMessage(STREAMS.runs, seq, false);
  }
}
