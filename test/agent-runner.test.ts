/**
 * The agent-runner actor end to end, over a real nats-server with the real sessions actor and
 * the agent-runner as child processes, a fake OpenAI server speaking the real wire format, and
 * a test tool responder (the `tools` user, services framework) serving `lurk.tools.list` and
 * `lurk.tools.call.read`. Run requests are published to the RUNS stream as the router would.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { Svcm } from "@nats-io/services";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  emptyUsage, outboundMessageSchema, recordIds, runEventSchema, STREAMS, subjects, type OutboundMessage, type RunEvent, type RunRequest, type ToolDefinition,
} from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { createLogger } from "../shared/runtime/logger.js";
import { runEndFromRecords } from "../shared/runtime/run-ends.js";
import { RunEvents } from "../services/agent-runner/events.js";
import { uniqueToolCallIds } from "../services/agent-runner/loop.js";
import { runTurnTools } from "../services/agent-runner/turn-tools.js";
import { classifyProviderError } from "../services/agent-runner/providers/errors.js";
import { parseToolArgs } from "../services/agent-runner/providers/json-repair.js";
import { sanitizeMessages } from "../services/agent-runner/transcript.js";
import { FakeOpenAIServer, messageText, type ChatRequestBody } from "./fakes/openai-server.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { startToolResponder, textResult } from "./harness/tool-responder.js";

const S = subjects();
const READ_TOOL: ToolDefinition = {
  name: "read",
  description: "Read a text file from the workspace.\nPaths are relative to the workspace.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  actor: "tools", sideEffects: false, parallelSafe: true, groups: ["fs"], needsApproval: false,
};

/** Promise.all that waits for every promise before failing with the first error. */
async function settledAll(promises: Promise<unknown>[]): Promise<void> {
  const results = await Promise.allSettled(promises);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
}

interface ToolExecution { runId: string; toolCallId: string; path: string; start: number; end: number }

/** A tool with side effects (its assistant message must be stored before it runs). */
const NOTE_TOOL: ToolDefinition = {
  name: "note", description: "Write a note.", parameters: { type: "object", properties: { text: { type: "string" } } },
  actor: "tools", sideEffects: true, parallelSafe: false, groups: ["fs"], needsApproval: false,
};

/** A tools actor stand-in with `read` and `note` tools that record their executions ("slow" paths take 300 ms). */
function startRecordingTools(nats: TestNats, executions: ToolExecution[]): Promise<NatsConnection> {
  return startToolResponder(nats, [{
    definition: READ_TOOL,
    run: async (req) => {
      const path = String(req.args.path ?? "");
      const start = Date.now();
      if (path.includes("slow")) await new Promise((r) => setTimeout(r, 300));
      executions.push({ runId: req.runId, toolCallId: req.toolCallId, path, start, end: Date.now() });
      return textResult(req, `contents of ${path}`, Date.now() - start);
    },
  }, {
    definition: NOTE_TOOL,
    run: async (req) => {
      executions.push({ runId: req.runId, toolCallId: req.toolCallId, path: "", start: Date.now(), end: Date.now() });
      return textResult(req, "noted");
    },
  }]);
}

