/**
 * Transcripts larger than one bus message. A reply of `sessions.begin` or `sessions.history`
 * keeps the newest records that fit under the server's max_payload (1 MiB) and says `truncated`;
 * `sessions.history` pages back with `beforeSeq`, and the agent-runner reads the rest that way,
 * so a session with large records (tool output, documents' text) keeps answering with its whole
 * history instead of failing every run.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import type { TranscriptRecord } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { readHistory } from "../shared/runtime/session-history.js";
import { messageText } from "./fakes/openai-server.js";
import { startActorProcess, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { CliClient, TestSystem } from "./harness/system.js";

const KB = 1024;
/** a user message of about `size` bytes whose text starts with its index */
const bigMessage = (i: number, size: number): TranscriptRecord => ({
  id: `big-${i}`, ts: 1, kind: "message",
  message: { role: "user", content: [{ type: "text", text: `#${i} ${String(i % 10).repeat(size)}` }] },
});

async function fill(bus: BusClient, sessionKey: string, count: number, size: number): Promise<void> {
  // in batches that stay under the bus's request cap
  for (let i = 0; i < count; i += 4) {
    const records = Array.from({ length: Math.min(4, count - i) }, (_, j) => bigMessage(i + j, size));
    await bus.call("sessions", "append", { sessionKey, records });
  }
}

describe("sessions actor: replies larger than one bus message", () => {
  let nats: TestNats;
  let actor: ActorProcess;
  let nc: NatsConnection;
  let bus: BusClient;
  const key = "agent:main:main";
  before(async () => {
    nats = await TestNats.start();
    actor = await startActorProcess("sessions", nats);
    nc = await nats.connect("agent-runner");
    bus = new BusClient(nc);
    await bus.call("sessions", "ensure", { sessionKey: key, agentId: "main", sessionType: "main" });
    await fill(bus, key, 30, 60 * KB); // ~1.8 MB of transcript
  });
  after(async () => {
    await nc?.close();
    await actor?.stop();
    await nats?.stop();
  });

  it("begin returns the newest records that fit and says truncated; history pages back to the rest in order", async () => {
    const begun = await bus.call("sessions", "begin", { sessionKey: key, agentId: "main", sessionType: "main", runId: "r-large", records: [], historyLimit: 200 });
    assert.equal(begun.truncated, true);
    assert.equal(begun.incremental, false);
    assert.ok(begun.records.length > 5 && begun.records.length < 30, `kept ${begun.records.length} of 30`);
    assert.equal(begun.records.at(-1)!.id, "big-29", "the newest record is kept");
    assert.ok(Buffer.byteLength(JSON.stringify(begun)) < 1024 * KB);

    const page = await bus.call("sessions", "history", { sessionKey: key, limit: 200, beforeSeq: begun.records[0]!.seq! });
    assert.equal(page.records.at(-1)!.seq, begun.records[0]!.seq! - 1, "the page ends just before the seq asked for");

    const all = await readHistory(bus, { sessionKey: key, limit: 200 });
    assert.deepEqual(all.records.map((r) => r.id), Array.from({ length: 30 }, (_, i) => `big-${i}`));
    const newest12 = await readHistory(bus, { sessionKey: key, limit: 12 });
    assert.deepEqual(newest12.records.map((r) => r.id), Array.from({ length: 12 }, (_, i) => `big-${18 + i}`), "the limit counts across pages");
  });

  it("a begin whose new records since the caller's cache do not fit is not incremental", async () => {
    const begun = await bus.call("sessions", "begin", { sessionKey: key, agentId: "main", sessionType: "main", runId: "r-large-2", records: [], historyLimit: 200, known: { sessionId: (await bus.call("sessions", "get", { sessionKey: key })).session!.sessionId, lastSeq: 0 } });
    assert.equal(begun.truncated, true);
    assert.equal(begun.incremental, false, "the records are the newest, not the ones after lastSeq");
    const small = await bus.call("sessions", "begin", { sessionKey: key, agentId: "main", sessionType: "main", runId: "r-large-3", records: [], historyLimit: 200, known: { sessionId: begun.session.sessionId, lastSeq: begun.records.at(-1)!.seq! } });
    assert.equal(small.incremental, true);
    assert.equal(small.truncated, undefined);
  });
});

describe("agent-runner: a session whose history is larger than one bus message", () => {
  let system: TestSystem;
  let cli: CliClient;
  let nc: NatsConnection;
  before(async () => {
    system = await TestSystem.start({ config: { compaction: { enabled: false }, memory: { enabled: false } } });
    cli = await CliClient.connect(system.nats);
    nc = await system.nats.connect("agent-runner");
  });
  after(async () => {
    await cli?.close();
    await nc?.close();
    await system?.stop();
  });

  it("still answers, and the model gets the whole history", async () => {
    const key = "agent:main:cli:dm:large";
    system.fake.enqueue({ kind: "text", text: "first answer" });
    await cli.send("start", { sessionName: "large" });
    // ~1.5 MB more, appended behind the runner's back: its cached transcript is behind, so its next
    // begin gets a truncated reply and pages back
    await fill(new BusClient(nc), key, 25, 60 * KB);
    system.fake.reset();
    system.fake.enqueue({ kind: "text", text: "still here" });
    const reply = await cli.send("what did I send?", { sessionName: "large" });
    assert.equal(reply.text, "still here");
    const sent = system.fake.requests[0]!.body.messages.map(messageText);
    const bigs = sent.filter((t) => /^#\d+ /.test(t)).map((t) => Number(/^#(\d+)/.exec(t)![1]));
    assert.deepEqual(bigs, Array.from({ length: 25 }, (_, i) => i), "every large message, in order");
    assert.ok(sent.some((t) => t.includes("start")) && sent.at(-1)!.includes("what did I send?"));
  });
});
