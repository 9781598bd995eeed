/**
 * The Ollama provider through the real `ollama` client against a fake Ollama server speaking
 * the real NDJSON wire format, then end to end over the bus (real nats-server, the sessions and
 * agent-runner actors as child processes, LURKBOT_MODEL=ollama/llama-test). A live test runs
 * only with LURKBOT_LIVE_OLLAMA=1 (a local Ollama; model from LURKBOT_LIVE_OLLAMA_MODEL).
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  outboundMessageSchema, STREAMS, subjects, type AssistantMessage, type LlmMessage, type ToolDefinition,
} from "../shared/contract/index.js";
import { parseConfig } from "../shared/runtime/config.js";
import { OllamaProvider } from "../services/agent-runner/providers/ollama.js";
import { ProviderRegistry } from "../services/agent-runner/providers/registry.js";
import type { ProviderStreamEvent } from "../services/agent-runner/providers/types.js";
import { FakeOllamaServer } from "./fakes/ollama-server.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { freePort, TestNats } from "./harness/nats.js";
import { startToolResponder, textResult } from "./harness/tool-responder.js";

const READ_TOOL: ToolDefinition = {
  name: "read", description: "Read a text file from the workspace.", actor: "tools", sideEffects: false, parallelSafe: true, groups: ["fs"], needsApproval: false,
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};
const user = (text: string): LlmMessage => ({ role: "user", content: [{ type: "text", text }] });

async function collect(provider: OllamaProvider, messages: LlmMessage[], extra: { signal?: AbortSignal; maxTokens?: number; model?: string } = {}) {
  const events: ProviderStreamEvent[] = [];
  for await (const ev of provider.stream({ model: extra.model ?? "llama-test", system: "You are LurkBot.", messages, tools: [READ_TOOL], signal: extra.signal ?? new AbortController().signal, ...(extra.maxTokens ? { maxTokens: extra.maxTokens } : {}) })) events.push(ev);
  const last = events[events.length - 1]!;
  const text = (type: string) => events.flatMap((e) => (e.type === type && "text" in e ? [e.text] : [])).join("");
  return { events, last, text: text("text_delta"), thinking: text("thinking_delta"), message: last.type === "done" ? last.message : undefined };
}

function failure(last: ProviderStreamEvent) {
  assert.equal(last.type, "error", `expected an error, got ${JSON.stringify(last)}`);
  return last.type === "error" ? last.error : assert.fail();
}

describe("ollama provider", () => {
  let fake: FakeOllamaServer;
  let provider: OllamaProvider;
  before(async () => {
    fake = await FakeOllamaServer.start({ models: ["llama-test"] });
    provider = new OllamaProvider({ host: fake.url, timeoutMs: 5_000 });
  });
  after(() => fake.close());
  beforeEach(() => fake.reset());

  it("streams text, maps usage and done_reason, and sends the system prompt, tools and options", async () => {
    fake.enqueue({ kind: "text", text: "Hello from llama.", chunks: 4, promptEvalCount: 12, evalCount: 5 });
    const r = await collect(provider, [user("hi")], { maxTokens: 64 });
    assert.equal(r.text, "Hello from llama.");
    assert.ok(r.events.filter((e) => e.type === "text_delta").length >= 3, "several deltas");
    assert.deepEqual(r.message?.content, [{ type: "text", text: "Hello from llama." }]);
    assert.equal(r.message?.stopReason, "end_turn");
    assert.deepEqual([r.message?.provider, r.message?.model], ["ollama", "llama-test"]);
    assert.deepEqual(r.message?.usage, { input: 12, output: 5, cacheRead: 0, cacheWrite: 0, total: 17 });
    assert.ok(r.events.some((e) => e.type === "usage"));
    const sent = fake.requests[0]!.body;
    assert.equal(sent.stream, true);
    assert.deepEqual(sent.messages.map((m) => [m.role, m.content]), [["system", "You are LurkBot."], ["user", "hi"]]);
    assert.equal(sent.tools?.[0]?.function.name, "read");
    assert.deepEqual(sent.options, { num_predict: 64 });
    fake.enqueue({ kind: "text", text: "cut", doneReason: "length" });
    assert.equal((await collect(provider, [user("more")])).message?.stopReason, "max_tokens");
  });

  it("streams thinking as thinking deltas and keeps it in the message", async () => {
    fake.enqueue({ kind: "text", thinking: "Let me think about it.", text: "42" });
    const r = await collect(provider, [user("answer?")]);
    assert.equal(r.thinking, "Let me think about it.");
    assert.deepEqual(r.message?.content, [{ type: "thinking", text: "Let me think about it." }, { type: "text", text: "42" }]);
    const kinds = r.events.map((e) => e.type);
    assert.ok(kinds.indexOf("thinking_delta") < kinds.indexOf("text_delta"));
  });

  it("generates unique tool call ids and sends results back as tool messages", async () => {
    fake.enqueue({ kind: "tool_calls", text: "Reading.", calls: [{ name: "read", arguments: { path: "a.md" } }, { name: "read", arguments: { path: "b.md" } }] });
    const first = await collect(provider, [user("read two files")]);
    const calls = first.events.flatMap((e) => (e.type === "tool_call" ? [e.call] : []));
    assert.deepEqual(calls.map((c) => [c.name, c.args]), [["read", { path: "a.md" }], ["read", { path: "b.md" }]]);
    assert.equal(first.message?.stopReason, "tool_use");
    const history: LlmMessage[] = [user("read two files"), first.message as AssistantMessage,
      ...calls.map((c) => ({ role: "tool_result" as const, toolCallId: c.id, toolName: c.name, isError: false, content: [{ type: "text" as const, text: `contents of ${String(c.args.path)}` }] }))];
    fake.enqueue({ kind: "tool_calls", calls: [{ name: "read", arguments: { path: "a.md" } }] });
    const second = await collect(provider, history);
    const ids = [...calls, ...second.events.flatMap((e) => (e.type === "tool_call" ? [e.call] : []))].map((c) => c.id);
    assert.equal(ids.length, 3);
    assert.equal(new Set(ids).size, 3, `unique across calls and turns: ${ids.join(", ")}`);
    assert.ok(ids.every((id) => /^call_[A-Za-z0-9_-]{16}$/.test(id)));
    const sent = fake.requests[1]!.body.messages;
    assert.deepEqual(sent[2], { role: "assistant", content: "Reading.", tool_calls: [{ function: { name: "read", arguments: { path: "a.md" } } }, { function: { name: "read", arguments: { path: "b.md" } } }] });
    assert.deepEqual(sent.slice(3), [{ role: "tool", content: "contents of a.md", tool_name: "read" }, { role: "tool", content: "contents of b.md", tool_name: "read" }]);
  });

  it("validates tool arguments and sends images as base64", async () => {
    fake.enqueue({ kind: "tool_calls", calls: [{ name: "read", arguments: '{"path":"s.md"}' }, { name: "read", arguments: [1, 2] }, { name: "", arguments: {} }] });
    const r = await collect(provider, [{ role: "user", content: [{ type: "text", text: "look" }, { type: "image", mime: "image/png", dataBase64: "iVBORw0KGgo=" }] }]);
    const calls = r.events.flatMap((e) => (e.type === "tool_call" ? [e.call] : []));
    assert.deepEqual(calls[0]?.args, { path: "s.md" }, "a JSON string is parsed");
    assert.match(calls[1]?.argsError ?? "", /not an object/);
    assert.equal(calls[2]?.name, "missing_tool_name");
    assert.deepEqual(fake.requests[0]!.body.messages[1], { role: "user", content: "look", images: ["iVBORw0KGgo="] });
  });

  it("classifies errors: unreachable host, unknown model, 5xx, overflow, mid-stream, abort, idle timeout", async () => {
    const port = await freePort();
    const down = failure((await collect(new OllamaProvider({ host: `http://127.0.0.1:${port}`, timeoutMs: 5_000 }), [user("hi")])).last);
    assert.deepEqual([down.code, down.retryable], ["PROVIDER_ERROR", true]);
    assert.match(down.message, new RegExp(`not reachable at http://127\\.0\\.0\\.1:${port}`));
    const missing = failure((await collect(provider, [user("hi")], { model: "nope:7b" })).last);
    assert.deepEqual([missing.code, missing.retryable], ["PROVIDER_ERROR", false]);
    assert.match(missing.message, /ollama pull nope:7b/);
    fake.enqueue({ kind: "error", status: 500 });
    const e500 = failure((await collect(provider, [user("hi")])).last);
    assert.deepEqual([e500.code, e500.retryable], ["PROVIDER_ERROR", true]);
    fake.enqueue({ kind: "error", status: 400, message: "the input length exceeds the context length" });
    assert.equal(failure((await collect(provider, [user("hi")])).last).code, "PROVIDER_CONTEXT_OVERFLOW");
    fake.enqueue({ kind: "stream_error", text: "partial", message: "an error was encountered while running the model" });
    const mid = await collect(provider, [user("hi")]);
    assert.equal(mid.text, "partial");
    assert.deepEqual([failure(mid.last).code, failure(mid.last).retryable], ["PROVIDER_ERROR", true]);
    fake.enqueue({ kind: "cut", text: "half" });
    const cut = failure((await collect(provider, [user("hi")])).last);
    assert.deepEqual([cut.code, cut.retryable], ["PROVIDER_ERROR", true], cut.message);
    fake.enqueue({ kind: "error", status: 503, message: "server busy, please try again.  maximum pending requests exceeded" });
    assert.equal(failure((await collect(provider, [user("hi")])).last).code, "PROVIDER_OVERLOADED");
    fake.enqueue({ kind: "hang", text: "wait" });
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 100);
    assert.equal(failure((await collect(provider, [user("hi")], { signal: ctl.signal })).last).code, "ABORTED");
    fake.enqueue({ kind: "hang", text: "wait" });
    assert.equal(failure((await collect(new OllamaProvider({ host: fake.url, timeoutMs: 150 }), [user("hi")])).last).code, "PROVIDER_TIMEOUT");
  });

  it("resolves ollama/<model> through the registry with OLLAMA_HOST", () => {
    const registry = new ProviderRegistry(parseConfig({}, { OLLAMA_HOST: fake.url, LURKBOT_MODEL: "ollama/llama-test" }, "/tmp/lurkbot-ollama-test"));
    const resolved = registry.resolve(registry.pick(undefined, undefined));
    assert.deepEqual([resolved.providerName, resolved.model, resolved.ref], ["ollama", "llama-test", "ollama/llama-test"]);
    assert.equal((resolved.provider as OllamaProvider).host, fake.url);
    assert.equal((registry.resolve("ollama/qwen3:8b").provider as OllamaProvider).host, fake.url);
  });
});

describe("ollama end to end over the bus", () => {
  const S = subjects();
  let nats: TestNats;
  let fake: FakeOllamaServer;
  let sessions: ActorProcess | undefined;
  let runner: ActorProcess | undefined;
  let router: NatsConnection;
  let admin: NatsConnection;
  let toolsNc: NatsConnection;
  let jsm: JetStreamManager;

  before(async () => {
    nats = await TestNats.start();
    fake = await FakeOllamaServer.start({ models: ["llama-test"] });
    toolsNc = await startToolResponder(nats, [{ definition: READ_TOOL, run: (req) => textResult(req, `contents of ${String(req.args.path)}`, 0) }]);
    const env = { LURKBOT_MODEL: "ollama/llama-test", OLLAMA_HOST: fake.url, LURKBOT_LOG_LEVEL: "info" };
    const started = await Promise.allSettled([startActorProcess("sessions", nats).then((p) => (sessions = p)), startActorProcess("agent-runner", nats, env).then((p) => (runner = p))]);
    const failed = started.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    router = await nats.connect("router");
    admin = await nats.connect("admin");
    jsm = await jetstreamManager(admin);
  });
  after(async () => {
    await Promise.all([router?.close(), admin?.close(), toolsNc?.close()]);
    await Promise.all([runner?.stop(), sessions?.stop()]);
    await fake?.close();
    await nats?.stop();
  });

  async function run(text: string, n: number) {
    const conversation = `ollama-conv-${n}`;
    const runId = `run-ollama-${n}-${Date.now().toString(36)}`;
    const req = {
      type: "lurk.run.request.v1", id: `req-ollama-${n}-${Date.now()}`, ts: Date.now(), runId, sessionKey: `agent:main:cli:dm:ollama${n}`, agentId: "main", sessionType: "dm",
      trigger: "message", inputs: [{ kind: "user", text, attachments: [] }], origin: { channel: "cli", conversation, messageIds: [`msg-ollama-${n}`] }, deliver: true, options: {},
    };
    await jetstream(router).publish(S.runRequest("main"), JSON.stringify(req), { msgID: runId });
    const subject = S.outbound("cli", conversation);
    return waitFor(async () => {
      const info = await jsm.streams.info(STREAMS.outbound, { subjects_filter: subject });
      if (!info.state.subjects?.[subject]) return undefined;
      return outboundMessageSchema.parse((await jsm.streams.getMessage(STREAMS.outbound, { last_by_subj: subject }))!.json());
    }, 20_000, `the reply in OUTBOUND for ${runId}`);
  }

  it("answers a run with ollama/llama-test and delivers the reply to OUTBOUND", async () => {
    fake.enqueue({ kind: "text", text: "Hi, I run on Ollama.", thinking: "greet" });
    const out = await run("hello ollama", 1);
    assert.equal(out.kind, "reply");
    assert.equal(out.text, "Hi, I run on Ollama.");
    assert.equal(fake.requests[0]!.body.model, "llama-test");
    assert.equal(fake.requests[0]!.body.messages[0]!.role, "system");
  });

  it("round-trips a tool call with a generated id over the bus", async () => {
    fake.reset();
    const out = await run("please read notes/today.md", 2);
    assert.equal(out.text, "tool said: contents of notes/today.md");
    const second = fake.requests[1]!.body.messages;
    assert.equal(second[second.length - 2]!.tool_calls?.[0]?.function.name, "read");
    assert.deepEqual(second[second.length - 1], { role: "tool", content: "contents of notes/today.md", tool_name: "read" });
    assert.ok(!runner!.output().includes("PROVIDER_ERROR"), "no provider error logged");
  });
});

describe("ollama live", { skip: process.env.LURKBOT_LIVE_OLLAMA !== "1" && "set LURKBOT_LIVE_OLLAMA=1 with a local Ollama" }, () => {
  it("streams an answer from a local Ollama", async () => {
    const model = process.env.LURKBOT_LIVE_OLLAMA_MODEL ?? "llama3.2";
    const provider = new OllamaProvider({ host: process.env.OLLAMA_HOST ?? "http://127.0.0.1:11434", timeoutMs: 120_000 });
    const events: ProviderStreamEvent[] = [];
    for await (const ev of provider.stream({ model, system: "Answer in one word.", messages: [user("Say hello.")], tools: [], signal: new AbortController().signal })) events.push(ev);
    const last = events[events.length - 1]!;
    assert.equal(last.type, "done", JSON.stringify(last));
    assert.ok(last.type === "done" && last.message.usage!.output > 0);
  });
});
