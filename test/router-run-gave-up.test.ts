/**
 * A run request the agent-runners give up on frees its session's lane. On a real bus with the
 * router and sessions processes and a runner built on the real consumer helper
 * (shared/runtime/consumer.ts, `bus.maxDeliver` 2): the runner begins the run in the sessions
 * actor (its transcript says `started`) and fails on every delivery, so the helper dead-letters
 * the request. The router sees the dead letter, records the run's end as an error (a later status
 * check agrees) and gives the lane to the next message for the session, which gets its run.
 * The router reads those dead letters through a durable consumer of LURK_DEADLETTER, so a run
 * stored and given up entirely while no router was active gets its end from the next router.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { buildSessionKey, CONSUMERS, envelope, LurkError, recordIds, runRequestSchema, STREAMS, subjects, type RunRequest } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { startConsumer, type RunningConsumer } from "../shared/runtime/consumer.js";
import { createLogger } from "../shared/runtime/logger.js";
import { waitFor } from "./harness/actors.js";
import { collectActorEvents, type SeenActorEvent } from "./harness/events.js";
import { RouterRig } from "./harness/router-rig.js";

describe("router: a run request that gave up frees its lane", () => {
  const rig = new RouterRig();
  let runner: RunningConsumer;
  let routerEvents: SeenActorEvent[];
  /** run id -> the deliveries the runner got */
  const deliveries = new Map<string, number[]>();
  /** runs the runner fails on every delivery */
  const failing = new Set<string>();
  const taken: RunRequest[] = [];

  before(async () => {
    await rig.start({ agents: [{ id: "main", default: true }], bus: { maxDeliver: 2, backoffMs: [100] } }, ["sessions", "router"]);
    routerEvents = await collectActorEvents(rig.admin, "router");
    const bus = new BusClient(rig.runner);
    runner = startConsumer(rig.runner, {
      stream: STREAMS.runs, consumer: CONSUMERS.agentRunner, schema: runRequestSchema, concurrency: 4,
      ackWaitMs: 30_000, maxDeliver: 2, backoffMs: [100], limits: {}, log: createLogger("gave-up-runner", "silent"),
      handler: async (req, delivery) => {
        deliveries.set(req.runId, [...(deliveries.get(req.runId) ?? []), delivery.deliveryCount]);
        taken.push(req);
        // as the agent-runner begins a run: its transcript says started
        await bus.call("sessions", "begin", {
          sessionKey: req.sessionKey, runId: req.runId, agentId: req.agentId, sessionType: req.sessionType, historyLimit: 10,
          records: [{ id: recordIds.started(req.runId), ts: Date.now(), runId: req.runId, kind: "run_marker", runStatus: "started" }],
        });
        if (failing.has(req.runId)) throw new LurkError("UNAVAILABLE", "the model provider is unreachable");
      },
    });
  });
  after(async () => {
    await runner?.stop();
    await rig.stop();
  });

  it("the runner fails on every delivery: the request is dead-lettered, its run ends as an error and the next message gets a run", { timeout: 60_000 }, async () => {
    const sessionKey = "agent:main:web:group:g-gaveup";
    const first = await rig.web("g-gaveup", "first");
    failing.add(first.runId);
    await waitFor(() => deliveries.get(first.runId)?.length === 1 || undefined, 10_000, "the first delivery");
    const second = await rig.web("g-gaveup", "second");
    await waitFor(() => routerEvents.find((e) => e.event === "run_gave_up" && e.data.runId === first.runId), 20_000, "the router sees the run give up");
    assert.deepEqual(deliveries.get(first.runId), [1, 2], "delivered maxDeliver times, then dead-lettered");

    const run = await waitFor(() => taken.find((r) => r.runId === second.runId), 20_000, "the next message's run");
    assert.equal(run.sessionKey, sessionKey);
    assert.equal(run.inputs[0]!.text, "second");
    const ended = await rig.bus.call("sessions", "run", { sessionKey, runId: first.runId });
    assert.equal(ended.status, "error", "the transcript records the run's end");
    const marker = ended.records.find((r) => r.kind === "run_marker" && r.runStatus === "error")!;
    assert.match(marker.text ?? "", /gave up.*model provider is unreachable/);

    await rig.finish(run);
    await waitFor(async () => (await rig.bus.call("router", "lanes", { sessionKey })).lanes.length === 0 || undefined, 10_000, "lane freed");
  });

  it("a dead letter of a run the router does not hold changes nothing", async () => {
    const sessionKey = "agent:main:web:group:g-other";
    const held = await rig.web("g-other", "hold the lane");
    const run = await waitFor(() => taken.find((r) => r.runId === held.runId), 10_000, "the run");
    // another run's request dead-lettered (this router never held it)
    const stray: RunRequest = { ...run, id: "stray-req", runId: "stray-run-1" };
    rig.runner.publish(subjects().deadLetter(STREAMS.runs, CONSUMERS.agentRunner), JSON.stringify(stray));
    await new Promise((r) => setTimeout(r, 500));
    const lanes = (await rig.bus.call("router", "lanes", { sessionKey })).lanes;
    assert.deepEqual(lanes.map((l) => l.activeRunId), [held.runId], "the lane is still the running run's");
    assert.equal(routerEvents.some((e) => e.event === "run_gave_up" && e.data.runId === "stray-run-1"), false);
    await rig.finish(run);
  });

  it("a run stored and given up while no router was active gets its end recorded by the next router", { timeout: 60_000 }, async () => {
    const run = { runId: "sub-between-terms", sessionKey: buildSessionKey({ type: "subagent", agentId: "main", childId: "c0ffee41" }) };
    const jsm = await jetstreamManager(rig.admin);
    const deadLetters = async () => (await jsm.streams.info(STREAMS.deadLetter)).state.messages;
    const before = await deadLetters();
    await rig.actor("router").stop();
    // a child run stored in RUNS, begun by the runner, failed on every delivery: dead-lettered while no router is active
    failing.add(run.runId);
    const request = envelope("lurk.run.request.v1", {
      ...run, agentId: "main", sessionType: "subagent" as const, trigger: "subagent" as const,
      inputs: [{ kind: "user" as const, text: "the child's task", attachments: [] }], deliver: false, options: {},
    });
    await jetstream(rig.admin).publish(subjects().runRequest("main"), JSON.stringify(request), { msgID: run.runId });
    await waitFor(async () => (await deadLetters()) > before || undefined, 20_000, "the request dead-lettered");
    assert.deepEqual(deliveries.get(run.runId), [1, 2]);
    assert.equal((await rig.bus.call("sessions", "run", { ...run, statusOnly: true })).status, "started", "no router recorded its end yet");

    await rig.restart("router");
    const ended = await waitFor(async () => {
      const read = await rig.bus.call("sessions", "run", run);
      return read.status === "error" ? read : undefined;
    }, 20_000, "the run's end recorded by the new router");
    const marker = ended.records.find((r) => r.kind === "run_marker" && r.runStatus === "error")!;
    assert.match(marker.text ?? "", /gave up.*model provider is unreachable/);
    assert.equal(marker.meta?.gaveUp, true);
    const event = await waitFor(() => routerEvents.find((e) => e.event === "run_gave_up" && e.data.runId === run.runId), 10_000, "run_gave_up");
    assert.equal(event.data.held, false, "no router held the run");
    assert.deepEqual((await rig.bus.call("router", "lanes", { sessionKey: run.sessionKey })).lanes, [], "it holds no lane");
    // and the dead letter was acked: read once
    await waitFor(async () => {
      const info = await jsm.consumers.info(STREAMS.deadLetter, CONSUMERS.routerGaveUp);
      return (info.num_pending === 0 && info.num_ack_pending === 0) || undefined;
    }, 10_000, "the router's consumer of dead letters caught up and acked");
  });
});
