/**
 * /verbose and /reasoning end to end: the whole system (router, sessions, tools, approvals,
 * agent-runner as processes on a real nats-server) with the fake Anthropic server emitting
 * thinking and a tool call. With the settings on, the run's notes (tool call lines, a tool
 * result line at "high", the thinking of each turn) reach the origin's outbound stream before
 * the reply, once each, secrets redacted; with them off nothing but the reply goes out.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Msg } from "@nats-io/transport-node";
import { outboundMessageSchema, safeParseJson, subjects, type OutboundMessage } from "../shared/contract/index.js";
import { argSummary } from "../services/agent-runner/run-notes.js";
import { FakeAnthropicServer } from "./fakes/anthropic-server.js";
import { waitFor } from "./harness/actors.js";
import { CliClient, TestSystem } from "./harness/system.js";

const s = subjects();
const KEY = "sk-ant-test-0123456789";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("run notes: /verbose and /reasoning through the router (real agent-runner, fake Anthropic)", () => {
  let fake: FakeAnthropicServer;
  let system: TestSystem;
  let client: CliClient;
  const seen: OutboundMessage[] = [];

  before(async () => {
    fake = await FakeAnthropicServer.start({ apiKey: KEY });
    system = await TestSystem.start({
      env: { LURKBOT_MODEL: "anthropic/claude-test", ANTHROPIC_BASE_URL: fake.baseUrl, ANTHROPIC_API_KEY: KEY },
      files: { "notes.md": "meeting at 10\nAPI_KEY=abcdef0123456789xyz\n" },
    });
    client = await CliClient.connect(system.nats, "notes");
    client.nc.subscribe(s.outbound("cli", "notes"), { callback: (_e: Error | null, m: Msg) => void seen.push(outboundMessageSchema.parse(safeParseJson(m.data))) });
    await client.nc.flush();
  });
  after(async () => {
    await client?.close();
    await system?.stop();
    await fake?.close();
  });

  /** Scripts: turn 1 thinks and reads notes.md, turn 2 thinks and answers. */
  const script = (id: string) => fake.enqueue(
    { kind: "tool_use", thinking: { text: "The user wants the notes. I will read the file.", signature: "sig-1" }, calls: [{ id: `toolu_${id}`, name: "read", input: { path: "notes.md" } }] },
    { kind: "text", thinking: { text: "The file says there is a meeting.", signature: "sig-2" }, text: "You have a meeting at 10." },
  );
  const runOutput = async (runId: string) => {
    await waitFor(() => seen.find((m) => m.runId === runId && m.kind === "reply"), 30_000, "reply");
    await sleep(300); // nothing may follow the reply
    return seen.filter((m) => m.runId === runId);
  };

  it("with the settings off only the reply goes out", async () => {
    script("off");
    const reply = await client.send("what is in my notes?", { sessionName: "quiet", timeoutMs: 30_000 });
    assert.equal(reply.text, "You have a meeting at 10.");
    const out = await runOutput(reply.runId);
    assert.deepEqual(out.map((m) => m.kind), ["reply"]);
  });

  it("/verbose on and /reasoning on: reasoning, the tool call and the next reasoning arrive before the reply, once each", async () => {
    assert.match((await client.send("/verbose on", { sessionName: "loud" })).text, /verbose: low/);
    assert.match((await client.send("/reasoning on", { sessionName: "loud" })).text, /reasoning: on/);
    script("on");
    const { runId } = await client.publish("what is in my notes?", { sessionName: "loud" });
    const out = await runOutput(runId);
    assert.deepEqual(out.map((m) => m.note ?? m.kind), ["reasoning", "tool", "reasoning", "reply"]);
    const [think1, tool, think2, reply] = out as [OutboundMessage, OutboundMessage, OutboundMessage, OutboundMessage];
    assert.equal(think1.text, "💭 Reasoning:\nThe user wants the notes. I will read the file.");
    assert.equal(tool.text, "🔧 read: notes.md");
    assert.equal(think2.text, "💭 Reasoning:\nThe file says there is a meeting.");
    assert.equal(reply.text, "You have a meeting at 10.");
    for (const note of [think1, tool, think2]) {
      assert.equal(note.kind, "notice");
      assert.deepEqual(note.replyTo, [], "a note is never taken for the answer");
      assert.equal(note.sessionKey, "agent:main:cli:dm:loud");
    }
    assert.equal(new Set(out.map((m) => m.id)).size, out.length, "one delivery id per note");
  });

  it("/verbose high adds a one-line result with secrets redacted; /verbose off stops the notes", async () => {
    await client.send("/verbose high", { sessionName: "high" });
    script("high");
    const { runId } = await client.publish("what is in my notes?", { sessionName: "high" });
    const out = await runOutput(runId);
    assert.deepEqual(out.map((m) => m.note ?? m.kind), ["tool", "tool", "reply"], "no reasoning notes: /reasoning is off here");
    assert.equal(out[0]!.text, "🔧 read: notes.md");
    assert.match(out[1]!.text, /^↳ read ok: .*meeting at 10/);
    assert.match(out[1]!.text, /API_KEY=\[redacted\]/);
    assert.doesNotMatch(out[1]!.text, /abcdef0123456789xyz/);
    assert.doesNotMatch(out[1]!.text, /\n/);
    await client.send("/verbose off", { sessionName: "high" });
    script("high-off");
    const again = await client.publish("and now?", { sessionName: "high" });
    assert.deepEqual((await runOutput(again.runId)).map((m) => m.kind), ["reply"]);
  });

  it("argument summaries: the main argument on one line, secret keys and token shapes redacted", () => {
    assert.equal(argSummary({ command: "curl -H 'Authorization: Bearer abcdefghijkl12345' https://x" }), ": curl -H 'Authorization: Bearer [redacted]' https://x");
    assert.equal(argSummary({ path: "a.txt", apiKey: "sk-live-1234567890" }), ": a.txt");
    assert.equal(argSummary({ token: "zzzzzzzzzzzz", limit: 3 }), ": token=[redacted] limit=3");
    assert.equal(argSummary({ command: "export OPENAI_API_KEY=sk-abcdefghijklmnop && ls\nrm x" }), ": export OPENAI_API_KEY=[redacted] && ls rm x");
    assert.equal(argSummary({}), "");
    assert.ok(argSummary({ text: "x".repeat(500) }).length <= 122);
  });
});
