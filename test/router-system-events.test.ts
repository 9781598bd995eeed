/**
 * Pending system events on a real bus (router, sessions, agent-runner, a fake OpenAI server):
 * 25 `next-heartbeat` injects into an idle session reach the next run's prompt as the newest 20
 * after a "(5 older events dropped)" note; a repeat of the last pending event is dropped; the
 * router stamps each pending record's place. The same run's system prompt carries the sections
 * its channel, sender and config give it (Reply Tags, capabilities, User Identity, Model Aliases).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { envelope, inboundMsgId, subjects } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { capPendingSystemEvents, pendingTail } from "../shared/runtime/system-events.js";
import { FakeOpenAIServer, messageText, type ChatRequestBody } from "./fakes/openai-server.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";

const s = subjects();

describe("pending system events: the cap and the de-duplication rules", () => {
  const ev = (n: number, extra: Record<string, unknown> = {}) => ({ id: `inject:e${n}`, ts: n, kind: "system_event" as const, text: `event ${n}`, meta: { pending: n }, ...extra });
  it("a block over the cap keeps the newest 20 after one note; the count comes from the stamped place", () => {
    const records = [{ id: "m", ts: 0, kind: "message" as const, runId: "r0" }, ...Array.from({ length: 23 }, (_, i) => ev(i + 1))];
    const view = capPendingSystemEvents(records);
    assert.equal(view.length, 1 + 1 + 20);
    assert.equal(view[1]!.text, "(3 older events dropped)");
    assert.deepEqual(view.slice(2).map((r) => r.text), Array.from({ length: 20 }, (_, i) => `event ${i + 4}`));
    // only the last 10 loaded (history window), stamped 30: 20 counted as dropped
    const window = Array.from({ length: 10 }, (_, i) => ev(i + 21));
    assert.equal(capPendingSystemEvents(window)[0]!.text, "(20 older events dropped)");
    assert.equal(capPendingSystemEvents(window.slice(0, 1).map((r) => ({ ...r, meta: { pending: 2 } })))[0]!.text, "event 21");
    assert.equal(capPendingSystemEvents([ev(1), ev(2), { id: "x", ts: 3, kind: "system_event", runId: "r", text: "run input" }]).length, 3, "a run's own input is not pending");
  });
  it("the tail: the last pending event and the count, stepping over context notes", () => {
    assert.deepEqual(pendingTail([{ id: "m", ts: 0, kind: "message" }]), { count: 0 });
    const tail = pendingTail([ev(4), { id: "n", ts: 5, kind: "context_note" }]);
    assert.equal(tail.last?.id, "inject:e4");
    assert.equal(tail.count, 4);
    assert.equal(pendingTail([ev(1, { meta: {} }), ev(2, { meta: {} })]).count, 2, "unstamped records are counted");
  });
});

describe("pending system events through the router into a run", () => {
  let nats: TestNats;
  let fake: FakeOpenAIServer;
  const actors: ActorProcess[] = [];
  let cron: NatsConnection;
  let telegram: NatsConnection;
  const ws = mkdtempSync(join(tmpdir(), "lurk-sysev-ws-"));
  const sessionKey = "agent:main:main";

  before(async () => {
    nats = await TestNats.start();
    fake = await FakeOpenAIServer.start();
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({
      routing: { commands: { owners: ["telegram:owner-1"] } },
      models: { aliases: { quick: "openai/gpt-4o-mini" } },
    }));
    actors.push(await startActorProcess("sessions", nats), await startActorProcess("router", nats), await startActorProcess("agent-runner", nats, {
      LURKBOT_MODEL: "openai/test-model", OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test-sysev-0123456789", LURKBOT_WORKSPACE: ws,
    }));
    cron = await nats.connect("cron");
    telegram = await nats.connect("channel-telegram");
  });
  after(async () => {
    await Promise.all([cron?.close(), telegram?.close()]);
    for (const a of actors) await a.stop();
    await fake?.close();
    await nats?.stop();
    rmSync(ws, { recursive: true, force: true });
  });

  const history = async () => (await new BusClient(telegram).call("sessions", "history", { sessionKey, limit: 200 })).records;
  const inject = async (text: string) => {
    const msg = envelope("lurk.inject.v1", { agentId: "main", sessionKey, source: "cron" as const, text, wake: "next-heartbeat" as const });
    await jetstream(cron).publish(s.inject("main"), JSON.stringify(msg), { msgID: msg.id });
    return msg.id;
  };
  /** a DM from the owner; resolves with the model request that carries it */
  const dm = async (text: string): Promise<ChatRequestBody> => {
    const id = randomUUID();
    const msg = envelope("lurk.inbound.message.v1", {
      id, channel: "telegram", conversation: "chat-1", peer: { kind: "dm" as const, id: "owner-1" }, sender: { id: "owner-1", name: "Olga" }, text, attachments: [], mentioned: false,
    });
    fake.enqueue({ kind: "text", text: "noted" });
    await jetstream(telegram).publish(s.inbound("telegram"), JSON.stringify(msg), { msgID: inboundMsgId("telegram", id) });
    return waitFor(() => fake.requests.map((r) => r.body).find((b) => b.messages.some((m) => m.role === "user" && messageText(m).includes(text))), 20_000, "the model request");
  };
  const eventNotes = (body: ChatRequestBody) => body.messages.filter((m) => m.role === "user" && messageText(m).startsWith("[system event]")).map((m) => messageText(m));

  it("25 events into an idle session (the router restarted between them): the next run's prompt holds the newest 20 and says 5 were dropped", async () => {
    for (let i = 1; i <= 12; i++) await inject(`tick ${i}`);
    await waitFor(async () => (await history()).filter((r) => r.kind === "system_event").length === 12, 20_000, "12 recorded events");
    // a new router process goes on counting from the transcript
    await actors[1]!.stop();
    actors[1] = await startActorProcess("router", nats);
    for (let i = 13; i <= 25; i++) await inject(`tick ${i}`);
    await waitFor(async () => (await history()).filter((r) => r.kind === "system_event").length === 25, 20_000, "25 recorded events");
    const records = (await history()).filter((r) => r.kind === "system_event");
    assert.deepEqual(records.map((r) => r.text), Array.from({ length: 25 }, (_, i) => `tick ${i + 1}`), "recorded in order");
    assert.deepEqual(records.map((r) => r.meta?.pending), Array.from({ length: 25 }, (_, i) => i + 1), "each stamped with its place");
    const body = await dm("what happened? [q1]");
    const notes = eventNotes(body);
    assert.deepEqual(notes, ["[system event] (5 older events dropped)", ...Array.from({ length: 20 }, (_, i) => `[system event] tick ${i + 6}`)]);
    // the same run's system prompt: telegram quotes replies; the sender is the owner; aliases of set-up providers
    const system = messageText(body.messages[0]);
    assert.match(system, /## Reply Tags\n/);
    assert.match(system, /\| channel=telegram \| capabilities=quote-replies,files,voice,reactions,edit,delete \|/);
    assert.match(system, /## User Identity\nOwners .*: telegram:owner-1;.*\nThe current sender is an owner \(.*\)\.\nSender id: "telegram:owner-1"; display name \(set by the sender on the platform, not verified\): "Olga"\n/);
    assert.match(system, /## Model Aliases\n.*\n- quick: openai\/gpt-4o-mini\n(- .*\n)*- gpt4o: openai\/gpt-4o\n/);
    assert.ok(!system.includes("- sonnet: anthropic/"), "no anthropic credentials: its built-in aliases are not offered");
    await waitFor(async () => (await history()).some((r) => r.kind === "run_marker" && r.runStatus === "done"), 20_000, "the run's end");
  });

  it("a repeat of the last pending event is dropped, an earlier one's is not; after a run the same text counts again", async () => {
    await inject("same text");
    await inject("same text");
    await inject("other text");
    await inject("same text");
    await waitFor(async () => (await history()).some((r) => r.text === "other text" && r.meta?.pending === 2) && (await history()).filter((r) => r.text === "same text").length >= 2, 20_000, "recorded events");
    const pending = (await history()).filter((r) => r.kind === "system_event" && !r.runId && (r.text === "same text" || r.text === "other text"));
    assert.deepEqual(pending.map((r) => [r.text, r.meta?.pending]), [["same text", 1], ["other text", 2], ["same text", 3]]);
    const body = await dm("anything new? [q2]");
    const notes = eventNotes(body);
    assert.deepEqual(notes.filter((n) => !n.includes("tick") && !n.includes("dropped")), ["[system event] same text", "[system event] other text", "[system event] same text"]);
    assert.deepEqual(notes.filter((n) => n.includes("dropped")), ["[system event] (5 older events dropped)"], "the first block keeps its one note; the second has none");
    await waitFor(async () => (await history()).filter((r) => r.kind === "run_marker" && r.runStatus === "done").length === 2, 20_000, "the second run's end");
    await inject("same text");
    await waitFor(async () => (await history()).filter((r) => r.text === "same text" && !r.runId).length === 3, 20_000, "recorded again after the run");
    assert.equal((await history()).at(-1)?.meta?.pending, 1);
  });
});