describe("agent-runner building blocks", () => {
  it("parses tool arguments, repairing only what cannot change their meaning", () => {
    assert.deepEqual(parseToolArgs(""), { args: {}, repaired: false });
    assert.deepEqual(parseToolArgs('{"a":1}'), { args: { a: 1 }, repaired: false });
    assert.deepEqual(parseToolArgs('{"path":"x.txt"').args, { path: "x.txt" }, "missing closing brace");
    assert.deepEqual(parseToolArgs('{"a":{"b":[1,2]}').args, { a: { b: [1, 2] } }, "missing nested closer");
    assert.deepEqual(parseToolArgs('{"a":1}}').args, { a: 1 }, "trailing brace");
    assert.deepEqual(parseToolArgs('{"a":1} <|eot|>').args, { a: 1 }, "trailing garbage");
    assert.deepEqual(parseToolArgs('```json\n{"a":true}\n```').args, { a: true }, "code fence");
    for (const bad of ['{"path":"trunc', '{"n":12', '{"a":1,', '{"path"', "[1,2]", "not json", '{"a":}']) {
      const parsed = parseToolArgs(bad);
      assert.ok(parsed.error, `${bad} is refused`);
      assert.deepEqual(parsed.args, {});
    }
  });

  it("classifies provider errors into the contract's codes with retryable flags", () => {
    const http = (status: number, code: string | null = null, message = "x", headers: Record<string, string> = {}) =>
      classifyProviderError({ status, code, message, headers: new Headers(headers) }, "openai");
    assert.deepEqual([http(429).code, http(429).retryable], ["PROVIDER_RATE_LIMIT", true]);
    assert.equal((http(429, "rate_limit_exceeded", "x", { "retry-after-ms": "1500" }).details as { retryAfterMs: number }).retryAfterMs, 1500);
    assert.equal(http(429, "insufficient_quota").code, "PROVIDER_BILLING");
    assert.deepEqual([http(401).code, http(401).retryable], ["PROVIDER_AUTH", false]);
    assert.equal(http(402).code, "PROVIDER_BILLING");
    assert.deepEqual([http(400, "context_length_exceeded").code, http(400, "context_length_exceeded").retryable], ["PROVIDER_CONTEXT_OVERFLOW", false]);
    assert.equal(http(400, null, "This model's maximum context length is 8192 tokens").code, "PROVIDER_CONTEXT_OVERFLOW");
    assert.deepEqual([http(400).code, http(400).retryable], ["PROVIDER_ERROR", false]);
    assert.deepEqual([http(529).code, http(503).code], ["PROVIDER_OVERLOADED", "PROVIDER_OVERLOADED"]);
    assert.deepEqual([http(500).code, http(500).retryable], ["PROVIDER_ERROR", true]);
    assert.equal(classifyProviderError({ name: "APIConnectionTimeoutError", message: "timed out" }, "openai").code, "PROVIDER_TIMEOUT");
    assert.equal(classifyProviderError({ name: "APIUserAbortError", message: "aborted" }, "openai").code, "ABORTED");
  });

  it("keeps every tool call paired with its result in the history sent to the model", () => {
    const call = (id: string) => ({ type: "tool_call" as const, id, name: "read", args: {} });
    const assistant = (...ids: string[]) => ({ role: "assistant" as const, content: ids.map(call), provider: "openai", model: "m", stopReason: "tool_use" as const });
    const result = (id: string) => ({ role: "tool_result" as const, toolCallId: id, toolName: "read", isError: false, content: [{ type: "text" as const, text: id }] });
    const user = { role: "user" as const, content: [{ type: "text" as const, text: "hi" }] };
    const out = sanitizeMessages([result("orphan"), user, assistant("a", "b"), result("b"), user, assistant("c", "d"), result("d")]);
    assert.deepEqual(out.map((m) => (m.role === "tool_result" ? `r:${m.toolCallId}${m.isError ? "!" : ""}` : m.role)), [
      "user", "assistant", "r:a!", "r:b", "user", "assistant", "r:d",
    ], "orphans dropped, an interrupted call gets an error result, the trailing group stays open for the loop");
    const renamed = uniqueToolCallIds(assistant("c", "x", "x"), [assistant("c")], 2);
    const ids = renamed.content.map((b) => (b.type === "tool_call" ? b.id : ""));
    assert.equal(new Set([...ids, "c"]).size, 4, `ids made unique: ${ids.join(", ")}`);
  });
});

