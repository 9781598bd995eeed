/**
 * The router's status check against RUNS (term.ts `check`, stored-runs.ts), and the runs RUNS holds
 * when a router takes over. A run request the router saw on the bus that RUNS never stored (here a
 * duplicate message id of another request; a failed publish is another) holds its session's lane
 * only until the first status check past the idle time, while a stored request that no runner
 * began yet stays held. A run stored and started while no router was active (its run_start reached
 * none) holds its lane from the next router's start; one that ended meanwhile does not; one whose
 * request left RUNS without its end recorded (given up while no router was active) gets its end
 * recorded and frees its lane. The router and sessions actors as processes, no runner.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import { buildSessionKey, envelope, recordIds, runIdFor, subjects, type RunRequest } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { waitFor } from "./harness/actors.js";
import { collectActorEvents } from "./harness/events.js";
import { RouterRig } from "./harness/router-rig.js";
import { removeRunRequest } from "./harness/streams.js";

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
  });
  after(() => rig.stop());

  const child = (id: string) => ({ runId: `sub-${id}`, sessionKey: buildSessionKey({ type: "subagent", agentId: "main", childId: id }) });
  const request = (run: { runId: string; sessionKey: string }, options: Record<string, unknown> = {}) => JSON.stringify(envelope("lurk.run.request.v1", {
    runId: run.runId, sessionKey: run.sessionKey, agentId: "main", sessionType: "subagent" as const, trigger: "subagent" as const,
    inputs: [{ kind: "user" as const, text: "the child's task", attachments: [] }], deliver: false, options,
  }));
  const heldBy = async (sessionKey: string) => (await rig.bus.call("router", "lanes", { sessionKey })).lanes[0]?.activeRunId;
  const status = async (run: { runId: string; sessionKey: string }) => (await rig.bus.call("sessions", "run", { ...run, statusOnly: true })).status;
  /** a wake-now inject into the session; its run id */
  const wake = async (sessionKey: string, text: string) => {
    const inject = envelope("lurk.inject.v1", { agentId: "main", sessionKey, source: "subagent" as const, text, wake: "now" as const, trigger: "announce" as const, deliverTo: "none" as const });
    await jetstream(rig.admin).publish(s.inject("main"), JSON.stringify(inject), { msgID: inject.id });
    return runIdFor("inject", inject.id);
  };
  /** as a runner begins a run: the session and its `started` marker; and its run_start event */
  const begin = async (run: { runId: string; sessionKey: string }) => {
    await runnerBus.call("sessions", "begin", {
      ...run, agentId: "main", sessionType: "subagent", historyLimit: 50,
      records: [{ id: recordIds.started(run.runId), ts: Date.now(), runId: run.runId, kind: "run_marker", runStatus: "started", meta: { trigger: "subagent" } }],
    });
    rig.runner.publish(s.runEvent(run.runId, "run_start"), JSON.stringify(envelope("lurk.run.event.v1", { ...run, seq: 0, event: { kind: "run_start" as const, agentId: "main", trigger: "subagent" as const } })));
  };
  const endRun = (run: { runId: string; sessionKey: string }) => runnerBus.call("sessions", "append", {
    sessionKey: run.sessionKey, records: [{ id: recordIds.marker(run.runId, "done"), ts: Date.now(), runId: run.runId, kind: "run_marker", runStatus: "done", text: "done" }],
  });

  it("a request never stored frees its lane at the first status check past the idle time; a stored one nobody began stays held", { timeout: 60_000 }, async () => {
    const waiting = child("c0ffee21");
    const unstored = child("c0ffee22");
    const js = jetstream(rig.admin);
    // a memory consolidation (holds no lane), then a request the stream takes as its duplicate (the
    // same message id): that one is seen on the bus, never stored in RUNS
    await js.publish(s.runRequest("main"), request(child("c0ffee23"), { command: "consolidate", previousSessionId: "sess-old" }), { msgID: "dup-id" });
    assert.equal((await js.publish(s.runRequest("main"), request(unstored), { msgID: "dup-id" })).duplicate, true);
    assert.equal((await js.publish(s.runRequest("main"), request(waiting), { msgID: waiting.runId })).duplicate, false);
    await waitFor(async () => ((await heldBy(waiting.sessionKey)) === waiting.runId && (await heldBy(unstored.sessionKey)) === unstored.runId) || undefined, 10_000, "both held from their storing");
    const seen = Date.now();

    await waitFor(async () => (await heldBy(unstored.sessionKey)) === undefined || undefined, PAST_THE_CHECKS_MS, "the unstored run's lane freed");
    assert.ok(Date.now() - seen >= 10_000, "not before the idle time");
    assert.equal(await heldBy(waiting.sessionKey), waiting.runId, "the stored request waits for a runner: held");
    // and the session is served again: a wake-now inject gets its run
    const run = await rig.runOf(await wake(unstored.sessionKey, "are you there?"));
    assert.equal(run.sessionKey, unstored.sessionKey);
    await rig.finish(run);
  });

  it("at a router's start: a run stored and started while no router was active holds its lane, an ended one none, one whose request left RUNS without its end is ended", { timeout: 60_000 }, async () => {
    const started = child("c0ffee31");
    const ended = child("c0ffee32");
    const lost = child("c0ffee33");
    const events = await collectActorEvents(rig.admin, "router");
    const js = jetstream(rig.admin);
    // a run the router holds (in its replica too) when it stops
    await js.publish(s.runRequest("main"), request(lost), { msgID: lost.runId });
    await begin(lost);
    await waitFor(async () => (await heldBy(lost.sessionKey)) === lost.runId || undefined, 10_000, "the run held");
    await rig.actor("router").stop();
    // between two terms: two more stored and begun (their run_start reaches no router); one ends; the
    // held one is given up without its end (its request leaves RUNS, its dead letter reaches no router)
    for (const run of [started, ended]) {
      await js.publish(s.runRequest("main"), request(run), { msgID: run.runId });
      await begin(run);
    }
    await endRun(ended);
    await removeRunRequest(rig.admin, ended.runId);
    await removeRunRequest(rig.admin, lost.runId);
    await rig.restart("router");
    await waitFor(async () => (await rig.bus.call("router", "lanes", {}).catch(() => undefined))?.lanes, 10_000, "the new router active");
    await waitFor(async () => ((await heldBy(ended.sessionKey)) === undefined && (await heldBy(started.sessionKey)) === started.runId) || undefined, 10_000, "the started run held, the ended one freed");
    await waitFor(async () => (await heldBy(lost.sessionKey)) === undefined || undefined, 10_000, "the lost run's lane freed");
    assert.equal(await status(lost), "error", "its end recorded");
    assert.ok(events.some((e) => e.event === "run_end_lost" && e.data.runId === lost.runId));
    assert.equal(await status(started), "started", "a run going on is left alone");
    // a wake-now inject into the started run's session waits for its end
    const injectRunId = await wake(started.sessionKey, "how far are you?");
    await sleep(1000);
    assert.equal((await rig.runRequests()).some((r) => r.runId === injectRunId), false, "no run beside the started one");
    await endRun(started);
    await rig.finish(started as unknown as RunRequest);
    await rig.finish(await rig.runOf(injectRunId, "the inject's run, after the started one ended"));
  });
});
