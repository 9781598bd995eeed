/**
 * A run request the router saw on the bus that RUNS never stored (here: a duplicate message id of
 * another request; a failed publish is another) holds its session's lane
 * only until the status check finds RUNS idle (runs-idle.ts): the agent-runners' consumer has no
 * request pending or unacked, and the sessions actor never heard of the run. While a request still
 * waits in RUNS for a runner, every run nobody began stays held. And a run stored and started while
 * no router was active (its run_start reached none) holds its lane from the next router's start,
 * read from RUNS (stored-runs.ts). The router and sessions actors as processes, the agent-runners'
 * durable consumer created as a runner would, no runner.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { buildSessionKey, CONSUMERS, envelope, recordIds, runIdFor, STREAMS, subjects, type RunRequest } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { waitFor } from "./harness/actors.js";
import { RouterRig } from "./harness/router-rig.js";

const s = subjects();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** the status check's idle time (term.ts IDLE_BEFORE_CHECK_MS) and two reconcile rounds */
const PAST_THE_CHECKS_MS = 15_000 + 2 * 5_000;

describe("router: run requests seen but never stored, and stored while no router was active", () => {
  const rig = new RouterRig();
  let runnerBus: BusClient;

  before(async () => {
    await rig.start({ agents: [{ id: "main", default: true }] }, ["sessions", "router"]);
    runnerBus = new BusClient(rig.runner);
    await (await jetstreamManager(rig.admin)).consumers.add(STREAMS.runs, { durable_name: CONSUMERS.agentRunner, ack_policy: AckPolicy.Explicit });
  });
  after(() => rig.stop());

  const child = (id: string) => ({ runId: `sub-${id}`, sessionKey: buildSessionKey({ type: "subagent", agentId: "main", childId: id }) });
  const request = (run: { runId: string; sessionKey: string }, options: Record<string, unknown> = {}) => JSON.stringify(envelope("lurk.run.request.v1", {
    runId: run.runId, sessionKey: run.sessionKey, agentId: "main", sessionType: "subagent" as const, trigger: "subagent" as const,
    inputs: [{ kind: "user" as const, text: "the child's task", attachments: [] }], deliver: false, options,
  }));
  const heldBy = async (sessionKey: string) => (await rig.bus.call("router", "lanes", { sessionKey })).lanes[0]?.activeRunId;

  it("holds its lane while a request waits in RUNS, and frees it once RUNS is idle", { timeout: 120_000 }, async () => {
    const waiting = child("c0ffee21");
    const unstored = child("c0ffee22");
    const consolidation = child("c0ffee23");
    const js = jetstream(rig.admin);
    // a memory consolidation (holds no lane), then a request the stream takes as its duplicate (the
    // same message id): that one is seen on the bus, never stored in RUNS
    await js.publish(s.runRequest("main"), request(consolidation, { command: "consolidate", previousSessionId: "sess-old" }), { msgID: "dup-id" });
    assert.equal((await js.publish(s.runRequest("main"), request(unstored), { msgID: "dup-id" })).duplicate, true);
    assert.equal((await js.publish(s.runRequest("main"), request(waiting), { msgID: waiting.runId })).duplicate, false);
    await waitFor(async () => ((await heldBy(waiting.sessionKey)) === waiting.runId && (await heldBy(unstored.sessionKey)) === unstored.runId) || undefined, 10_000, "both held from their storing");

    await sleep(PAST_THE_CHECKS_MS);
    assert.equal(await heldBy(unstored.sessionKey), unstored.runId, "a request still waits in RUNS: a run nobody began stays held");
    assert.equal(await heldBy(waiting.sessionKey), waiting.runId);

    // a runner takes the consolidation (it writes nothing to any session) and the waiting request, and runs them
    const runs = await js.consumers.get(STREAMS.runs, CONSUMERS.agentRunner);
    await (await runs.next({ expires: 5_000 }))!.ackAck();
    const taken = await runs.next({ expires: 5_000 });
    assert.equal(taken?.json<{ runId: string }>().runId, waiting.runId, "the waiting request is in RUNS");
    const { runId, sessionKey } = waiting;
    await runnerBus.call("sessions", "begin", {
      sessionKey, runId, agentId: "main", sessionType: "subagent", historyLimit: 50,
      records: [{ id: recordIds.started(runId), ts: Date.now(), runId, kind: "run_marker", runStatus: "started", meta: { trigger: "subagent" } }],
    });
    await runnerBus.call("sessions", "append", { sessionKey, records: [{ id: recordIds.marker(runId, "done"), ts: Date.now(), runId, kind: "run_marker", runStatus: "done", text: "done" }] });
    await taken!.ackAck();
    rig.finish(waiting as unknown as RunRequest);

    await waitFor(async () => (await heldBy(unstored.sessionKey)) === undefined || undefined, PAST_THE_CHECKS_MS, "the unstored run's lane freed");
    // and the session is served again: a wake-now inject gets its run
    const inject = envelope("lurk.inject.v1", { agentId: "main", sessionKey: unstored.sessionKey, source: "subagent" as const, text: "are you there?", wake: "now" as const, trigger: "announce" as const, deliverTo: "none" as const });
    await js.publish(s.inject("main"), JSON.stringify(inject), { msgID: inject.id });
    const run = await rig.runOf(runIdFor("inject", inject.id));
    assert.equal(run.sessionKey, unstored.sessionKey);
    rig.finish(run);
  });

  it("a run stored and started while no router was active holds its lane from the next router's start; one stored that already ended holds none", { timeout: 60_000 }, async () => {
    const started = child("c0ffee31");
    const ended = child("c0ffee32");
    const js = jetstream(rig.admin);
    await rig.actor("router").stop();
    // between two terms: both stored, one begun and started (its run_start reaches no router), the other ended too
    for (const run of [started, ended]) {
      await js.publish(s.runRequest("main"), request(run), { msgID: run.runId });
      await runnerBus.call("sessions", "begin", {
        sessionKey: run.sessionKey, runId: run.runId, agentId: "main", sessionType: "subagent", historyLimit: 50,
        records: [{ id: recordIds.started(run.runId), ts: Date.now(), runId: run.runId, kind: "run_marker", runStatus: "started", meta: { trigger: "subagent" } }],
      });
      rig.runner.publish(s.runEvent(run.runId, "run_start"), JSON.stringify(envelope("lurk.run.event.v1", { ...run, seq: 0, event: { kind: "run_start" as const, agentId: "main", trigger: "subagent" as const } })));
    }
    const endRun = (run: { runId: string; sessionKey: string }) => runnerBus.call("sessions", "append", {
      sessionKey: run.sessionKey, records: [{ id: recordIds.marker(run.runId, "done"), ts: Date.now(), runId: run.runId, kind: "run_marker", runStatus: "done", text: "done" }],
    });
    await endRun(ended);
    await rig.restart("router");
    await waitFor(async () => (await rig.bus.call("router", "lanes", {}).catch(() => undefined))?.lanes, 10_000, "the new router active");
    await waitFor(async () => ((await heldBy(ended.sessionKey)) === undefined && (await heldBy(started.sessionKey)) === started.runId) || undefined, 10_000, "the started run held, the ended one freed");
    // a wake-now inject into the started run's session waits for its end
    const inject = envelope("lurk.inject.v1", { agentId: "main", sessionKey: started.sessionKey, source: "subagent" as const, text: "how far are you?", wake: "now" as const, trigger: "announce" as const, deliverTo: "none" as const });
    await js.publish(s.inject("main"), JSON.stringify(inject), { msgID: inject.id });
    const injectRunId = runIdFor("inject", inject.id);
    await sleep(1000);
    assert.equal((await rig.runRequests()).some((r) => r.runId === injectRunId), false, "no run beside the started one");
    await endRun(started);
    rig.finish(started as unknown as RunRequest);
    rig.finish(await rig.runOf(injectRunId, "the inject's run, after the started one ended"));
  });
});
