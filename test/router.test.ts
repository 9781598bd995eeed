/**
 * The router as a real process on a real bus: inbound messages become run requests in RUNS,
 * one active run per session (the next waits for the terminal event), sessions in parallel,
 * duplicates collapse, and system injects either start a run or are recorded.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  envelope, inboundMsgId, runIdFor, STREAMS, subjects,
} from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { Lanes } from "../services/router/lanes.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { storedRunRequests } from "./harness/streams.js";

const s = subjects();

describe("lanes", () => {
  it("grants one run per session in FIFO order and frees on release", async () => {
    const lanes = new Lanes();
    const order: string[] = [];
    await lanes.acquire("k", "r1");
    const second = lanes.acquire("k", "r2").then(() => order.push("r2"));
    const third = lanes.acquire("k", "r3").then(() => order.push("r3"));
    await lanes.acquire("other", "x1"); // another session is not blocked
    assert.deepEqual(lanes.counts(), { active: 2, queued: 2 });
    await lanes.acquire("k", "r1"); // the holder passes again (redelivery)
    assert.equal(lanes.release("r1"), true);
    await second;
    assert.equal(lanes.release("r2"), true);
    await third;
    assert.deepEqual(order, ["r2", "r3"]);
    assert.equal(lanes.release("nope"), false);
  });
});

describe("router", () => {
  let nats: TestNats;
  let actors: ActorProcess[] = [];
  let channel: NatsConnection;
  let runner: NatsConnection;
  let admin: NatsConnection;
  let js: JetStreamClient;

  before(async () => {
    nats = await TestNats.start();
    actors = [await startActorProcess("sessions", nats), await startActorProcess("router", nats)];
    channel = await nats.connect("channel-telegram");
    runner = await nats.connect("agent-runner");
    admin = await nats.connect("admin");
    js = jetstream(channel);
  });
  after(async () => {
    await Promise.all([channel?.close(), runner?.close(), admin?.close()]);
    for (const a of actors) await a.stop();
    await nats?.stop();
  });

  const send = async (text: string, peer: { kind: "dm" | "group"; id: string }, id = randomUUID()) => {
    const msg = envelope("lurk.inbound.message.v1", {
      id, channel: "telegram", conversation: `c-${peer.id}`, peer, sender: { id: "u1" }, text, attachments: [], mentioned: false,
    });
    const ack = await js.publish(s.inbound("telegram"), JSON.stringify(msg), { msgID: inboundMsgId("telegram", id) });
    return { id, runId: runIdFor("telegram", id), ack };
  };

  const runRequests = () => storedRunRequests(admin);
  const finish = (runId: string, sessionKey: string) => {
    runner.publish(s.runEvent(runId, "done"), JSON.stringify(envelope("lurk.run.event.v1", {
      runId, sessionKey, seq: 1, event: { kind: "done", text: "ok", turns: 1, usage: {}, silent: false },
    })));
  };

  it("turns a DM into a run of the default agent's main session", async () => {
    const { runId } = await send("hello", { kind: "dm", id: "42" });
    const req = await waitFor(async () => (await runRequests()).find((r) => r.runId === runId), 10_000, "run request");
    assert.equal(req.sessionKey, "agent:main:main");
    assert.equal(req.agentId, "main");
    assert.equal(req.inputs[0]!.text, "hello");
    assert.equal(req.origin?.conversation, "c-42");
    finish(runId, req.sessionKey);
  });

  it("keeps one run per session: the second waits for the first's terminal event; other sessions go on", async () => {
    const group = { kind: "group" as const, id: "-100777" };
    const first = await send("one", group);
    const second = await send("two", group);
    const other = await send("elsewhere", { kind: "group", id: "-100888" });
    const firstReq = await waitFor(async () => (await runRequests()).find((r) => r.runId === first.runId), 10_000, "first run");
    assert.equal(firstReq.sessionKey, "agent:main:telegram:group:-100777");
    await waitFor(async () => (await runRequests()).some((r) => r.runId === other.runId), 10_000, "other session's run");
    assert.equal((await runRequests()).some((r) => r.runId === second.runId), false, "second run waits");
    const lanes = await new BusClient(channel).call("router", "lanes", { sessionKey: firstReq.sessionKey });
    assert.equal(lanes.lanes[0]?.activeRunId, first.runId);
    assert.equal(lanes.lanes[0]?.queued, 1);
    finish(first.runId, firstReq.sessionKey);
    await waitFor(async () => (await runRequests()).some((r) => r.runId === second.runId), 10_000, "second run after the first ended");
  });

  it("a duplicate platform message is processed once", async () => {
    const id = randomUUID();
    const a = await send("dup", { kind: "group", id: "-100999" }, id);
    const b = await send("dup", { kind: "group", id: "-100999" }, id);
    assert.equal(b.ack.duplicate, true);
    await waitFor(async () => (await runRequests()).some((r) => r.runId === a.runId), 10_000, "run");
    const status = await new BusClient(channel).call("router", "status", {});
    assert.ok(status.processed >= 1);
    assert.equal((await runRequests()).filter((r) => r.runId === a.runId).length, 1);
  });

  it("a system inject with wake next-heartbeat is recorded in the session, not run", async () => {
    const cron = await nats.connect("cron");
    const inject = envelope("lurk.inject.v1", { agentId: "main", sessionKey: "agent:main:main", source: "cron" as const, text: "reminder: water plants", wake: "next-heartbeat" as const });
    await jetstream(cron).publish(s.inject("main"), JSON.stringify(inject), { msgID: inject.id });
    const client = new BusClient(channel);
    await waitFor(async () => (await client.call("sessions", "history", { sessionKey: "agent:main:main" })).records.some((r) => r.text === "reminder: water plants"), 10_000, "recorded event");
    assert.equal((await runRequests()).some((r) => r.runId === runIdFor("inject", inject.id)), false);
    await cron.close();
  });

  it("a malformed inbound message is dead-lettered, reported as an event, and the router keeps serving", async () => {
    const monitor = await nats.connect("cli");
    const reports: string[] = [];
    monitor.subscribe("lurk.evt.router.dead_letter", { callback: (_e, m) => void reports.push(m.string()) });
    await monitor.flush();
    await js.publish(s.inbound("telegram"), "not json at all", { msgID: randomUUID() });
    const jsm = await jetstreamManager(admin);
    await waitFor(async () => (await jsm.streams.info(STREAMS.deadLetter)).state.messages > 0, 10_000, "dead letter");
    await waitFor(() => reports.length > 0, 5_000, "dead_letter event");
    assert.match(reports[0]!, /LURK_INBOUND/);
    await monitor.close();
    const { runId } = await send("still alive?", { kind: "group", id: "-100123" });
    await waitFor(async () => (await runRequests()).some((r) => r.runId === runId), 10_000, "run after a bad message");
  });
});