describe("agent-runner", () => {
  let nats: TestNats;
  let fake: FakeOpenAIServer;
  let sessions: ActorProcess;
  let runner: ActorProcess;
  let router: NatsConnection;
  let admin: NatsConnection;
  let toolsNc: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  let bus: BusClient;
  const executions: ToolExecution[] = [];
  let counter = 0;
  const runnerEnv = () => ({
    LURKBOT_MODEL: "openai/test-model",
    OPENAI_BASE_URL: fake.baseUrl,
    OPENAI_API_KEY: "sk-test-agent-runner-0123456789",
    // a killed runner's message comes back quickly in the resume test
    LURKBOT_ACK_WAIT_MS: "2000",
    // info: run logs are checked for the API key
    LURKBOT_LOG_LEVEL: "info",
  });

  before(async () => {
    nats = await TestNats.start();
    fake = await FakeOpenAIServer.start();
    toolsNc = await startRecordingTools(nats, executions);
    // settled, so a process that did start is known to after() even when the other failed
    await settledAll([
      startActorProcess("sessions", nats).then((p) => (sessions = p)),
      startActorProcess("agent-runner", nats, runnerEnv()).then((p) => (runner = p)),
    ]);
    router = await nats.connect("router");
    admin = await nats.connect("admin");
    js = jetstream(router);
    jsm = await jetstreamManager(admin);
    bus = new BusClient(router);
  });
  after(async () => {
    await Promise.all([router?.close(), admin?.close(), toolsNc?.close()]);
    await Promise.all([runner?.stop(), sessions?.stop()]);
    await fake?.close();
    await nats?.stop();
  });
  beforeEach(() => fake.reset());

  interface Started {
    req: RunRequest;
    events: RunEvent[];
    conversation: string;
    /** the first terminal event */
    terminal(): Promise<RunEvent>;
    /** requests the fake received for this run (matched by the run's user text) */
    llmRequests(): ChatRequestBody[];
  }

  async function startRun(text: string, opts: { sessionKey?: string; options?: RunRequest["options"]; kind?: "user" | "system_event" } = {}): Promise<Started> {
    const n = ++counter;
    const conversation = `conv-${n}`;
    const marker = `[t${n}]`;
    const req = {
      type: "lurk.run.request.v1", id: `req-${n}-${Date.now()}`, ts: Date.now(), runId: `run-test-${n}-${Date.now().toString(36)}`,
      sessionKey: opts.sessionKey ?? `agent:main:cli:dm:user${n}`, agentId: "main", sessionType: "dm", trigger: "message",
      inputs: [{ kind: opts.kind ?? "user", text: `${text} ${marker}`, attachments: [] }],
      origin: { channel: "cli", conversation, messageIds: [`msg-${n}`] }, deliver: true, options: opts.options ?? {},
    } as RunRequest;
    const events: RunEvent[] = [];
    // the router's own user sees only terminal events; a channel's user sees them all
    const sub = admin.subscribe(S.runEvents(req.runId), { callback: (_e, msg) => void events.push(runEventSchema.parse(msg.json())) });
    await admin.flush();
    await js.publish(S.runRequest("main"), JSON.stringify(req), { msgID: req.runId });
    const isMine = (b: ChatRequestBody) => b.messages.some((m) => m.role === "user" && messageText(m).includes(marker));
    return {
      req, events, conversation,
      terminal: async () => {
        const ev = await waitFor(() => events.find((e) => e.event.kind === "done" || e.event.kind === "error"), 15_000, `terminal event of ${req.runId}`);
        setTimeout(() => sub.unsubscribe(), 3_000).unref();
        return ev;
      },
      llmRequests: () => fake.requests.map((r) => r.body).filter(isMine),
    };
  }

  const runStatus = async (run: Started) => (await bus.call("sessions", "run", { sessionKey: run.req.sessionKey, runId: run.req.runId })).status;

  /** Waits for the terminal event and the run's final marker; checks there was exactly one terminal event. */
  async function settled(run: Started, status = "done") {
    await run.terminal();
    await waitFor(async () => (await runStatus(run)) === status, 10_000, `run status ${status}`);
    const terminals = run.events.filter((e) => e.event.kind === "done" || e.event.kind === "error");
    assert.equal(terminals.length, 1, "exactly one terminal event");
    return terminals[0]!.event;
  }

  async function outbound(conversation: string): Promise<{ count: number; last: OutboundMessage | undefined }> {
    const subject = S.outbound("cli", conversation);
    const info = await jsm.streams.info(STREAMS.outbound, { subjects_filter: subject });
    const count = info.state.subjects?.[subject] ?? 0;
    if (count === 0) return { count, last: undefined };
    const msg = await jsm.streams.getMessage(STREAMS.outbound, { last_by_subj: subject });
    return { count, last: outboundMessageSchema.parse(msg!.json()) };
  }

  const kinds = (run: Started) => run.events.map((e) => e.event.kind);

  it("coalesces text deltas within a window and keeps slower ones apart, in order", async () => {
    const runId = `run-coalesce-${Date.now().toString(36)}`;
    const got: RunEvent[] = [];
    admin.subscribe(S.runEvents(runId), { callback: (_e, m) => void got.push(runEventSchema.parse(m.json())) });
    await admin.flush();
    const publisher = await nats.connect("agent-runner");
    const events = new RunEvents(publisher, S, runId, "agent:main:main", "cause", createLogger("test", "silent"));
    for (const part of ["a", "b", "c"]) events.emit({ kind: "message_delta", turn: 1, text: part });
    await new Promise((r) => setTimeout(r, 80)); // longer than the window: the next delta is a new event
    events.emit({ kind: "message_delta", turn: 1, text: "d" });
    events.emit({ kind: "thinking_delta", turn: 1, text: "t" }); // another kind flushes the pending text
    events.emit({ kind: "message_end", turn: 1, text: "abcd" });
    await waitFor(() => got.length >= 4, 5000, "events");
    assert.deepEqual(got.map((e) => [e.event.kind, "text" in e.event ? e.event.text : ""]), [
      ["message_delta", "abc"], ["message_delta", "d"], ["thinking_delta", "t"], ["message_end", "abcd"],
    ]);
    assert.deepEqual(got.map((e) => e.seq), [0, 1, 2, 3]);
    await publisher.close();
  });

  /** A runner-side connection, and what admin sees of a run's events and of `read` calls, in order. */
  async function watchRunAndReads(runId: string) {
    const seen: string[] = [];
    const subs = [
      admin.subscribe(S.runEvents(runId), { callback: (_e, m) => void seen.push(runEventSchema.parse(m.json()).event.kind) }),
      admin.subscribe(S.toolCall("read"), { callback: () => void seen.push("tools.call") }),
    ];
    await admin.flush();
    return { seen, subs, publisher: await nats.connect("agent-runner") };
  }

  it("a tool_start event leaves with its tool call, ahead of it on the bus", async () => {
    const runId = `run-piggyback-${Date.now().toString(36)}`;
    const { seen, subs, publisher } = await watchRunAndReads(runId);
    const events = new RunEvents(publisher, S, runId, "agent:main:main", "cause", createLogger("test", "silent"));
    const read = { name: "read", description: "read a file", parameters: { type: "object" }, actor: "tools", sideEffects: false, parallelSafe: true, groups: [], needsApproval: false };
    const ran = await runTurnTools({
      tools: [read], events, signal: new AbortController().signal,
      // the request goes out the way ToolsClient sends one: published on the run's connection in the same tick
      execute: async (call) => {
        publisher.publish(S.toolCall("read"), "{}");
        return { role: "tool_result", toolCallId: call.id, toolName: call.name, isError: false, content: [{ type: "text", text: "ok" }] };
      },
      checkpoint: async () => undefined,
    }, 1, [{ type: "tool_call", id: "c1", name: "read", args: { path: "notes.txt" } }], new Map());
    assert.equal(ran.results.length, 1);
    await waitFor(() => seen.length >= 3, 5000, "tool_start, the call and tool_end");
    // without the hand-over, the request (flushed at the end of the tick) went out before the event (next turn of the loop)
    assert.deepEqual(seen, ["tool_start", "tools.call", "tool_end"]);
    for (const sub of subs) sub.unsubscribe();
    await publisher.close();
  });

  it("holds events for the run's next bus request, sends them ahead of it, and sends a terminal event at once", async () => {
    const runId = `run-hold-${Date.now().toString(36)}`;
    const { seen, subs, publisher } = await watchRunAndReads(runId);
    // both flushes round-trip through the server: whatever the publisher handed over has reached admin
    const delivered = async () => { await publisher.flush(); await admin.flush(); return [...seen]; };
    const held = new RunEvents(publisher, S, runId, "agent:main:main", "cause", createLogger("test", "silent"), 60_000);
    held.emit({ kind: "turn_start", turn: 1 });
    assert.deepEqual(await delivered(), [], "a non-terminal event waits");
    held.flushNow();
    publisher.publish(S.toolCall("read"), "{}");
    assert.deepEqual(await delivered(), ["turn_start", "tools.call"]);
    held.emit({ kind: "turn_end", turn: 1, stopReason: "tool_use" });
    assert.deepEqual(await delivered(), ["turn_start", "tools.call"]);
    held.emit({ kind: "done", text: "ok", turns: 1, usage: emptyUsage(), silent: false });
    assert.deepEqual(await delivered(), ["turn_start", "tools.call", "turn_end", "done"], "the terminal event takes the held one along at once");
    // with no request to go along with, an event leaves on its own after the hold
    const alone = new RunEvents(publisher, S, `${runId}-alone`, "agent:main:main", "cause", createLogger("test", "silent"), 10);
    const aloneSeen: string[] = [];
    subs.push(admin.subscribe(S.runEvents(`${runId}-alone`), { callback: (_e, m) => void aloneSeen.push(runEventSchema.parse(m.json()).event.kind) }));
    await admin.flush();
    alone.emit({ kind: "turn_start", turn: 1 });
    await waitFor(() => aloneSeen.length === 1, 5000, "the held event");
    assert.deepEqual(aloneSeen, ["turn_start"]);
    for (const sub of subs) sub.unsubscribe();
    await publisher.close();
  });

  it("streams a plain reply as deltas, ends with one done, and delivers it to OUTBOUND", async () => {
    fake.enqueue({ kind: "text", text: "Hello there, I am LurkBot.", chunks: 5 });
    const run = await startRun("hello");
    const terminal = await run.terminal();
    assert.equal(terminal.event.kind, "done");
    const done = await settled(run);
    assert.equal(done.kind === "done" && done.text, "Hello there, I am LurkBot.");
    // a zero-latency stream arrives within one coalescing window: few delta events, same text
    const deltas = run.events.flatMap((e) => (e.event.kind === "message_delta" ? [e.event.text] : []));
    assert.ok(deltas.length >= 1, `deltas were streamed (got ${deltas.length})`);
    assert.equal(deltas.join(""), "Hello there, I am LurkBot.");
    assert.equal(kinds(run)[0], "run_start");
    assert.deepEqual(run.events.map((e) => e.seq), run.events.map((_, i) => i), "seq increases from 0 without gaps");
    assert.ok(run.events.every((e) => e.runId === run.req.runId && e.sessionKey === run.req.sessionKey && e.causationId === run.req.id));
    assert.ok(kinds(run).includes("usage") && kinds(run).includes("message_end") && kinds(run).includes("turn_end"));
    const out = await waitFor(async () => (await outbound(run.conversation)).last);
    assert.equal(out.kind, "reply");
    assert.equal(out.text, "Hello there, I am LurkBot.");
    assert.deepEqual(out.replyTo, [`msg-${counter}`]);
    assert.equal(out.id, `${run.req.runId}:reply:0`);
    // what the model saw: a system prompt naming LurkBot and the tool, and the tools themselves
    const [sent] = run.llmRequests();
    assert.equal(sent!.messages[0]!.role, "system");
    assert.match(messageText(sent!.messages[0]), /LurkBot/);
    assert.match(messageText(sent!.messages[0]), /- read: Read a text file from the workspace\./);
    assert.deepEqual(sent!.tools?.map((t) => t.function.name).sort(), ["note", "read"]);
    assert.equal(sent!.stream, true);
    assert.equal(fake.requests[0]!.headers.authorization, "Bearer sk-test-agent-runner-0123456789");
    // the transcript and the usage are stored before the reply goes out
    const { session } = await bus.call("sessions", "get", { sessionKey: run.req.sessionKey });
    assert.equal(session?.model, "openai/test-model");
    assert.equal(session?.provider, "openai");
    assert.ok(session!.usage.total > 0 && session!.usage.output > 0, "usage added to the session");
    const { records } = await bus.call("sessions", "run", { sessionKey: run.req.sessionKey, runId: run.req.runId });
    assert.deepEqual(records.map((r) => r.id), [`${run.req.runId}:start`, `${run.req.runId}:in:0`, `${run.req.runId}:a:1`, `${run.req.runId}:end:done`]);
    // the end marker holds the whole run's usage, which a reader given only the newest records still gets
    const [, , answered, end] = records;
    const spent = answered!.message?.role === "assistant" ? answered!.message.usage : undefined;
    assert.ok(spent && spent.total > 0);
    assert.deepEqual(end!.meta?.usage, spent);
    assert.deepEqual(runEndFromRecords([end!])?.usage, spent);
    assert.match(runner.output(), /run finished/);
    assert.ok(!runner.output().includes("sk-test-agent-runner-0123456789"), "the API key is never logged");
  });

  it("round-trips a tool call with fragmented arguments over the bus and sends the result back to the model", async () => {
    fake.enqueue({ kind: "tool_calls", calls: [{ id: "call_frag_1", name: "read", arguments: { path: "notes/today.md" }, fragments: 7 }] });
    const run = await startRun("what is in my notes?");
    const done = await settled(run);
    assert.equal(done.kind === "done" && done.text, "tool said: contents of notes/today.md");
    const mine = executions.filter((x) => x.runId === run.req.runId);
    assert.deepEqual(mine.map((x) => [x.toolCallId, x.path]), [["call_frag_1", "notes/today.md"]]);
    const second = run.llmRequests()[1]!;
    const assistant = second.messages.find((m) => m.role === "assistant");
    assert.equal(assistant?.tool_calls?.[0]?.function.name, "read");
    assert.deepEqual(JSON.parse(assistant!.tool_calls![0]!.function.arguments), { path: "notes/today.md" });
    const tool = second.messages[second.messages.length - 1]!;
    assert.equal(tool.role, "tool");
    assert.equal(tool.tool_call_id, "call_frag_1");
    assert.equal(messageText(tool), "contents of notes/today.md");
    const toolEnd = run.events.find((e) => e.event.kind === "tool_end")!.event;
    assert.ok(toolEnd.kind === "tool_end" && !toolEnd.isError && !toolEnd.resumed && toolEnd.preview === "contents of notes/today.md");
    assert.ok(kinds(run).indexOf("tool_start") < kinds(run).indexOf("tool_end"));
    assert.equal((await waitFor(async () => (await outbound(run.conversation)).last)).text, "tool said: contents of notes/today.md");
  });

  it("stores a turn of calls without side effects with its first tool result, and one with a side effect before the tool runs", async () => {
    // every append and tool call on the bus, in order (one publisher: the runner)
    const seen: { subject: string; ids: string[] }[] = [];
    const subs = [S.toolCall("read"), S.toolCall("note"), `${S.prefix}.sessions.append`].map((subject) =>
      admin.subscribe(subject, { callback: (_e, m) => void seen.push({ subject: m.subject, ids: ((m.json() as { records?: { id: string }[] }).records ?? []).map((r) => r.id) }) }));
    await admin.flush();
    fake.enqueue({ kind: "tool_calls", calls: [{ id: "call_ro", name: "read", arguments: { path: "ro.txt" } }] });
    const readRun = await startRun("read ro.txt");
    await settled(readRun);
    const readAssistant = recordIds.assistant(readRun.req.runId, 1);
    const withAssistant = seen.filter((x) => x.ids.includes(readAssistant));
    assert.equal(withAssistant.length, 1);
    assert.deepEqual(withAssistant[0]!.ids, [readAssistant, recordIds.toolResult(readRun.req.runId, "call_ro")], "one append: the assistant turn, then its result");

    fake.enqueue({ kind: "tool_calls", calls: [{ id: "call_se", name: "note", arguments: { text: "hi" } }] });
    const noteRun = await startRun("note hi");
    await settled(noteRun);
    const noteAssistant = recordIds.assistant(noteRun.req.runId, 1);
    const order = seen.filter((x) => x.ids.includes(noteAssistant) || x.ids.includes(recordIds.toolResult(noteRun.req.runId, "call_se")) || x.subject === S.toolCall("note"));
    assert.deepEqual(order.map((x) => x.subject === S.toolCall("note") ? "tool call" : x.ids.includes(noteAssistant) ? "assistant" : "result"), ["assistant", "tool call", "result"]);
    assert.deepEqual(order[0]!.ids, [noteAssistant], "the assistant turn is stored alone, before the call");
    for (const sub of subs) sub.unsubscribe();
  });

  it("sends the history of an earlier run in the same session", async () => {
    const sessionKey = `agent:main:cli:dm:history${Date.now()}`;
    const first = await startRun("my name is Ada", { sessionKey });
    await settled(first);
    const second = await startRun("what is my name?", { sessionKey });
    await settled(second);
    const sent = second.llmRequests()[0]!.messages.filter((m) => m.role !== "system");
    assert.deepEqual(sent.map((m) => [m.role, messageText(m).replace(/ \[t\d+\]/, "")]), [
      ["user", "my name is Ada"],
      ["assistant", "echo: my name is Ada"],
      ["user", "what is my name?"],
    ]);
  });

  it("repairs safely fixable argument JSON and returns unparseable arguments to the model as an error result", async () => {
    fake.enqueue({ kind: "tool_calls", calls: [
      { id: "call_ok", name: "read", arguments: '{"path":"fixed.txt"' },
      { id: "call_bad", name: "read", arguments: '{"path": "trunc' },
    ] });
    const run = await startRun("read two files");
    await settled(run);
    const mine = executions.filter((x) => x.runId === run.req.runId);
    assert.deepEqual(mine.map((x) => x.path), ["fixed.txt"], "only the repairable call was executed");
    const second = run.llmRequests()[1]!;
    const tools = second.messages.filter((m) => m.role === "tool");
    assert.deepEqual(tools.map((m) => m.tool_call_id), ["call_ok", "call_bad"], "results in call order");
    assert.equal(messageText(tools[0]), "contents of fixed.txt");
    assert.match(messageText(tools[1]), /arguments could not be parsed/);
    const ends = run.events.flatMap((e) => (e.event.kind === "tool_end" ? [e.event] : []));
    assert.deepEqual(ends.map((e) => [e.toolCallId, e.isError]).sort(), [["call_bad", true], ["call_ok", false]]);
  });

  it("answers a call to an unknown tool with an error result without calling anything", async () => {
    fake.enqueue({ kind: "tool_calls", calls: [{ id: "call_unknown", name: "launch_rockets", arguments: { count: 3 } }] });
    const before = executions.length;
    const run = await startRun("launch");
    const done = await settled(run);
    assert.equal(executions.length, before);
    const tool = run.llmRequests()[1]!.messages.at(-1)!;
    assert.equal(tool.role, "tool");
    assert.match(messageText(tool), /no tool named "launch_rockets"\. Available tools: note, read\./);
    assert.ok(done.kind === "done" && done.text.startsWith("tool said: Error"));
  });

  it("runs parallel-safe tool calls of one turn concurrently and keeps the results in call order", async () => {
    fake.enqueue({ kind: "tool_calls", calls: [
      { id: "call_p1", name: "read", arguments: { path: "slow-1.txt" } },
      { id: "call_p2", name: "read", arguments: { path: "slow-2.txt" } },
    ] });
    const run = await startRun("read both");
    await settled(run);
    const [a, b] = executions.filter((x) => x.runId === run.req.runId).sort((x, y) => x.start - y.start);
    assert.ok(a && b && b.start < a.end, "the second call started before the first ended");
    const tools = run.llmRequests()[1]!.messages.filter((m) => m.role === "tool");
    assert.deepEqual(tools.map((m) => messageText(m)), ["contents of slow-1.txt", "contents of slow-2.txt"]);
  });

  it("renames a tool call id the server reuses on the next turn, so both calls run and pair with their results", async () => {
    fake.enqueue(
      { kind: "tool_calls", calls: [{ id: "call_0", name: "read", arguments: { path: "first.txt" } }] },
      { kind: "tool_calls", calls: [{ id: "call_0", name: "read", arguments: { path: "second.txt" } }] },
    );
    const run = await startRun("read twice");
    const done = await settled(run);
    assert.ok(done.kind === "done" && done.text === "tool said: contents of second.txt");
    assert.deepEqual(executions.filter((x) => x.runId === run.req.runId).map((x) => x.path), ["first.txt", "second.txt"]);
    const third = run.llmRequests()[2]!.messages;
    const ids = third.flatMap((m) => m.tool_calls?.map((c) => c.id) ?? []);
    assert.equal(new Set(ids).size, 2, `distinct ids sent back (${ids.join(", ")})`);
    assert.deepEqual(third.filter((m) => m.role === "tool").map((m) => m.tool_call_id), ids);
  });

  it("shows a system event to the model as a note and does not deliver a NO_REPLY answer", async () => {
    fake.enqueue({ kind: "text", text: "NO_REPLY" });
    const run = await startRun("heartbeat: nothing due", { kind: "system_event" });
    const done = await settled(run);
    assert.ok(done.kind === "done" && done.silent && done.text === "NO_REPLY");
    const user = run.llmRequests()[0]!.messages.find((m) => m.role === "user");
    assert.match(messageText(user), /^\[system event\] heartbeat: nothing due/);
    const marker = await waitFor(async () => (await bus.call("sessions", "run", { sessionKey: run.req.sessionKey, runId: run.req.runId })).records.find((r) => r.kind === "run_marker" && r.runStatus === "done"));
    assert.equal(marker.meta?.silent, true);
    assert.equal((await outbound(run.conversation)).count, 0);
  });

  it("takes a reply that ends with NO_REPLY as silent, as channels do (seeds 5.6), and does not deliver it", async () => {
    fake.enqueue({ kind: "text", text: "Already answered with the message tool. NO_REPLY" });
    const run = await startRun("send it through the tool");
    const done = await settled(run);
    assert.ok(done.kind === "done" && done.silent, "the done event says silent");
    assert.equal((await outbound(run.conversation)).count, 0, "no reply published");
  });

  it("stops after the default 10 model calls with a final note", async () => {
    for (let i = 0; i < 12; i++) fake.enqueue({ kind: "tool_calls", calls: [{ name: "read", arguments: { path: `loop-${i}.txt` } }] });
    const run = await startRun("keep reading");
    const done = await settled(run);
    assert.equal(run.llmRequests().length, 10);
    assert.equal(executions.filter((x) => x.runId === run.req.runId).length, 10);
    assert.ok(done.kind === "done" && done.turns === 10 && /stopped after 10 model calls/.test(done.text));
    assert.match((await waitFor(async () => (await outbound(run.conversation)).last)).text, /stopped after 10 model calls/);
    // options.maxIterations lowers the limit for one run
    for (let i = 0; i < 3; i++) fake.enqueue({ kind: "tool_calls", calls: [{ name: "read", arguments: { path: `short-${i}.txt` } }] });
    const short = await startRun("keep reading", { options: { maxIterations: 2 } });
    const shortDone = await settled(short);
    assert.equal(short.llmRequests().length, 2);
    assert.ok(shortDone.kind === "done" && shortDone.turns === 2);
  });

  it("aborts a run through lurk.run.ctl: the provider call is cut and the run ends with ABORTED", async () => {
    fake.enqueue({ kind: "hang", text: "Let me think about this for a very long" });
    const run = await startRun("a long question");
    await waitFor(() => run.events.some((e) => e.event.kind === "message_delta"), 10_000, "first delta");
    router.publish(S.runControl(run.req.runId), JSON.stringify({ type: "lurk.run.control.v1", id: `ctl-${counter}`, ts: Date.now(), runId: run.req.runId, action: "abort", reason: "test" }));
    const terminal = await run.terminal();
    assert.ok(terminal.event.kind === "error" && terminal.event.code === "ABORTED");
    await settled(run, "aborted");
    assert.equal((await outbound(run.conversation)).count, 0, "an aborted run delivers nothing");
    assert.equal(run.llmRequests().length, 1);
  });

  it("retries a 429 and ends a 400 context_length_exceeded with a terminal error and an error reply", async () => {
    fake.enqueue({ kind: "error", status: 429 });
    const retried = await startRun("retry me");
    const done = await settled(retried);
    assert.ok(done.kind === "done" && done.text.startsWith("echo: retry me"));
    assert.equal(retried.llmRequests().length, 2);

    fake.enqueue({ kind: "error", status: 400, code: "context_length_exceeded", message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens." });
    const failed = await startRun("too long");
    const error = await settled(failed, "error");
    assert.ok(error.kind === "error" && error.code === "PROVIDER_CONTEXT_OVERFLOW" && !error.retryable);
    assert.equal(failed.llmRequests().length, 1, "not retried");
    const out = await waitFor(async () => (await outbound(failed.conversation)).last);
    assert.equal(out.kind, "error");
    assert.equal(out.errorCode, "PROVIDER_CONTEXT_OVERFLOW");
    assert.match(out.text, /maximum context length/);
  });

  it("delivers a redelivered run's reply once and executes its tool once", async () => {
    const before = fake.requests.length;
    const run = await startRun("please read dup.txt");
    // the same request again with another msgID (JetStream does not dedup it), while the first runs
    await js.publish(S.runRequest("main"), JSON.stringify(run.req), { msgID: `${run.req.runId}-again` });
    await settled(run);
    // and once more after it finished
    await js.publish(S.runRequest("main"), JSON.stringify(run.req), { msgID: `${run.req.runId}-later` });
    await waitFor(async () => (await jsm.streams.info(STREAMS.runs)).state.messages === 0, 10_000, "RUNS drained");
    await waitFor(async () => (await jsm.consumers.info(STREAMS.runs, "agent-runner")).num_ack_pending === 0, 10_000, "no run in flight");
    assert.equal(executions.filter((x) => x.runId === run.req.runId).length, 1, "the tool ran once");
    assert.equal(fake.requests.length - before, 2, "two model calls in total");
    const out = await outbound(run.conversation);
    assert.equal(out.count, 1, "one delivery in OUTBOUND");
    assert.equal(out.last?.text, "tool said: contents of dup.txt");
  });

  it("resumes a run after the runner is killed: the checkpointed tool call is not executed again", async () => {
    fake.enqueue({ kind: "tool_calls", calls: [{ id: "call_resume", name: "read", arguments: { path: "resume.txt" } }] }, { kind: "hang", text: "partial" });
    const run = await startRun("read the resume file");
    await waitFor(() => run.llmRequests().length === 2 && run.events.some((e) => e.event.kind === "message_delta" && e.event.turn === 2), 10_000, "second model call hanging");
    await runner.kill();
    runner = await startActorProcess("agent-runner", nats, runnerEnv());
    const done = await settled(run);
    assert.ok(done.kind === "done" && done.text === "tool said: contents of resume.txt");
    assert.equal(executions.filter((x) => x.runId === run.req.runId).length, 1, "the tool ran once");
    const resumedEnd = run.events.find((e) => e.event.kind === "tool_end" && e.event.resumed);
    assert.ok(resumedEnd, "tool_end resumed:true after the restart");
    assert.equal(run.llmRequests().length, 3, "turn 1 was not requested again");
    const out = await waitFor(async () => (await outbound(run.conversation)).last);
    assert.equal(out.text, "tool said: contents of resume.txt");
  });
});

describe("agent-runner without a model", () => {
  let nats: TestNats;
  let sessions: ActorProcess;
  let runner: ActorProcess;
  let router: NatsConnection;
  let admin: NatsConnection;

  before(async () => {
    nats = await TestNats.start();
    await settledAll([
      startActorProcess("sessions", nats).then((p) => (sessions = p)),
      startActorProcess("agent-runner", nats).then((p) => (runner = p)),
    ]);
    router = await nats.connect("router");
    admin = await nats.connect("admin");
  });
  after(async () => {
    await Promise.all([router?.close(), admin?.close()]);
    await Promise.all([runner?.stop(), sessions?.stop()]);
    await nats?.stop();
  });

  it("replies how to configure a model, with kind error and NO_MODEL, and keeps serving", async () => {
    const js = jetstream(router);
    const jsm = await jetstreamManager(admin);
    for (const n of [1, 2]) {
      const runId = `run-nomodel-${n}-${Date.now().toString(36)}`;
      const events: RunEvent[] = [];
      const sub = admin.subscribe(S.runEvents(runId), { callback: (_e, m) => void events.push(runEventSchema.parse(m.json())) });
      await admin.flush();
      const req = {
        type: "lurk.run.request.v1", id: `req-nomodel-${n}`, ts: Date.now(), runId, sessionKey: "agent:main:main", agentId: "main",
        sessionType: "main", trigger: "message", inputs: [{ kind: "user", text: "hi", attachments: [] }],
        origin: { channel: "cli", conversation: `nomodel-${n}`, messageIds: [`m${n}`] }, deliver: true, options: {},
      };
      await js.publish(S.runRequest("main"), JSON.stringify(req), { msgID: runId });
      const error = await waitFor(() => events.find((e) => e.event.kind === "error"), 10_000, "terminal error");
      assert.ok(error.event.kind === "error" && error.event.code === "NO_MODEL");
      const subject = S.outbound("cli", `nomodel-${n}`);
      const msg = await waitFor(() => jsm.streams.getMessage(STREAMS.outbound, { last_by_subj: subject }).catch(() => null), 10_000, "reply");
      const out = outboundMessageSchema.parse(msg.json());
      assert.equal(out.kind, "error");
      assert.equal(out.errorCode, "NO_MODEL");
      assert.match(out.text, /No model is configured\. Set LURKBOT_MODEL=openai\/gpt-4o-mini and OPENAI_API_KEY \(or OPENAI_BASE_URL/);
      assert.match(out.text, /npx lurkbot start/);
      assert.deepEqual(out.replyTo, [`m${n}`]);
      sub.unsubscribe();
    }
    assert.equal(runner.child.exitCode, null, "the agent-runner is still running");
    const infos = [];
    for await (const i of await new Svcm(admin).client().info("agent-runner")) infos.push(i);
    assert.equal(infos.length, 1);
  });
});

const live = !!process.env.OPENAI_API_KEY && process.env.LURKBOT_LIVE_TESTS === "1";

describe("agent-runner against the live OpenAI API", { skip: live ? false : "set OPENAI_API_KEY and LURKBOT_LIVE_TESTS=1" }, () => {
  let nats: TestNats;
  let sessions: ActorProcess;
  let runner: ActorProcess;
  let router: NatsConnection;

  before(async () => {
    nats = await TestNats.start();
    sessions = await startActorProcess("sessions", nats);
    runner = await startActorProcess("agent-runner", nats, {
      LURKBOT_MODEL: process.env.LURKBOT_LIVE_MODEL ?? "openai/gpt-4o-mini",
      OPENAI_API_KEY: process.env.OPENAI_API_KEY,
      OPENAI_BASE_URL: process.env.OPENAI_BASE_URL,
    });
    router = await nats.connect("router");
  });
  after(async () => {
    await router?.close();
    await Promise.all([runner?.stop(), sessions?.stop()]);
    await nats?.stop();
  });

  it("gets a streamed answer from the real model", async () => {
    const runId = `run-live-${Date.now().toString(36)}`;
    const events: RunEvent[] = [];
    const watcher = await nats.connect("cli");
    watcher.subscribe(S.runEvents(runId), { callback: (_e, m) => void events.push(runEventSchema.parse(m.json())) });
    await watcher.flush();
    await jetstream(router).publish(S.runRequest("main"), JSON.stringify({
      type: "lurk.run.request.v1", id: `req-${runId}`, ts: Date.now(), runId, sessionKey: "agent:main:main", agentId: "main", sessionType: "main",
      trigger: "message", inputs: [{ kind: "user", text: "Reply with exactly the word PONG and nothing else.", attachments: [] }], deliver: false, options: {},
    }), { msgID: runId });
    const terminal = await waitFor(() => events.find((e) => e.event.kind === "done" || e.event.kind === "error"), 60_000, "live answer");
    assert.equal(terminal.event.kind, "done", JSON.stringify(terminal.event));
    assert.match(terminal.event.kind === "done" ? terminal.event.text : "", /PONG/);
  });
});
