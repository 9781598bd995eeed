/** The sessions store on real LMDB files, and the actor over a real bus. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { TranscriptRecord } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { SessionStore } from "../services/sessions/store.js";
import { startActorProcess, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";

const key = "agent:main:main";
const note = (id: string, runId?: string): TranscriptRecord => ({ id, ts: 1, kind: "context_note", text: id, ...(runId ? { runId } : {}) });
const marker = (runId: string, status: "started" | "done"): TranscriptRecord => ({ id: `${runId}:${status}`, ts: 1, runId, kind: "run_marker", runStatus: status });

describe("session store (LMDB)", () => {
  let dir: string;
  let store: SessionStore;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "lurk-sessions-"));
    store = new SessionStore(dir);
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("appends idempotently by record id and keeps order", async () => {
    await store.ensure({ sessionKey: key, agentId: "main", sessionType: "main" });
    assert.deepEqual(await store.append(key, [note("a"), note("b")]), { appended: 2, duplicates: 0, lastSeq: 1 });
    assert.deepEqual(await store.append(key, [note("b"), note("c")]), { appended: 1, duplicates: 1, lastSeq: 2 });
    assert.deepEqual(store.history(key, 10).map((r) => r.id), ["a", "b", "c"]);
    assert.deepEqual(store.history(key, 2).map((r) => r.id), ["b", "c"]);
  });

  it("begin reports the prior status, appends only for unfinished runs, and returns new records incrementally", async () => {
    const first = await store.begin({ sessionKey: key, agentId: "main", sessionType: "main", runId: "r1", records: [marker("r1", "started"), note("r1:in", "r1")], historyLimit: 100 });
    assert.equal(first.prior, "unknown");
    assert.equal(first.incremental, false);
    assert.deepEqual(first.runRecords.map((r) => r.id), ["r1:started", "r1:in"]);
    const lastSeq = first.records.at(-1)!.seq!;
    await store.append(key, [marker("r1", "done")], { usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, total: 15 }, model: "m", provider: "openai" });
    const again = await store.begin({ sessionKey: key, agentId: "main", sessionType: "main", runId: "r1", records: [note("should-not-land", "r1")], historyLimit: 100, known: { sessionId: first.session.sessionId, lastSeq } });
    assert.equal(again.prior, "done");
    assert.equal(again.incremental, true);
    assert.deepEqual(again.records.map((r) => r.id), ["r1:done"]);
    assert.equal(store.run("r1").records.some((r) => r.id === "should-not-land"), false);
    assert.equal(store.get(key)!.usage.total, 15);
    assert.equal(store.get(key)!.model, "m");
  });

  it("survives a reopen of the environment, resets to a fresh transcript, deletes", async () => {
    await store.close();
    store = new SessionStore(dir);
    assert.ok(store.history(key, 100).length >= 5);
    const { previousSessionId, session } = await store.reset(key);
    assert.notEqual(previousSessionId, session.sessionId);
    assert.deepEqual(store.history(key, 100), []);
    assert.equal(await store.delete(key), true);
    assert.equal(store.get(key), null);
  });
});

describe("sessions actor", () => {
  let nats: TestNats;
  let actor: ActorProcess;
  before(async () => {
    nats = await TestNats.start();
    actor = await startActorProcess("sessions", nats);
  });
  after(async () => {
    await actor?.stop();
    await nats?.stop();
  });

  it("keeps transcripts across a SIGKILL of the actor", async () => {
    const nc = await nats.connect("agent-runner");
    const bus = new BusClient(nc);
    const origin = { channel: "cli", conversation: "main", messageIds: [] };
    await bus.call("sessions", "begin", { sessionKey: key, agentId: "main", sessionType: "main", runId: "r9", records: [note("hello", "r9")], origin });
    await actor.kill();
    actor = await startActorProcess("sessions", nats);
    const history = await bus.call("sessions", "history", { sessionKey: key });
    assert.deepEqual(history.records.map((r) => r.id), ["hello"]);
    assert.equal(history.session?.lastOrigin?.channel, "cli");
    const listed = await bus.call("sessions", "list", {});
    assert.equal(listed.sessions[0]?.sessionKey, key);
    await assert.rejects(bus.call("sessions", "append", { sessionKey: "agent:main:nope:dm:x", records: [note("x")] }), /no session/);
    await nc.close();
  });
});
