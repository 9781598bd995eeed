/**
 * Broadcast (seeds 001 §6.5): one message to several agents, each in its own session.
 * "parallel" queues every agent's run at once; "sequential" queues the next agent's run only
 * after the previous one ended (its terminal event), so answers come in config order.
 * The message is acked when every run request is stored (sequential: when the last one is).
 */
import { runIdFor } from "../../shared/contract/index.js";
import type { Work, WorkOutcome } from "./queue.js";

/** Each agent's run of a broadcast message has its own id. */
export function broadcastRunId(channel: string, messageId: string, agentId: string): string {
  return runIdFor(channel, `${messageId}#${agentId}`);
}

export async function submitBroadcast(
  works: Work[],
  strategy: "parallel" | "sequential",
  submit: (work: Work) => Promise<WorkOutcome>,
  ended: (runId: string) => Promise<void>,
): Promise<WorkOutcome[]> {
  if (strategy === "parallel") return Promise.all(works.map(submit));
  const out: WorkOutcome[] = [];
  for (const [i, work] of works.entries()) {
    const outcome = await submit(work);
    out.push(outcome);
    if (i < works.length - 1 && (outcome === "dispatched" || outcome === "duplicate")) await ended(work.runId);
  }
  return out;
}
