/**
 * The Anthropic provider through the real `@anthropic-ai/sdk` against a fake Messages API
 * server speaking the real SSE wire format; then one run end to end over the bus (real
 * nats-server, sessions + agent-runner child processes with LURKBOT_MODEL=anthropic/...).
 * A live call only with ANTHROPIC_API_KEY and LURKBOT_LIVE_TESTS=1.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  outboundMessageSchema, STREAMS, subjects, type LlmMessage, type RunRequest, type ToolDefinition,
} from "../shared/contract/index.js";
import { AnthropicProvider } from "../services/agent-runner/providers/anthropic.js";
import type { ProviderRequest, ProviderStreamEvent } from "../services/agent-runner/providers/types.js";
import { apiKeyOf, blocksOf, FakeAnthropicServer, textOf, type FakeAnthropicReply } from "./fakes/anthropic-server.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { startToolResponder, textResult } from "./harness/tool-responder.js";

const KEY = "sk-ant-test-0123456789abcdef";
const READ: ToolDefinition = {
  name: "read", description: "Read a file.", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  actor: "tools", sideEffects: false, parallelSafe: true, groups: [], needsApproval: false,
};
const user = (text: string): LlmMessage => ({ role: "user", content: [{ type: "text", text }] });

async function collect(provider: AnthropicProvider, req: Partial<ProviderRequest>): Promise<ProviderStreamEvent[]> {
  const events: ProviderStreamEvent[] = [];
  const full: ProviderRequest = { model: "claude-test", system: "You are LurkBot.", messages: [user("hi")], tools: [], signal: new AbortController().signal, ...req };
  for await (const ev of provider.stream(full)) events.push(ev);
  return events;
}
const final = (events: ProviderStreamEvent[]) => events[events.length - 1]!;
const doneMessage = (events: ProviderStreamEvent[]) => {
  const last = final(events);
  assert.equal(last.type, "done", JSON.stringify(last));
  return (last as Extract<ProviderStreamEvent, { type: "done" }>).message;
};

describe("anthropic provider", () => {
  let fake: FakeAnthropicServer;
  let provider: AnthropicProvider;
  before(async () => {
    fake = await FakeAnthropicServer.start({ apiKey: KEY });
    provider = new AnthropicProvider({ apiKey: KEY, baseUrl: fake.baseUrl, timeoutMs: 5000 });
  });
  after(async () => fake?.close());
  beforeEach(() => fake.reset());

  it("streams text deltas, sends the system prompt apart with cache marks, maps usage and stop reason", async () => {
    fake.enqueue({ kind: "text", text: "Hello from Claude.", chunks: 4, usage: { input: 12, output: 5, cacheRead: 100, cacheWrite: 30 } });
    const events = await collect(provider, { tools: [READ, { ...READ, name: "write" }], maxTokens: 777 });
    const deltas = events.flatMap((e) => (e.type === "text_delta" ? [e.text] : []));
    assert.ok(deltas.length >= 3, `several deltas (${deltas.length})`);
    assert.equal(deltas.join(""), "Hello from Claude.");
    const msg = doneMessage(events);
    assert.deepEqual(msg.content, [{ type: "text", text: "Hello from Claude." }]);
    assert.equal(msg.stopReason, "end_turn");
    assert.equal(msg.provider, "anthropic");
    assert.deepEqual(msg.usage, { input: 12, output: 5, cacheRead: 100, cacheWrite: 30, total: 147 });
    assert.ok(events.some((e) => e.type === "usage"));
    const { body, headers } = fake.requests[0]!;
    assert.equal(apiKeyOf(headers), KEY);
    assert.equal(body.stream, true);
    assert.equal(body.max_tokens, 777);
    assert.deepEqual(body.system, [{ type: "text", text: "You are LurkBot.", cache_control: { type: "ephemeral" } }]);
    assert.ok(body.messages.every((m) => m.role !== "system"));
    assert.deepEqual(body.tools?.map((t) => [t.name, t.cache_control?.type]), [["read", undefined], ["write", "ephemeral"]]);
    assert.deepEqual(body.tools?.[0]?.input_schema, READ.parameters);
    assert.deepEqual(body.messages, [{ role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }] }]);
  });

  it("defaults max_tokens and maps max_tokens / stop_sequence stops", async () => {
    fake.enqueue({ kind: "text", text: "cut", stopReason: "max_tokens" }, { kind: "text", text: "seq", stopReason: "stop_sequence" });
    assert.equal(doneMessage(await collect(provider, {})).stopReason, "max_tokens");
    assert.equal(doneMessage(await collect(provider, {})).stopReason, "stop_sequence");
    assert.equal(fake.requests[0]!.body.max_tokens, 4096);
  });

  it("assembles a tool call from fragmented input JSON and sends results back grouped, with is_error", async () => {
    fake.enqueue({ kind: "tool_use", text: "Let me look.", calls: [
      { id: "toolu_1", name: "read", input: { path: "notes/today.md", opts: { lines: [1, 2] } }, fragments: 9 },
      { id: "toolu_2", name: "read", input: { path: "missing.md" }, fragments: 4 },
    ] });
    const events = await collect(provider, { tools: [READ] });
    const calls = events.flatMap((e) => (e.type === "tool_call" ? [e.call] : []));
    assert.deepEqual(calls, [
      { type: "tool_call", id: "toolu_1", name: "read", args: { path: "notes/today.md", opts: { lines: [1, 2] } } },
      { type: "tool_call", id: "toolu_2", name: "read", args: { path: "missing.md" } },
    ]);
    const assistant = doneMessage(events);
    assert.equal(assistant.stopReason, "tool_use");
    const history: LlmMessage[] = [user("hi"), assistant,
      { role: "tool_result", toolCallId: "toolu_1", toolName: "read", isError: false, content: [{ type: "text", text: "contents" }] },
      { role: "tool_result", toolCallId: "toolu_2", toolName: "read", isError: true, content: [{ type: "text", text: "ENOENT" }] }];
    doneMessage(await collect(provider, { tools: [READ], messages: history }));
    const sent = fake.requests[1]!.body.messages;
    assert.deepEqual(sent.map((m) => m.role), ["user", "assistant", "user"], "both results in one user message");
    assert.deepEqual(blocksOf(sent[1]), [
      { type: "text", text: "Let me look." },
      { type: "tool_use", id: "toolu_1", name: "read", input: { path: "notes/today.md", opts: { lines: [1, 2] } } },
      { type: "tool_use", id: "toolu_2", name: "read", input: { path: "missing.md" } },
    ]);
    assert.deepEqual(blocksOf(sent[2]), [
      { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "contents" }] },
      { type: "tool_result", tool_use_id: "toolu_2", content: [{ type: "text", text: "ENOENT" }], is_error: true, cache_control: { type: "ephemeral" } },
    ]);
  });

  it("keeps thinking with its signature and redacted thinking, and sends them back verbatim", async () => {
    fake.enqueue({ kind: "text", text: "42", thinking: { text: "Let me think about it.", signature: "sig-abc==" }, redacted: "REDACTED-DATA" });
    const events = await collect(provider, {});
    assert.equal(events.flatMap((e) => (e.type === "thinking_delta" ? [e.text] : [])).join(""), "Let me think about it.");
    const msg = doneMessage(events);
    assert.deepEqual(msg.content, [
      { type: "thinking", text: "Let me think about it.", signature: "sig-abc==" },
      { type: "thinking", text: "", signature: "REDACTED-DATA", redacted: true },
      { type: "text", text: "42" },
    ]);
    const foreign = { ...msg, provider: "openai", content: [{ type: "thinking" as const, text: "unsigned" }, { type: "text" as const, text: "x" }] };
    doneMessage(await collect(provider, { messages: [user("q"), msg, user("and?"), foreign, user("ok")] }));
    const sent = fake.requests[1]!.body.messages;
    assert.deepEqual(blocksOf(sent[1]), [
      { type: "thinking", thinking: "Let me think about it.", signature: "sig-abc==" },
      { type: "redacted_thinking", data: "REDACTED-DATA" },
      { type: "text", text: "42" },
    ]);
    assert.deepEqual(blocksOf(sent[3]), [{ type: "text", text: "x" }], "unsigned thinking of another provider is dropped");
  });

  it("sends images as base64 image blocks", async () => {
    const messages: LlmMessage[] = [{ role: "user", content: [{ type: "text", text: "what is this?" }, { type: "image", mime: "image/png", dataBase64: "iVBORw0KGgo=" }] }];
    doneMessage(await collect(provider, { messages }));
    assert.deepEqual(blocksOf(fake.requests[0]!.body.messages[0])[1], { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" }, cache_control: { type: "ephemeral" } });
  });

  it("sends a PDF as a base64 document block titled with its name; the cache mark goes on it as the last block", async () => {
    const data = Buffer.from("%PDF-1.4\n%fake\n").toString("base64");
    const ref = "b".repeat(64);
    const messages: LlmMessage[] = [{ role: "user", content: [{ type: "text", text: "what does it say?" }, { type: "document", mime: "application/pdf", ref, name: "scan.pdf", dataBase64: data }] }];
    doneMessage(await collect(provider, { messages }));
    assert.deepEqual(blocksOf(fake.requests[0]!.body.messages[0])[1], { type: "document", source: { type: "base64", media_type: "application/pdf", data }, title: "scan.pdf", cache_control: { type: "ephemeral" } });
  });

  const errorCases: Array<[string, FakeAnthropicReply, string, boolean]> = [
    ["429", { kind: "error", status: 429, headers: { "retry-after": "2" } }, "PROVIDER_RATE_LIMIT", true],
    ["529 overloaded", { kind: "error", status: 529 }, "PROVIDER_OVERLOADED", true],
    ["500", { kind: "error", status: 500 }, "PROVIDER_ERROR", true],
    ["401", { kind: "error", status: 401 }, "PROVIDER_AUTH", false],
    ["400 billing", { kind: "error", status: 400, type: "billing_error", message: "Your credit balance is too low to access the Anthropic API." }, "PROVIDER_BILLING", false],
    ["402", { kind: "error", status: 402 }, "PROVIDER_BILLING", false],
    ["400 prompt too long", { kind: "error", status: 400, message: "prompt is too long: 210000 tokens > 200000 maximum" }, "PROVIDER_CONTEXT_OVERFLOW", false],
    ["400 other", { kind: "error", status: 400, message: "messages: roles must alternate" }, "PROVIDER_ERROR", false],
    ["overloaded mid-stream", { kind: "stream_error", type: "overloaded_error", text: "partial" }, "PROVIDER_OVERLOADED", true],
    ["api_error mid-stream", { kind: "stream_error", type: "api_error" }, "PROVIDER_ERROR", true],
  ];
  for (const [name, reply, code, retryable] of errorCases) {
    it(`classifies ${name} as ${code} (retryable: ${retryable})`, async () => {
      fake.enqueue(reply);
      const last = final(await collect(provider, {}));
      assert.equal(last.type, "error");
      const err = (last as Extract<ProviderStreamEvent, { type: "error" }>).error;
      assert.deepEqual([err.code, err.retryable], [code, retryable], err.message);
      assert.ok(!err.message.includes(KEY));
      if (name === "429") assert.equal((err.details as { retryAfterMs?: number }).retryAfterMs, 2000);
    });
  }

  it("reports a timeout as PROVIDER_TIMEOUT and an abort as ABORTED", async () => {
    const quick = new AnthropicProvider({ apiKey: KEY, baseUrl: fake.baseUrl, timeoutMs: 200 });
    fake.enqueue({ kind: "hang" });
    const timedOut = final(await collect(quick, {}));
    assert.deepEqual(timedOut.type === "error" && [timedOut.error.code, timedOut.error.retryable], ["PROVIDER_TIMEOUT", true]);
    fake.enqueue({ kind: "hang", started: true });
    const ctrl = new AbortController();
    setTimeout(() => ctrl.abort(), 100);
    const aborted = final(await collect(provider, { signal: ctrl.signal }));
    assert.equal(aborted.type === "error" && aborted.error.code, "ABORTED");
  });

  it("live: answers through the real API", { skip: !(process.env.ANTHROPIC_API_KEY && process.env.LURKBOT_LIVE_TESTS === "1") }, async () => {
    const live = new AnthropicProvider({ apiKey: process.env.ANTHROPIC_API_KEY!, ...(process.env.ANTHROPIC_BASE_URL ? { baseUrl: process.env.ANTHROPIC_BASE_URL } : {}), timeoutMs: 60_000 });
    const model = (process.env.LURKBOT_LIVE_ANTHROPIC_MODEL ?? "claude-haiku-4-5");
    const msg = doneMessage(await collect(live, { model, messages: [user("Reply with the single word: pong")], maxTokens: 50 }));
    assert.match(msg.content.map((b) => (b.type === "text" ? b.text : "")).join(""), /pong/i);
    assert.ok(msg.usage!.input > 0 && msg.usage!.output > 0);
  });
});

describe("anthropic provider end to end over the bus", () => {
  const S = subjects();
  let nats: TestNats;
  let fake: FakeAnthropicServer;
  let sessions: ActorProcess | undefined;
  let runner: ActorProcess | undefined;
  let router: NatsConnection;
  let admin: NatsConnection;
  let tools: NatsConnection;
  before(async () => {
    nats = await TestNats.start();
    fake = await FakeAnthropicServer.start({ apiKey: KEY });
    tools = await startToolResponder(nats, [{ definition: READ, run: (req) => textResult(req, `contents of ${String(req.args.path)}`, 1) }]);
    const [s, r] = await Promise.allSettled([
      startActorProcess("sessions", nats),
      startActorProcess("agent-runner", nats, { LURKBOT_MODEL: "anthropic/claude-test", ANTHROPIC_BASE_URL: fake.baseUrl, ANTHROPIC_API_KEY: KEY, LURKBOT_LOG_LEVEL: "info" }),
    ]);
    sessions = s.status === "fulfilled" ? s.value : undefined;
    runner = r.status === "fulfilled" ? r.value : undefined;
    if (!sessions || !runner) throw new Error("an actor did not start");
    router = await nats.connect("router");
    admin = await nats.connect("admin");
  });
  after(async () => {
    await Promise.all([router?.close(), admin?.close(), tools?.close()]);
    await Promise.all([runner?.stop(), sessions?.stop()]);
    await fake?.close();
    await nats?.stop();
  });

  it("runs thinking + a tool call through the agent-runner and delivers the reply to OUTBOUND", async () => {
    fake.enqueue({ kind: "tool_use", thinking: { text: "I should read it.", signature: "sig-e2e" }, calls: [{ id: "toolu_e2e", name: "read", input: { path: "notes.md" }, fragments: 5 }] });
    const runId = `run-anthropic-${Date.now().toString(36)}`;
    const req = {
      type: "lurk.run.request.v1", id: `req-${runId}`, ts: Date.now(), runId, sessionKey: "agent:main:cli:dm:anthropic", agentId: "main", sessionType: "dm",
      trigger: "message", inputs: [{ kind: "user", text: "what is in notes.md?", attachments: [] }],
      origin: { channel: "cli", conversation: "conv-anthropic", messageIds: ["msg-a1"] }, deliver: true, options: {},
    } as RunRequest;
    await jetstream(router).publish(S.runRequest("main"), JSON.stringify(req), { msgID: runId });
    const jsm = await jetstreamManager(admin);
    const subject = S.outbound("cli", "conv-anthropic");
    const out = await waitFor(async () => {
      const info = await jsm.streams.info(STREAMS.outbound, { subjects_filter: subject });
      if (!info.state.subjects?.[subject]) return undefined;
      return outboundMessageSchema.parse((await jsm.streams.getMessage(STREAMS.outbound, { last_by_subj: subject }))!.json());
    }, 20_000, "the reply in OUTBOUND");
    assert.equal(out.text, "tool said: contents of notes.md");
    assert.equal(fake.requests.length, 2);
    const [first, second] = fake.requests.map((r) => r.body);
    assert.equal(first!.model, "claude-test");
    assert.match(textOf(first!.system), /LurkBot/);
    assert.deepEqual(first!.tools?.map((t) => t.name), ["read"]);
    const sent = second!.messages;
    assert.deepEqual(sent.map((m) => m.role), ["user", "assistant", "user"]);
    assert.deepEqual(blocksOf(sent[1]).map((b) => b.type), ["thinking", "tool_use"]);
    assert.equal(blocksOf(sent[1])[0]!.signature, "sig-e2e");
    const result = blocksOf(sent[2])[0]!;
    assert.deepEqual([result.type, result.tool_use_id, textOf(result.content)], ["tool_result", "toolu_e2e", "contents of notes.md"]);
    assert.ok(!runner!.output().includes(KEY), "the API key is never logged");
  });
});
