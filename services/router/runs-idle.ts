/**
 * Whether no run request waits in RUNS or is being run: the agent-runners' durable consumer has
 * none pending and none unacked (a request waiting for its redelivery counts as unacked).
 *
 * Contract (term.ts `check`): asked only after the run's status said the sessions actor never heard
 * of it ("unknown"), for a run held longer than the status check's idle time. A request RUNS
 * stored stays pending or unacked until a runner has begun its run (and so its transcript) and
 * ended it, so "unknown" then "idle" means the request was never stored (a failed publish, a
 * duplicate message id) and no runner will ever start that run: its lane is freed. False
 * whenever it cannot tell (no runner ever created the consumer, the request failed): the run
 * stays held, until it is older than RUNS keeps a request.
 */
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { CONSUMERS, STREAMS } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";

export function runsIdleCheck(nc: NatsConnection, log: Logger): () => Promise<boolean> {
  let jsm: Promise<JetStreamManager> | undefined;
  return async () => {
    try {
      jsm ??= jetstreamManager(nc);
      const info = await (await jsm).consumers.info(STREAMS.runs, CONSUMERS.agentRunner);
      return info.num_pending === 0 && info.num_ack_pending === 0;
    } catch (err) {
      jsm = undefined;
      log.debug({ err }, "could not read the agent-runners' consumer of RUNS; held runs stay held");
      return false;
    }
  };
}
