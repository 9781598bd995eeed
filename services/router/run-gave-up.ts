/**
 * Run requests that gave up: the agent-runners' RUNS consumer dead-letters a request whose handler
 * failed on its last delivery (`bus.maxDeliver`), or failed permanently, publishing the request as
 * it was to `lurk.dlq.LURK_RUNS.agent-runner` (shared/runtime/consumer.ts; the reason in the
 * `Lurk-Dlq-Error` header). No runner will take it again, and it may never have recorded its end.
 * LURK_DEADLETTER keeps those messages (30 days), and the active router reads them through its
 * durable consumer `router-gave-up`, filtered to that subject: one given up while no router was
 * active reaches the next router's term. The handler (term.ts `runGaveUp`) records the run's end
 * and frees its lane; the message is acked once that is done, and retried with the consumer's
 * backoff when it could not be. A malformed payload is dead-lettered by the consumer helper
 * (`lurk.dlq.LURK_DEADLETTER.router-gave-up`, outside this consumer's filter).
 */
import { CONSUMERS, runRequestSchema, STREAMS } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { RunningConsumer } from "../../shared/runtime/consumer.js";

/** Resolves once the run's end is recorded (or was already); throws to have it retried. */
export type RunGaveUpHandler = (runId: string, sessionKey: string, error: string) => Promise<void>;

export function consumeRunsGivenUp(rt: ActorRuntime, handler: RunGaveUpHandler): RunningConsumer {
  return rt.consume({
    stream: STREAMS.deadLetter,
    consumer: CONSUMERS.routerGaveUp,
    filterSubject: rt.subjects.deadLetter(STREAMS.runs, CONSUMERS.agentRunner),
    schema: runRequestSchema,
    concurrency: 16,
    handler: (request, delivery) => handler(request.runId, request.sessionKey, delivery.headers["Lurk-Dlq-Error"] ?? ""),
  });
}
