/**
 * Pending system events are never recorded inside a run. End to end (nats-server, sessions,
 * router and agent-runner processes, a fake OpenAI server, a tools stand-in whose tool takes a
 * while): a `next-heartbeat` inject and a user's reaction that arrive while the run's tool call
 * executes are recorded after the run ended, so the next run's model gets the tool call with its
 * own result (not "the run was interrupted") and each event once. The mechanism itself
 * (PendingEvents with the router's real Lanes, on a real bus with a sessions process): an event
 * waits for the run holding the lane and for one that takes it meanwhile, a session's events keep
 * their order, another session's are recorded at once; a run given the lane while an event is
 * being written is dispatched after the write; a term's end fails the waits.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { CONSUMERS, envelope, inboundMsgId, STREAMS, subjects, type ToolDefinition, type TranscriptRecord } from "../shared/contract/index.js";
import { Lanes } from "../services/router/lanes.js";
import { PendingEvents } from "../services/router/pending-events.js";
import type { ActorRuntime } from "../shared/runtime/actor.js";
import { BusClient } from "../shared/runtime/client.js";
import { loadConfig } from "../shared/runtime/config.js";
import { LURKBOT_VERSION } from "../shared/runtime/version.js";
import { FakeOpenAIServer, messageText, type ChatRequestBody } from "./fakes/openai-server.js";
import { startActorProcess, startInProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { collectActorEvents, type SeenActorEvent } from "./harness/events.js";
import { TestNats } from "./harness/nats.js";
import { startToolResponder, textResult } from "./harness/tool-responder.js";

const s = subjects();

const LOOK: ToolDefinition = {
  name: "look", description: "Look something up (takes a moment; has side effects, so its call is stored before it runs).", parameters: { type: "object", properties: { what: { type: "string" } } },
  actor: "tools", sideEffects: true, parallelSafe: false, groups: [], needsApproval: false,
};

describe("pending system events that arrive during a run's tool call", () => {
  let nats: TestNats;
  let fake: FakeOpenAIServer;
  const actors: ActorProcess[] = [];
  let tools: NatsConnection;
  let cron: NatsConnection;
  let telegram: NatsConnection;
  let watcher: NatsConnection;
  let routerEvents: SeenActorEvent[];
  /** what the tool does while it runs (before it answers) */
  let whileLooking: () => Promise<void> = async () => undefined;
  const ws = mkdtempSync(join(tmpdir(), "lurk-pending-ws-"));
  const sessionKey = "agent:main:main";

  before(async () => {
    nats = await TestNats.start();
    fake = await FakeOpenAIServer.start();
    tools = await startToolResponder(nats, [{
      definition: LOOK,
      run: async (req) => {
        await whileLooking();
        return textResult(req, "looked: 42", 300);
      },
    }]);
    watcher = await nats.connect("admin");
    routerEvents = await collectActorEvents(watcher, "router");
    actors.push(await startActorProcess("sessions", nats), await startActorProcess("router", nats), await startActorProcess("agent-runner", nats, {
      LURKBOT_MODEL: "openai/test-model", OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test-pending-0123456789", LURKBOT_WORKSPACE: ws,
    }));
    cron = await nats.connect("cron");
    telegram = await nats.connect("channel-telegram");
  });
  after(async () => {
    await Promise.all([cron?.close(), telegram?.close(), watcher?.close(), tools?.close()]);
    for (const a of actors.reverse()) await a.stop();
    await fake?.close();
    await nats?.stop();
    rmSync(ws, { recursive: true, force: true });
  });

  const history = async (): Promise<TranscriptRecord[]> => (await new BusClient(telegram).call("sessions", "history", { sessionKey, limit: 200 })).records;
  const inject = async (text: string) => {
    const msg = envelope("lurk.inject.v1", { agentId: "main", sessionKey, source: "cron" as const, text, wake: "next-heartbeat" as const });
    await jetstream(cron).publish(s.inject("main"), JSON.stringify(msg), { msgID: msg.id });
    return msg.id;
  };
  const dm = async (text: string) => {
    const id = randomUUID();
    const msg = envelope("lurk.inbound.message.v1", {
      id, channel: "telegram", conversation: "chat-1", peer: { kind: "dm" as const, id: "owner-1" }, sender: { id: "owner-1", name: "Olga" }, text, attachments: [], mentioned: false,
    });
    await jetstream(telegram).publish(s.inbound("telegram"), JSON.stringify(msg), { msgID: inboundMsgId("telegram", id) });
    return id;
  };
  const react = async (messageId: string) => {
    const id = `reaction:${randomUUID()}`;
    const msg = envelope("lurk.inbound.message.v1", {
      id, channel: "telegram", conversation: "chat-1", peer: { kind: "dm" as const, id: "owner-1" }, sender: { id: "owner-1", name: "Olga" }, text: "", attachments: [], mentioned: false,
      reaction: { action: "added" as const, emoji: "👍", messageId, ownMessage: false },
    });
    await jetstream(telegram).publish(s.inbound("telegram"), JSON.stringify(msg), { msgID: inboundMsgId("telegram", id) });
  };
  const requestWith = (text: string) => waitFor(() => fake.requests.map((r) => r.body).find((b) => b.messages.some((m) => m.role === "user" && messageText(m).includes(text))), 20_000, `the model request with ${text}`);
  const eventNotes = (body: ChatRequestBody) => body.messages.filter((m) => m.role === "user" && messageText(m).startsWith("[system event]")).map((m) => messageText(m));
  const pendingRecords = async () => (await history()).filter((r) => r.kind === "system_event" && !r.runId);

  it("an inject (next-heartbeat) and a reaction during a tool call are recorded after the run: the next run gets the tool result intact and each event once", async () => {
    whileLooking = async () => {
      // both arrive while the tool runs; the tool answers once the router has each in hand
      // (recorded already, or delivered and not acked: waiting for the run's end)
      await inject("reminder: water the plants");
      await react("chat-1:41");
      const jsm = await jetstreamManager(watcher);
      await waitFor(async () => {
        const unacked = (await jsm.consumers.info(STREAMS.inbound, CONSUMERS.router)).num_ack_pending;
        return unacked + (await pendingRecords()).length >= 2 || undefined;
      }, 20_000, "the router holding both events");
    };
    fake.enqueue(
      { kind: "tool_calls", calls: [{ id: "look_1", name: "look", arguments: { what: "the answer" } }] },
      { kind: "text", text: "it is 42" },
    );
    await dm("what is the answer? [q1]");
    await requestWith("[q1]");
    await waitFor(async () => (await history()).some((r) => r.kind === "run_marker" && r.runStatus === "done"), 20_000, "the first run's end");
    await waitFor(async () => (await pendingRecords()).length === 2 || undefined, 20_000, "both events recorded");
    whileLooking = async () => undefined;

    fake.enqueue({ kind: "text", text: "noted" });
    await dm("anything new? [q2]");
    const body = await requestWith("[q2]");
    const callAt = body.messages.findIndex((m) => m.role === "assistant" && m.tool_calls?.some((c) => c.id === "look_1"));
    assert.ok(callAt >= 0, "the tool call is in the next run's history");
    const answer = body.messages[callAt + 1]!;
    assert.deepEqual([answer.role, answer.tool_call_id, messageText(answer)], ["tool", "look_1", "looked: 42"], "its own result, not an interruption");
    assert.ok(!JSON.stringify(body.messages).includes("interrupted"), "no call shown as interrupted");
    const notes = eventNotes(body);
    assert.deepEqual(notes.filter((n) => n.includes("water the plants")), ["[system event] reminder: water the plants"], "the inject once");
    assert.equal(notes.filter((n) => n.startsWith("[system event] Reaction added on telegram: 👍")).length, 1, "the reaction once");
    assert.ok(body.messages.findIndex((m) => messageText(m).includes("water the plants")) > callAt + 1, "after the first run's turns");

    // the transcript: the call's result right after it, the events after the first run's end
    const records = await history();
    const done = records.findIndex((r) => r.kind === "run_marker" && r.runStatus === "done");
    const call = records.findIndex((r) => r.message?.role === "assistant" && r.message.content.some((b) => b.type === "tool_call" && b.id === "look_1"));
    const result = records.findIndex((r) => r.message?.role === "tool_result" && r.message.toolCallId === "look_1");
    assert.ok(call >= 0 && result === call + 1, `the tool result right after its call (call ${call}, result ${result})`);
    const events = records.flatMap((r, i) => (r.kind === "system_event" && !r.runId ? [i] : []));
    assert.equal(events.length, 2);
    assert.ok(events.every((i) => i > done), `the events after the run's end (events ${events.join(",")}, done ${done})`);
    const waited = routerEvents.filter((e) => e.event === "system_event_waits" && e.data.sessionKey === sessionKey);
    assert.deepEqual(waited.map((e) => e.data.source), ["cron"], "the inject waited for the run's end (the reaction behind it, in order)");
    assert.deepEqual(routerEvents.filter((e) => e.event === "system_event_recorded").map((e) => [e.data.source, e.data.recorded]), [["cron", "recorded"], ["reaction", "recorded"]]);
  });
});

