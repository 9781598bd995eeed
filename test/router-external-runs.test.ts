/**
 * Runs the router did not dispatch (another actor stored them in RUNS: a subagent's child run, a
 * cron agentTurn) hold their session's lane from their `run_start` to their end. On a real bus
 * with the router and sessions processes and a scripted runner that begins the run in the
 * sessions actor and publishes its start as the agent-runner does: a wake-now inject into the
 * child session during the child's run gets no run until the child's terminal event, and a
 * non-waking inject is recorded only then (before the inject's run is stored); a message for a
 * session with such a run in steer mode is handed to it; the lane is freed by the status check
 * when the terminal event is missed, also for a run whose records exceed one bus message (the
 * check asks for the status alone). A wake-now inject into a running session is handed to its run
 * as a follow-up (no run of its own) when the runner takes it and stores it, queues when it does
 * not take it, and gets a run of its own after the run when that ended without storing it.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { buildSessionKey, envelope, recordIds, ROUTER_BUCKET, runIdFor, subjects, type RunRequest, type TranscriptRecord } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { waitFor } from "./harness/actors.js";
import { RouterRig } from "./harness/router-rig.js";

const s = subjects();

describe("router: runs other actors store in RUNS hold their session's lane", () => {
  const rig = new RouterRig();
  const { runOf, noRun, finish } = rig;
  let runnerBus: BusClient;

  before(async () => {
    await rig.start({ agents: [{ id: "main", default: true }], routing: { queue: { controlTimeoutMs: 300 }, commands: { owners: ["web:owner"] } } }, ["sessions", "router"]);
    runnerBus = new BusClient(rig.runner);
  });
  after(() => rig.stop());

  /** a child run as the subagents actor stores it in RUNS and an agent-runner starts it (begin, then run_start) */
  const beginChild = async (childId: string) => {
    const sessionKey = buildSessionKey({ type: "subagent", agentId: "main", childId });
    const runId = `sub-${childId}`;
    const request = envelope("lurk.run.request.v1", {
      runId, sessionKey, agentId: "main", sessionType: "subagent" as const, trigger: "subagent" as const,
      inputs: [{ kind: "user" as const, text: "the child's task", attachments: [] }], deliver: false, options: {},
    });
    await jetstream(rig.admin).publish(s.runRequest("main"), JSON.stringify(request), { msgID: runId });
    await runnerBus.call("sessions", "begin", {
      sessionKey, runId, agentId: "main", sessionType: "subagent", historyLimit: 50,
      records: [{ id: recordIds.started(runId), ts: Date.now(), runId, kind: "run_marker", runStatus: "started", meta: { trigger: "subagent" } }],
    });
    rig.runner.publish(s.runEvent(runId, "run_start"), JSON.stringify(envelope("lurk.run.event.v1", { runId, sessionKey, seq: 0, event: { kind: "run_start" as const, agentId: "main", trigger: "subagent" as const } })));
    return { runId, sessionKey };
  };
  /** a child run as the subagents actor stores it and an agent-runner starts it: it holds the lane */
  const startChild = async (childId: string) => {
    const { runId, sessionKey } = await beginChild(childId);
    await waitFor(async () => (await rig.bus.call("router", "lanes", { sessionKey })).lanes[0]?.activeRunId === runId || undefined, 10_000, "the child's run holds the lane");
    return { runId, sessionKey };
  };
  const inject = async (sessionKey: string, text: string, wake: "now" | "next-heartbeat", trigger: "announce" | "heartbeat" = "announce") => {
    const msg = envelope("lurk.inject.v1", { agentId: "main", sessionKey, source: "subagent" as const, text, wake, trigger, deliverTo: "none" as const });
    await jetstream(rig.admin).publish(s.inject("main"), JSON.stringify(msg), { msgID: msg.id });
    return { id: msg.id, runId: runIdFor("inject", msg.id) };
  };
  /** the terminal event of a run the scripted runner started */
  const end = (run: { runId: string; sessionKey: string }) => finish(run as unknown as RunRequest);
  const history = async (sessionKey: string): Promise<TranscriptRecord[]> => (await rig.bus.call("sessions", "history", { sessionKey, limit: 200 })).records;

  it("a wake-now inject into a child session waits for the child's run; a non-waking one is recorded after it, before the inject's run", async () => {
    const child = await startChild("c0ffee01");
    const woken = await inject(child.sessionKey, "a message from your parent", "now");
    const note = await inject(child.sessionKey, "a note for later", "next-heartbeat");
    await noRun(woken.runId, 1000);
    assert.ok(rig.controls.some((c) => c.runId === child.runId && c.action === "followup" && c.input?.text === "a message from your parent"), "offered to the run as a follow-up; no runner took it");
    assert.equal((await history(child.sessionKey)).some((r) => r.kind === "system_event"), false, "nothing recorded inside the child's run");
    const lanes = (await rig.bus.call("router", "lanes", { sessionKey: child.sessionKey })).lanes;
    assert.deepEqual(lanes.map((l) => [l.activeRunId, l.queued]), [[child.runId, 1]]);

    await end(child);
    const run = await runOf(woken.runId);
    assert.equal(run.sessionKey, child.sessionKey);
    assert.equal(run.inputs[0]!.text, "a message from your parent");
    const recorded = (await history(child.sessionKey)).filter((r) => r.kind === "system_event");
    assert.deepEqual(recorded.map((r) => [r.id, r.text]), [[`inject:${note.id}`, "a note for later"]], "the waiting event was recorded before the inject's run was stored");
    await finish(run);
    await waitFor(async () => (await rig.bus.call("router", "lanes", { sessionKey: child.sessionKey })).lanes.length === 0 || undefined, 10_000, "lane freed");
  });

  it("a wake-now inject into a running child is handed to its run as a follow-up when the runner takes it: no run of its own; a heartbeat is not", async () => {
    const child = await startChild("c0ffee04");
    rig.acceptControls = true;
    try {
      const woken = await inject(child.sessionKey, "Message from session agent:main:main:\nalso check the logs", "now");
      const ctl = await waitFor(() => rig.controls.find((c) => c.runId === child.runId && c.action === "followup"), 10_000, "follow-up control");
      assert.deepEqual([ctl.input?.kind, ctl.input?.text, ctl.input?.sourceId], ["system_event", "Message from session agent:main:main:\nalso check the logs", woken.id]);
      await waitFor(async () => (await rig.bus.call("router", "lanes", { sessionKey: child.sessionKey })).lanes[0]?.queued === 0 || undefined, 10_000, "nothing queued");
      const beat = await inject(child.sessionKey, "heartbeat check", "now", "heartbeat");
      await waitFor(async () => (await rig.bus.call("router", "lanes", { sessionKey: child.sessionKey })).lanes[0]?.queued === 1 || undefined, 10_000, "the heartbeat queued");
      assert.equal(rig.controls.some((c) => c.input?.sourceId === beat.id), false, "a heartbeat waits for a run of its own");
      // the run's loop takes it: its input record, as the agent-runner stores it
      await runnerBus.call("sessions", "append", {
        sessionKey: child.sessionKey,
        records: [{ id: recordIds.mailboxInput(child.runId, ctl.id), ts: Date.now(), runId: child.runId, kind: "system_event", text: ctl.input!.text }],
      });
      await end(child);
      await finish(await runOf(beat.runId));
      await noRun(woken.runId);
    } finally {
      rig.acceptControls = false;
    }
    await waitFor(async () => (await rig.bus.call("router", "lanes", { sessionKey: child.sessionKey })).lanes.length === 0 || undefined, 10_000, "lane freed");
  });

  it("a wake-now inject a running child took and did not store before it ended (an error, a runner restart) gets a run of its own after it", async () => {
    const child = await startChild("c0ffee06");
    rig.acceptControls = true;
    try {
      const woken = await inject(child.sessionKey, "Message from session agent:main:main:\nare the logs clean?", "now");
      await waitFor(() => rig.controls.find((c) => c.runId === child.runId && c.action === "followup" && c.input?.sourceId === woken.id), 10_000, "follow-up control");
      await noRun(woken.runId, 500);
      await end(child); // accepted, never taken: no input record in the run
      const run = await runOf(woken.runId);
      assert.deepEqual([run.sessionKey, run.inputs[0]?.text], [child.sessionKey, "Message from session agent:main:main:\nare the logs clean?"]);
      await finish(run);
    } finally {
      rig.acceptControls = false;
    }
    await waitFor(async () => (await rig.bus.call("router", "lanes", { sessionKey: child.sessionKey })).lanes.length === 0 || undefined, 10_000, "lane freed");
  });

  it("a missed terminal event of a run whose records exceed one bus message: the status-only check is small and frees the lane", { timeout: 60_000 }, async () => {
    const child = await startChild("c0ffee05");
    // ~1.6 MB of the run's own records (tool output), in appends under the request cap
    for (let batch = 0; batch < 4; batch++) {
      await runnerBus.call("sessions", "append", {
        sessionKey: child.sessionKey,
        records: Array.from({ length: 4 }, (_, i) => ({
          id: `${child.runId}:big:${batch}:${i}`, ts: Date.now(), runId: child.runId, kind: "message" as const,
          message: { role: "user" as const, content: [{ type: "text" as const, text: String(i).repeat(100 * 1024) }] },
        })),
      });
    }
    const full = await rig.bus.call("sessions", "run", { sessionKey: child.sessionKey, runId: child.runId }, { timeoutMs: 3000 });
    assert.equal(full.truncated, true, "the full form answers with the newest records that fit one bus message");
    assert.ok(full.records.length < 16 && full.records.at(-1)?.id === `${child.runId}:big:3:3`, `newest kept (${full.records.length} of 16)`);
    const woken = await inject(child.sessionKey, "are you done yet?", "now");
    await noRun(woken.runId, 1000);
    const asked = await rig.admin.request(s.op("sessions", "run"), JSON.stringify(envelope("lurk.sessions.run.v1", { sessionKey: child.sessionKey, runId: child.runId, statusOnly: true })));
    assert.ok(asked.data.length < 1024, `the status-only reply is small (${asked.data.length} bytes)`);
    assert.deepEqual(JSON.parse(new TextDecoder().decode(asked.data)), { records: [], status: "started" });
    await runnerBus.call("sessions", "append", {
      sessionKey: child.sessionKey,
      records: [{ id: recordIds.marker(child.runId, "done"), ts: Date.now(), runId: child.runId, kind: "run_marker", runStatus: "done", text: "finished" }],
    });
    const run = await waitFor(async () => (await rig.runRequests()).find((r) => r.runId === woken.runId), 40_000, "the inject's run after the status check");
    assert.equal(run.sessionKey, child.sessionKey);
    await finish(run);
  });

  it("steer mode: a message for a session whose run another actor started is handed to that run", async () => {
    const sessionKey = "agent:main:web:group:g-ext";
    const set = await rig.web("g-ext", "/queue steer");
    assert.match((await rig.noticeFor(set.id)).text, /queue: steer/);
    const runId = "cron-job-ext-1";
    rig.runner.publish(s.runEvent(runId, "run_start"), JSON.stringify(envelope("lurk.run.event.v1", { runId, sessionKey, seq: 0, event: { kind: "run_start" as const, agentId: "main", trigger: "cron" as const } })));
    await waitFor(async () => (await rig.bus.call("router", "lanes", { sessionKey })).lanes[0]?.activeRunId === runId || undefined, 10_000, "the external run holds the lane");
    rig.acceptControls = true;
    try {
      const msg = await rig.web("g-ext", "also check the weather");
      const ctl = await waitFor(() => rig.controls.find((c) => c.runId === runId && c.action === "steer"), 10_000, "steer control");
      assert.equal(ctl.input?.text, "also check the weather");
      await noRun(msg.runId);
      // the run's loop takes it: its input record, as the agent-runner stores it
      await runnerBus.call("sessions", "append", {
        sessionKey,
        records: [{ id: recordIds.mailboxInput(runId, ctl.id), ts: Date.now(), runId, kind: "message", message: { role: "user", content: [{ type: "text", text: ctl.input!.text }] } }],
      });
      await end({ runId, sessionKey });
      await noRun(msg.runId, 500);
    } finally {
      rig.acceptControls = false;
    }
    await waitFor(async () => (await rig.bus.call("router", "lanes", { sessionKey })).lanes.length === 0 || undefined, 10_000, "lane freed");
  });

  it("a run another actor started while the router's own run holds the lane waits at the queue's head; one that ends before its turn is dropped", async () => {
    const sessionKey = "agent:main:web:group:g-both";
    const runStart = (runId: string) => rig.runner.publish(s.runEvent(runId, "run_start"), JSON.stringify(envelope("lurk.run.event.v1", { runId, sessionKey, seq: 0, event: { kind: "run_start" as const, agentId: "main", trigger: "cron" as const } })));
    const lanesOf = async () => (await rig.bus.call("router", "lanes", { sessionKey })).lanes.map((l) => [l.activeRunId, l.queued]);
    const first = await rig.web("g-both", "first");
    const r1 = await runOf(first.runId);
    runStart("cron-ext-a");
    runStart("cron-ext-b");
    const second = await rig.web("g-both", "second");
    await waitFor(async () => JSON.stringify(await lanesOf()) === JSON.stringify([[r1.runId, 1]]) || undefined, 10_000, "the message waits; external runs are not counted as queued");
    await end({ runId: "cron-ext-b", sessionKey }); // ends before its turn
    await finish(r1);
    await waitFor(async () => (await lanesOf())[0]?.[0] === "cron-ext-a" || undefined, 10_000, "the external run holds the lane next");
    await noRun(second.runId);
    await end({ runId: "cron-ext-a", sessionKey });
    const r2 = await runOf(second.runId);
    assert.deepEqual(await lanesOf(), [[r2.runId, 0]], "the ended external run b never took the lane");
    await finish(r2);
  });

  it("a new router instance holds the lane of a run another actor started (the replica) and frees it at its end", async () => {
    const child = await startChild("c0ffee03");
    await new Promise((r) => setTimeout(r, 300)); // the replica write is not awaited
    await rig.actor("router").stop();
    await rig.restart("router");
    const lanes = await waitFor(async () => (await rig.bus.call("router", "lanes", { sessionKey: child.sessionKey }).catch(() => undefined))?.lanes, 15_000, "the new router answers");
    assert.deepEqual(lanes.map((l) => l.activeRunId), [child.runId]);
    const woken = await inject(child.sessionKey, "still there?", "now");
    await noRun(woken.runId, 1000);
    await end(child);
    await finish(await runOf(woken.runId));
  });

  it("a missed terminal event: the status check frees the lane and the waiting inject runs", { timeout: 60_000 }, async () => {
    const child = await startChild("c0ffee02");
    const woken = await inject(child.sessionKey, "are you done?", "now");
    await noRun(woken.runId, 1000);
    // the run ends in its transcript; its terminal event never reaches the router
    await runnerBus.call("sessions", "append", {
      sessionKey: child.sessionKey,
      records: [{ id: recordIds.marker(child.runId, "done"), ts: Date.now(), runId: child.runId, kind: "run_marker", runStatus: "done", text: "finished" }],
    });
    const run = await waitFor(async () => (await rig.runRequests()).find((r) => r.runId === woken.runId), 40_000, "the inject's run after the status check");
    assert.equal(run.sessionKey, child.sessionKey);
    await finish(run);
  });
  it("a run another actor stored holds the lane from its storing, before any runner starts it; a consolidation and a finished run's request hold none", async () => {
    const sessionKey = buildSessionKey({ type: "subagent", agentId: "main", childId: "c0ffee09" });
    const request = (runId: string, options: Record<string, unknown> = {}, key = sessionKey) => envelope("lurk.run.request.v1", {
      runId, sessionKey: key, agentId: "main", sessionType: "subagent" as const, trigger: "subagent" as const,
      inputs: [{ kind: "user" as const, text: "do the child's task", attachments: [] }], deliver: false, options,
    });
    // a memory consolidation (no events, no lane) of another session: never held
    const otherKey = buildSessionKey({ type: "subagent", agentId: "main", childId: "c0ffee0a" });
    await jetstream(rig.admin).publish(s.runRequest("main"), JSON.stringify(request("consolidate-x", { command: "consolidate", previousSessionId: "sess-old" }, otherKey)), { msgID: "consolidate-x" });
    // the child's run, stored as the subagents actor stores it; no runner has started it
    const child = { runId: "sub-c0ffee09", sessionKey };
    await jetstream(rig.admin).publish(s.runRequest("main"), JSON.stringify(request(child.runId)), { msgID: child.runId });
    await waitFor(async () => (await rig.bus.call("router", "lanes", { sessionKey })).lanes[0]?.activeRunId === child.runId || undefined, 10_000, "the stored child run holds the lane");
    const woken = await inject(sessionKey, "a message before the child started", "now");
    await noRun(woken.runId, 1000);
    assert.deepEqual((await rig.bus.call("router", "lanes", { sessionKey: otherKey })).lanes, [], "the consolidation holds no lane");
    // the run starts and ends as usual; the inject runs after it
    await beginChild("c0ffee09");
    await runnerBus.call("sessions", "append", { sessionKey, records: [{ id: recordIds.marker(child.runId, "done"), ts: Date.now(), runId: child.runId, kind: "run_marker", runStatus: "done", text: "child done" }] });
    await end(child);
    await finish(await runOf(woken.runId));
    await waitFor(async () => (await rig.bus.call("router", "lanes", { sessionKey })).lanes.length === 0 || undefined, 10_000, "lane freed");
    // the same run's request stored again (a new Nats-Msg-Id) after it ended: checked at once and freed
    await jetstream(rig.admin).publish(s.runRequest("main"), JSON.stringify(request(child.runId)), { msgID: `${child.runId}-again` });
    const again = await inject(sessionKey, "after the child ended", "now");
    await finish(await runOf(again.runId, "the inject's run, not held up by the finished run's request"));
  });
  it("a held run no runner began for longer than RUNS keeps a request (a request seen but never stored) is freed by the status check; a recent one stays held", async () => {
    const stale = { runId: "sub-c0ffee0b", sessionKey: buildSessionKey({ type: "subagent", agentId: "main", childId: "c0ffee0b" }) };
    const recent = { runId: "sub-c0ffee0c", sessionKey: buildSessionKey({ type: "subagent", agentId: "main", childId: "c0ffee0c" }) };
    // as a router holds them in the replica: neither ever reached a runner (the sessions actor has no record of them)
    const kv = await new Kvm(rig.admin).open(ROUTER_BUCKET);
    await kv.put(`run.${stale.runId}`, JSON.stringify({ sessionKey: stale.sessionKey, since: Date.now() - 8 * 24 * 3600_000 }));
    await kv.put(`run.${recent.runId}`, JSON.stringify({ sessionKey: recent.sessionKey, since: Date.now() }));
    await rig.actor("router").stop();
    await rig.restart("router");
    await waitFor(async () => (await rig.bus.call("router", "lanes", { sessionKey: stale.sessionKey }).catch(() => undefined))?.lanes.length === 0 || undefined, 15_000, "the stale run's lane freed");
    assert.deepEqual((await rig.bus.call("router", "lanes", { sessionKey: recent.sessionKey })).lanes.map((l) => l.activeRunId), [recent.runId], "a run that may still wait in RUNS stays held");
    const woken = await inject(stale.sessionKey, "anyone there?", "now");
    await finish(await runOf(woken.runId, "the inject's run, not held up by a run that never starts"));
    await end(recent);
  });
});