describe("PendingEvents: the router's rule on a real bus", () => {
  let nats: TestNats;
  let sessions: ActorProcess;
  let rt: ActorRuntime;
  let watcher: NatsConnection;
  let routerEvents: SeenActorEvent[];
  let bus: BusClient;

  before(async () => {
    nats = await TestNats.start();
    sessions = await startActorProcess("sessions", nats);
    watcher = await nats.connect("admin");
    bus = new BusClient(watcher);
    routerEvents = await collectActorEvents(watcher, "router");
    // the router's NATS user, in this process: its events and sessions calls are the router's
    rt = await startInProcess({ name: "router", version: LURKBOT_VERSION, description: "pending events under test", start: async () => undefined }, nats, loadConfig(nats.env()));
  });
  after(async () => {
    await rt?.stop();
    await watcher?.close();
    await sessions?.stop();
    await nats?.stop();
  });

  /** the router's lanes and run ends, as term.ts keeps them */
  const rig = () => {
    const lanes = new Lanes();
    const waiters = new Map<string, Array<() => void>>();
    const ended = (runId: string) => new Promise<void>((resolve) => {
      if (!lanes.isActive(runId)) return resolve();
      waiters.set(runId, [...(waiters.get(runId) ?? []), resolve]);
    });
    const release = (runId: string) => {
      lanes.release(runId);
      waiters.get(runId)?.forEach((w) => w());
      waiters.delete(runId);
    };
    return { lanes, release, pending: new PendingEvents({ rt, lanes, ended }) };
  };
  const session = (name: string) => ({ sessionKey: `agent:main:cli:dm:${name}`, agentId: "main", sessionType: "dm" as const });
  const event = (id: string, text: string) => ({ recordId: `test:${id}`, ts: Date.now(), text, source: "test" });
  const pendingOf = async (name: string) => (await bus.call("sessions", "history", { sessionKey: session(name).sessionKey, limit: 50 })).records
    .filter((r) => r.kind === "system_event" && !r.runId).map((r) => [r.text, r.meta?.pending]);
  const waitsFor = (name: string, runId: string, count = 1) => waitFor(() => routerEvents.filter((e) => e.event === "system_event_waits" && e.data.sessionKey === session(name).sessionKey && e.data.runId === runId).length >= count || undefined, 10_000, `events waiting for ${runId}`);

  it("an event waits for the run holding the lane and for a run that takes it meanwhile; the session's later event waits behind it; another session's is recorded at once", async () => {
    const { lanes, release, pending } = rig();
    assert.equal(await lanes.acquire(session("a").sessionKey, "run-1"), true);
    const first = pending.record(session("a"), event("a1", "first"));
    const second = pending.record(session("a"), event("a2", "second"));
    assert.equal(await pending.record(session("b"), event("b1", "elsewhere")), "recorded", "another session is not held up");
    assert.deepEqual(await pendingOf("b"), [["elsewhere", 1]]);
    await waitsFor("a", "run-1");
    // a queued run takes the lane the moment run-1 ends: the events wait for it too
    const granted = lanes.acquire(session("a").sessionKey, "run-2");
    release("run-1");
    assert.equal(await granted, true);
    await waitsFor("a", "run-2");
    assert.deepEqual(await pendingOf("a"), [], "nothing recorded while a run holds the lane");
    release("run-2");
    assert.deepEqual(await Promise.all([first, second]), ["recorded", "recorded"]);
    assert.deepEqual(await pendingOf("a"), [["first", 1], ["second", 2]], "in the order they came, each stamped with its place");
    assert.equal(await pending.record(session("a"), event("a3", "second")), "repeat", "a repeat of the last pending event is dropped");
    assert.equal(await pending.record(session("a"), event("a2", "second")), "recorded", "a redelivery finds its own record");
    assert.deepEqual(await pendingOf("a"), [["first", 1], ["second", 2]]);
  });

  it("a run given the lane while an event is being written is dispatched after the write; the write ensured the session", async () => {
    const { lanes, pending } = rig();
    const key = session("c").sessionKey;
    const recorded = pending.record(session("c"), event("c1", "written first"));
    await new Promise((r) => setImmediate(r)); // the write is under way (its requests take longer)
    assert.equal(await lanes.acquire(key, "run-3"), true);
    await pending.beforeRun(key, "run-3"); // what the dispatch awaits
    assert.deepEqual(await pendingOf("c"), [["written first", 1]], "in the transcript before the run starts");
    assert.equal(await recorded, "recorded");
    assert.equal((await bus.call("sessions", "get", { sessionKey: key })).session?.sessionType, "dm");
  });

  it("in a session that is never idle, the next run's start records the events waiting for the last run first; a later event waits for that run; an idle session's start awaits nothing", async () => {
    const { lanes, release, pending } = rig();
    const key = session("e").sessionKey;
    assert.equal(pending.beforeRun(key, "run-5"), undefined, "no event queued: the dispatch awaits nothing");
    assert.equal(await lanes.acquire(key, "run-5"), true);
    const first = pending.record(session("e"), event("e1", "during run-5"));
    const second = pending.record(session("e"), event("e2", "also during run-5"));
    await waitsFor("e", "run-5");
    // run-6 was queued: it takes the lane the moment run-5 ends, and its dispatch starts
    const granted = lanes.acquire(key, "run-6");
    release("run-5");
    assert.equal(await granted, true);
    const start = pending.beforeRun(key, "run-6");
    assert.ok(start, "events are queued: the dispatch waits for them");
    await start;
    assert.deepEqual(await Promise.all([first, second]), ["recorded", "recorded"], "recorded before run-6 is stored in RUNS");
    assert.deepEqual(await pendingOf("e"), [["during run-5", 1], ["also during run-5", 2]]);
    // run-6 passed its start: an event now waits for its end
    const waitedBefore = routerEvents.filter((e) => e.event === "system_event_waits" && e.data.runId === "run-6").length;
    const third = pending.record(session("e"), event("e3", "during run-6"));
    await waitsFor("e", "run-6", waitedBefore + 1);
    assert.deepEqual(await pendingOf("e"), [["during run-5", 1], ["also during run-5", 2]], "nothing recorded inside run-6");
    release("run-6");
    assert.equal(await third, "recorded");
    assert.equal(pending.beforeRun(key, "run-7"), undefined, "nothing left queued");
  });

  it("the term's end fails an event waiting for a run; nothing is recorded", async () => {
    const { lanes, pending } = rig();
    await lanes.acquire(session("d").sessionKey, "run-4");
    const waiting = pending.record(session("d"), event("d1", "too late"));
    await waitsFor("d", "run-4");
    pending.close();
    await assert.rejects(waiting, (err: Error & { code?: string }) => err.code === "UNAVAILABLE");
    assert.deepEqual(await pendingOf("d"), []);
  });
});
