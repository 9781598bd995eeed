/**
 * Context compaction and memory consolidation (services/agent-runner/compaction*.ts,
 * run-compaction.ts, consolidation.ts): the pure parts (token estimates, chunking, adaptive
 * ratio, compacted view), staged summaries through the real OpenAI provider against the fake
 * server, and the behaviour through the whole system (real nats-server, every actor a process):
 * threshold compaction, context-overflow retry, /compact, and MEMORY.md/HISTORY.md consolidation.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  runEventSchema, safeParseJson, subjects, type LlmMessage, type RunEvent, type RunRequest, type TranscriptRecord,
} from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { createLogger } from "../shared/runtime/logger.js";
import {
  BASE_CHUNK_RATIO, computeAdaptiveChunkRatio, groupUnits, MIN_CHUNK_RATIO, planCompaction, splitByTokenShare, summarizeInStages,
} from "../services/agent-runner/compaction.js";
import { compactedView } from "../services/agent-runner/compaction-view.js";
import { consolidate, parseConsolidationAnswer, planConsolidation } from "../services/agent-runner/consolidation.js";
import { ConsolidationBackoff } from "../services/agent-runner/memory-after-run.js";
import { providerComplete } from "../services/agent-runner/model-complete.js";
import { OpenAIProvider } from "../services/agent-runner/providers/openai.js";
import { estimateMessageTokens, estimateTextTokens, IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS } from "../services/agent-runner/tokens.js";
import { messageText, type ChatRequestBody, type FakeReply } from "./fakes/openai-server.js";
import { waitFor } from "./harness/actors.js";
import { CliClient, TestSystem } from "./harness/system.js";

const S = subjects();
const user = (text: string): LlmMessage => ({ role: "user", content: [{ type: "text", text }] });
const assistant = (text: string, calls: string[] = []): LlmMessage => ({
  role: "assistant", provider: "openai", model: "m", stopReason: calls.length ? "tool_use" : "end_turn",
  content: [...(text ? [{ type: "text" as const, text }] : []), ...calls.map((id) => ({ type: "tool_call" as const, id, name: "read", args: { path: `${id}.txt` } }))],
});
const result = (id: string, text: string): LlmMessage => ({ role: "tool_result", toolCallId: id, toolName: "read", isError: false, content: [{ type: "text", text }] });

/** Every tool call has its result in the same list and no list starts with a tool result. */
function assertPairsIntact(part: LlmMessage[], label: string): void {
  if (part.length > 0) assert.notEqual(part[0]!.role, "tool_result", `${label} starts with a tool result`);
  const calls = part.flatMap((m) => (m.role === "assistant" ? m.content.flatMap((b) => (b.type === "tool_call" ? [b.id] : [])) : []));
  const results = part.flatMap((m) => (m.role === "tool_result" ? [m.toolCallId] : []));
  assert.deepEqual([...calls].sort(), [...results].sort(), `${label}: calls and results together`);
}

describe("compaction building blocks", () => {
  it("estimates tokens: CJK about one per character, Latin about four characters per token", () => {
    const table: Array<[string, number]> = [
      ["", 0],
      ["hello world", 3],
      ["The quick brown fox jumps over the lazy dog", 11],
      ["你好世界", 4],
      ["今天天气很好，我们去公园散步吧。", 16],
      ["こんにちは", 5],
      ["カタカナ", 4],
      ["안녕하세요", 5],
      ["Hello 世界!", 2 + 2],
    ];
    for (const [text, tokens] of table) assert.equal(estimateTextTokens(text), tokens, JSON.stringify(text));
    const latin = "a".repeat(400);
    const chinese = "字".repeat(400);
    assert.equal(estimateTextTokens(latin), 100);
    assert.equal(estimateTextTokens(chinese), 400, "the same length in Chinese costs four times as much");
    // the Latin fast path agrees with the full count on text from every part of Unicode
    const reference = (text: string) => {
      const cjk = [...text.matchAll(/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3000-\u303F\uFF00-\uFFEF]/gu)];
      return cjk.length + Math.ceil((text.length - cjk.reduce((n, m) => n + m[0].length, 0)) / 4);
    };
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 2000; i++) {
      const points = Array.from({ length: 1 + Math.floor(random() * 12) }, () => (random() < 0.5 ? 0x20 + Math.floor(random() * 0x60) : Math.floor(random() * 0x30000)));
      const text = points.filter((p) => p < 0xd800 || p > 0xdfff).map((p) => String.fromCodePoint(p)).join("");
      assert.equal(estimateTextTokens(text), reference(text), JSON.stringify(text));
    }
    assert.equal(estimateMessageTokens(user("abcd")), MESSAGE_OVERHEAD_TOKENS + 1);
    const image: LlmMessage = { role: "user", content: [{ type: "image", mime: "image/png", dataBase64: "A".repeat(100_000) }] };
    assert.equal(estimateMessageTokens(image), MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS, "an image counts a fixed amount, not its bytes");
    const bigArgs: LlmMessage = { ...assistant(""), content: [{ type: "tool_call", id: "c", name: "write", args: { content: "x".repeat(4000) } }] } as LlmMessage;
    assert.ok(estimateMessageTokens(bigArgs) > 1000, "tool-call arguments are counted");
  });

  it("never splits a tool call from its results, wherever the boundary falls", () => {
    const messages: LlmMessage[] = [
      user("start"), assistant("", ["a", "b"]), result("a", "x".repeat(800)), result("b", "y".repeat(800)),
      assistant("read both"), user("more"), assistant("", ["c"]), result("c", "z".repeat(2000)),
      assistant("", ["d", "e", "f"]), result("d", "1"), result("e", "2".repeat(3000)), result("f", "3"), assistant("done"), user("last"),
    ];
    const units = groupUnits(messages);
    assert.deepEqual(units.map((u) => u.length), [1, 3, 1, 1, 2, 4, 1, 1]);
    for (const keepRecent of [1, 2, 3, 4, 6, 9, 13]) {
      for (const contextWindow of [1_000, 2_000, 4_000, 10_000]) {
        for (const forced of [false, true]) {
          const plan = planCompaction(messages, { contextWindow, keepRecent, forced });
          if (!plan) continue;
          assert.deepEqual([...plan.older, ...plan.kept], messages, "nothing lost or reordered");
          assert.ok(plan.kept.length >= Math.min(keepRecent, messages.length - 1) || plan.older.length > 0);
          assertPairsIntact(plan.older, `older (keep ${keepRecent}, window ${contextWindow})`);
          assertPairsIntact(plan.kept, `kept (keep ${keepRecent}, window ${contextWindow})`);
        }
      }
    }
    for (const parts of [2, 3, 5]) for (const chunk of splitByTokenShare(units, parts)) assertPairsIntact(chunk, `chunk of ${parts}`);
    assert.equal(planCompaction([user("a"), assistant("b")], { contextWindow: 10_000, keepRecent: 4 }), undefined, "nothing older than the kept messages");
  });

  it("lowers the kept share when messages are large (adaptive chunk ratio)", () => {
    const small = Array.from({ length: 20 }, (_, i) => user(`message ${i}`));
    assert.equal(computeAdaptiveChunkRatio(small, 128_000), BASE_CHUNK_RATIO);
    assert.equal(computeAdaptiveChunkRatio([], 128_000), BASE_CHUNK_RATIO);
    // average ~2,500 tokens in a 16k window: 0.1875 of it (with the safety margin) -> reduced
    const large = Array.from({ length: 4 }, () => user("w".repeat(10_000)));
    const reduced = computeAdaptiveChunkRatio(large, 16_000);
    assert.ok(reduced < BASE_CHUNK_RATIO && reduced >= MIN_CHUNK_RATIO, `ratio ${reduced}`);
    assert.equal(computeAdaptiveChunkRatio(large, 4_000), MIN_CHUNK_RATIO, "never below the minimum");
    assert.ok(computeAdaptiveChunkRatio(large, 8_000) <= reduced, "larger messages relative to the window -> smaller ratio");
  });

  it("builds the model's view from the latest summary and the first kept record", () => {
    const rec = (id: string, extra: Partial<TranscriptRecord> = {}): TranscriptRecord => ({ id, ts: 1, kind: "message", message: user(id), ...extra });
    const records = [rec("m1"), rec("m2"), rec("m3"), { id: "s0", ts: 1, kind: "compaction_summary" as const, text: "old", meta: { firstKeptId: "m2" } }, rec("m4"),
      { id: "s1", ts: 1, kind: "compaction_summary" as const, text: "new", meta: { firstKeptId: "m3", lastSummarizedId: "m2" } }, rec("m5")];
    assert.deepEqual(compactedView(records).map((r) => r.id), ["s1", "m3", "m4", "m5"]);
    assert.deepEqual(compactedView(records.filter((r) => r.id !== "m3")).map((r) => r.id), ["s1", "m4", "m5"], "kept record held apart: after the last summarized one");
    assert.deepEqual(compactedView(records.slice(4)).map((r) => r.id), ["s1", "m4", "m5"], "both before the window: all kept");
    assert.deepEqual(compactedView(records.slice(0, 3)).map((r) => r.id), ["m1", "m2", "m3"], "no summary: unchanged");
  });

  it("parses the consolidation answer strictly and plans the older half", () => {
    assert.deepEqual(parseConsolidationAnswer('```json\n{"history_entry":"[2025-01-01 10:00] x","memory_update":"y"}\n```'), { history_entry: "[2025-01-01 10:00] x", memory_update: "y" });
    for (const bad of ["", "no json here", '{"history_entry":"x"}', '{"history_entry":"","memory_update":"y"}', '{"history_entry":"x","memory_update":', "[1,2]"]) {
      assert.equal(parseConsolidationAnswer(bad), undefined, bad);
    }
    const records: TranscriptRecord[] = Array.from({ length: 10 }, (_, i) => ({ id: `r${i}`, ts: 1, kind: "message", message: i % 2 ? assistant(`a${i}`) : user(`u${i}`) }));
    assert.equal(planConsolidation(records.slice(0, 5), 6), undefined);
    const plan = planConsolidation(records, 6)!;
    assert.equal(plan.throughId, "r6", "all but the newest window/2 messages");
    assert.deepEqual(plan.records.map((r) => r.id), ["r0", "r1", "r2", "r3", "r4", "r5", "r6"]);
    const marker: TranscriptRecord = { id: plan.markerId, ts: 1, kind: "context_note", meta: { consolidation: true, throughId: "r6" } };
    assert.equal(planConsolidation([...records, marker], 6), undefined, "counted from the marker's record");
    assert.equal(planConsolidation([...records, marker, ...records.map((r) => ({ ...r, id: `${r.id}b` }))], 6)!.throughId, "r6b");
  });
});

describe("compaction and memory through the system", () => {
  let system: TestSystem;
  let client: CliClient;
  let router: NatsConnection;
  let observer: NatsConnection;
  let js: JetStreamClient;
  let bus: BusClient;
  const events: RunEvent[] = [];
  const summarizerPrompts: string[] = [];
  const consolidationPrompts: string[] = [];
  /** the model each summarizer request named */
  const summarizerModels: string[] = [];
  /** a model whose summarizer requests get a 429 */
  let refuseSummariesOn: string | undefined;
  let consolidationAnswer = "";
  let acks = 0;
  let counter = 0;

  const systemText = (b: ChatRequestBody) => messageText(b.messages.find((m) => m.role === "system"));
  const isHousekeeping = (b: ChatRequestBody) => /^You are a (conversation summarizer|memory consolidation agent)/.test(systemText(b));
  const mainRequests = () => system.fake.requests.map((r) => r.body).filter((b) => !isHousekeeping(b));
  const allText = (b: ChatRequestBody) => b.messages.map(messageText).join("\n");
  const requestWith = (marker: string) => mainRequests().filter((b) => messageText(b.messages.at(-1)).includes(marker));

  const writeConfig = async (config: Record<string, unknown>) => {
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({ models: { entries: { "openai/test-model": { contextWindow: 40_000 } } }, ...config }));
    await system.actors.get("agent-runner")!.stop();
    await system.startActor("agent-runner");
  };

  const history = async (sessionKey: string) => (await bus.call("sessions", "history", { sessionKey, limit: 1000 })).records;

  /** Publishes a run request as the router would and waits for its terminal event. */
  async function run(sessionKey: string, text: string, options: RunRequest["options"] = {}): Promise<{ runId: string; terminal: RunEvent }> {
    const n = ++counter;
    const runId = `run-compaction-${n}-${Date.now().toString(36)}`;
    const req: RunRequest = {
      type: "lurk.run.request.v1", id: `req-${runId}`, ts: Date.now(), runId, sessionKey, agentId: "main", sessionType: "dm", trigger: "message",
      inputs: [{ kind: "user", text, attachments: [] }], origin: { channel: "cli", conversation: `compaction-${n}`, messageIds: [`m-${n}`] },
      deliver: true, options,
    } as RunRequest;
    await js.publish(S.runRequest("main"), JSON.stringify(req), { msgID: runId });
    const terminal = await waitFor(() => events.find((e) => e.runId === runId && (e.event.kind === "done" || e.event.kind === "error")), 60_000, `the end of ${runId}`);
    return { runId, terminal };
  }

  before(async () => {
    system = await TestSystem.start();
    system.fake.responder = (body): FakeReply | undefined => {
      const prompt = messageText(body.messages.at(-1));
      if (/^You are a conversation summarizer/.test(systemText(body))) {
        summarizerModels.push(body.model);
        if (body.model === refuseSummariesOn) return { kind: "error", status: 429 };
        summarizerPrompts.push(prompt);
        return { kind: "text", text: prompt.startsWith("Merge these") ? "MERGED-SUMMARY of the earlier talk" : `PARTIAL-SUMMARY-${summarizerPrompts.length}` };
      }
      if (/^You are a memory consolidation agent/.test(systemText(body))) {
        consolidationPrompts.push(prompt);
        return { kind: "text", text: consolidationAnswer };
      }
      if (system.fake.queued > 0) return undefined;
      return { kind: "text", text: `ack${++acks}` };
    };
    await writeConfig({ compaction: { thresholdRatio: 0.8, reserveTokens: 0, keepRecent: 2 }, memory: { enabled: false } });
    client = await CliClient.connect(system.nats, "compaction");
    router = await system.nats.connect("router");
    js = jetstream(router);
    observer = await system.nats.connect("cli");
    bus = new BusClient(observer);
    observer.subscribe(S.runEventAll, {
      callback: (_e, msg) => {
        const parsed = runEventSchema.safeParse(safeParseJson(msg.data));
        if (parsed.success) events.push(parsed.data);
      },
    });
    await observer.flush();
  });
  after(async () => {
    await Promise.all([client?.close(), router?.close(), observer?.close()]);
    await system?.stop();
  });

  it("summarizes in stages through the real provider: chunk summaries, then one merge", async () => {
    const provider = new OpenAIProvider({ baseUrl: system.fake.baseUrl, apiKey: "sk-test-0123456789abcdef", timeoutMs: 10_000 });
    const complete = providerComplete(provider, "test-model", { signal: new AbortController().signal, timeoutMs: 10_000 });
    const older: LlmMessage[] = [];
    for (let i = 0; i < 6; i++) older.push(user(`question ${i} ${"q".repeat(2000)}`), assistant("", [`t${i}`]), result(`t${i}`, `answer ${i} ${"r".repeat(2000)}`), assistant(`said ${i}`));
    const before = summarizerPrompts.length;
    const summary = await summarizeInStages(older, complete, { contextWindow: 8_000, instructions: "mention every question number" });
    const prompts = summarizerPrompts.slice(before);
    assert.equal(summary.text, "MERGED-SUMMARY of the earlier talk");
    assert.ok(summary.parts >= 2, `parts ${summary.parts}`);
    assert.equal(prompts.length, summary.parts + 1);
    const merge = prompts.at(-1)!;
    assert.match(merge, /^Merge these partial summaries/);
    for (let p = 0; p < summary.parts; p++) assert.ok(merge.includes(`--- Part ${p + 1} ---\nPARTIAL-SUMMARY-`), `merge prompt has part ${p + 1}`);
    for (const chunk of prompts.slice(0, -1)) {
      assert.ok(chunk.includes("mention every question number"));
      const called = [...chunk.matchAll(/\[called read /g)].length;
      const results = [...chunk.matchAll(/Tool result \(read\)/g)].length;
      assert.equal(called, results, "a chunk holds each call with its result");
    }
    assert.ok(summary.usage.total > 0 || summary.usage.input > 0, "usage summed");
  });

  it("compacts a session that passes the threshold: the model then sees the summary, not the old messages", async () => {
    const filler = (mark: string) => `${mark} ${"alpha ".repeat(6_000)}`; // ~9k tokens
    const compactions = () => events.filter((e) => e.event.kind === "compaction");
    let compactedAt = 0;
    for (let i = 1; i <= 6 && compactedAt === 0; i++) {
      const { runId } = await client.send(filler(`MARK-${i}`), { sessionName: "long", timeoutMs: 60_000 });
      // the reply can overtake the run's events; its terminal event comes after its compaction event
      await waitFor(() => events.some((e) => e.runId === runId && (e.event.kind === "done" || e.event.kind === "error")), 10_000, "the run's terminal event");
      if (compactions().length > 0) compactedAt = i;
    }
    assert.ok(compactedAt >= 2, `compacted after message ${compactedAt}`);
    const ev = compactions()[0]!.event as Extract<RunEvent["event"], { kind: "compaction" }>;
    assert.equal(ev.reason, "threshold");
    assert.ok(ev.messagesAfter < ev.messagesBefore);
    const [req] = requestWith(`MARK-${compactedAt}`);
    assert.ok(req, "the compacting run called the model");
    const text = allText(req);
    assert.ok(text.includes("[summary of the earlier conversation] MERGED-SUMMARY"), "the summary is in the context");
    for (let i = 1; i < compactedAt; i++) assert.ok(!text.includes(`MARK-${i} `), `MARK-${i} is no longer sent`);
    if (compactedAt > 2) assert.ok(allText(requestWith(`MARK-${compactedAt - 1}`)[0]!).includes("MARK-1 "), "before the compaction everything was sent");

    const reply = await client.send("AFTER-COMPACTION", { sessionName: "long", timeoutMs: 60_000 });
    assert.match(reply.text, /^ack/);
    const next = allText(requestWith("AFTER-COMPACTION")[0]!);
    assert.ok(next.includes("MERGED-SUMMARY") && next.includes(`MARK-${compactedAt} `), "a later run starts from the summary and the kept messages");
    assert.ok(!next.includes("MARK-1 "), "the old messages stay out");
    const sessionKey = (await bus.call("sessions", "list", {})).sessions.find((s) => s.sessionKey.endsWith(":long"))?.sessionKey;
    assert.ok(sessionKey, "the session exists");
    const summaries = (await history(sessionKey)).filter((r) => r.kind === "compaction_summary");
    assert.equal(summaries.length, 1);
    assert.equal(summaries[0]!.meta?.reason, "threshold");
    assert.equal(typeof summaries[0]!.meta?.firstKeptId, "string");
  });

  it("compacts and retries once when the provider says the context overflowed", async () => {
    const sessionKey = "agent:main:cli:dm:overflow";
    await run(sessionKey, "OVF-ONE hello");
    await run(sessionKey, "OVF-TWO hello again");
    system.fake.enqueue({ kind: "error", status: 400, code: "context_length_exceeded", message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens." });
    const { runId, terminal } = await run(sessionKey, "OVF-THREE now");
    assert.equal(terminal.event.kind, "done", JSON.stringify(terminal.event));
    const compaction = events.find((e) => e.runId === runId && e.event.kind === "compaction");
    assert.equal((compaction?.event as { reason?: string } | undefined)?.reason, "overflow");
    const attempts = requestWith("OVF-THREE");
    assert.equal(attempts.length, 2, "the refused call and one retry");
    assert.ok(allText(attempts[0]!).includes("OVF-ONE"));
    const retried = allText(attempts[1]!);
    assert.ok(retried.includes("[summary of the earlier conversation]") && !retried.includes("OVF-ONE"), "the retry sends the summary instead");
  });

  it("fails the run when the overflow persists after the one retry", async () => {
    const sessionKey = "agent:main:cli:dm:overflow2";
    await run(sessionKey, "OVX-ONE hello");
    await run(sessionKey, "OVX-TWO hello");
    const overflow: FakeReply = { kind: "error", status: 400, code: "context_length_exceeded", message: "maximum context length exceeded" };
    system.fake.enqueue(overflow, overflow);
    const { terminal } = await run(sessionKey, "OVX-THREE");
    assert.equal(terminal.event.kind, "error");
    assert.equal((terminal.event as { code: string }).code, "PROVIDER_CONTEXT_OVERFLOW");
    assert.equal(requestWith("OVX-THREE").length, 2, "exactly one retry");
  });

  it("/compact (options.command) compacts now and replies with the numbers, without a model turn", async () => {
    const sessionKey = "agent:main:cli:dm:compactme";
    await run(sessionKey, "CMP-ONE first");
    await run(sessionKey, "CMP-TWO second");
    const before = summarizerPrompts.length;
    const mainBefore = mainRequests().length;
    const { runId, terminal } = await run(sessionKey, "/compact keep the project names", { command: "compact" });
    assert.equal(terminal.event.kind, "done");
    assert.match((terminal.event as { text: string }).text, /^Compacted 2 messages into a summary \(≈\d+(\.\d)?k? → \d+(\.\d)?k? tokens\)\.$/);
    assert.equal(mainRequests().length, mainBefore, "no model turn");
    assert.ok(summarizerPrompts.slice(before).some((p) => p.includes("keep the project names") && p.includes("CMP-ONE")), "the instructions reach the summarizer");
    assert.ok(events.some((e) => e.runId === runId && e.event.kind === "compaction" && e.event.reason === "command"));
    const records = await history(sessionKey);
    assert.ok(!records.some((r) => r.runId === runId && r.kind === "message"), "the command itself is not stored as a message");
    assert.equal(records.filter((r) => r.kind === "compaction_summary").length, 1);
    await run(sessionKey, "CMP-THREE next");
    const next = allText(requestWith("CMP-THREE")[0]!);
    assert.ok(next.includes("[summary of the earlier conversation]") && next.includes("CMP-TWO") && !next.includes("CMP-ONE"));
  });

  it("compacts between turns when tool results grow the context past the threshold during a run", async () => {
    const sessionKey = "agent:main:cli:dm:midrun";
    const file = (mark: string) => Array.from({ length: 1_200 }, (_, i) => `${mark} line ${i} alpha beta gamma delta`).join("\n");
    for (const mark of ["MIDRUN-A", "MIDRUN-B", "MIDRUN-C"]) writeFileSync(join(system.workspace, `${mark}.txt`), file(mark));
    system.fake.enqueue(
      { kind: "tool_calls", calls: [{ id: "mid_a", name: "read", arguments: { path: "MIDRUN-A.txt" } }] },
      { kind: "tool_calls", calls: [{ id: "mid_b", name: "read", arguments: { path: "MIDRUN-B.txt" } }] },
      { kind: "tool_calls", calls: [{ id: "mid_c", name: "read", arguments: { path: "MIDRUN-C.txt" } }] },
    );
    const mainBefore = mainRequests().length;
    const { runId, terminal } = await run(sessionKey, "MIDRUN-ASK read the three files");
    assert.equal(terminal.event.kind, "done", JSON.stringify(terminal.event));
    const calls = mainRequests().slice(mainBefore).map(allText);
    assert.equal(calls.length, 4, "three tool turns and the answer");
    const runEvents = events.filter((e) => e.runId === runId).map((e) => e.event);
    const compactions = runEvents.filter((e) => e.kind === "compaction");
    assert.ok(compactions.length >= 1, "compacted during the run");
    assert.ok(compactions.every((e) => e.reason === "threshold"), JSON.stringify(compactions));
    const firstAt = runEvents.findIndex((e) => e.kind === "compaction");
    const turnOfFirst = (runEvents.slice(0, firstAt).findLast((e) => e.kind === "turn_start") as { turn: number }).turn;
    assert.ok(turnOfFirst >= 2, `the first compaction comes before call ${turnOfFirst}, after tool results grew the context`);
    const before = calls[turnOfFirst - 2]!;
    assert.ok(before.includes("MIDRUN-A line") && !before.includes("[summary of the earlier conversation]"), "below the threshold everything is sent");
    const last = calls[3]!;
    assert.ok(last.includes("[summary of the earlier conversation]"), "the last call starts from the summary");
    assert.ok(last.includes("MIDRUN-C line"), "the newest tool result is kept verbatim");
    assert.ok(!last.includes("MIDRUN-A line"), "the first tool result is summarized, not sent again");
    const records = await history(sessionKey);
    const summary = records.find((r) => r.kind === "compaction_summary" && r.runId === runId);
    assert.equal(summary?.meta?.reason, "threshold");
    const order = records.filter((r) => r.runId === runId).map((r) => r.kind === "compaction_summary" ? "summary" : r.message?.role === "tool_result" ? `result:${r.message.toolCallId}` : r.kind);
    const firstSummary = order.indexOf("summary");
    assert.ok(firstSummary > order.indexOf("result:mid_a") && order[firstSummary - 1]!.startsWith("result:"), `a summary is stored after the tool results it covers: ${order.join(",")}`);
    await run(sessionKey, "MIDRUN-NEXT");
    const next = allText(requestWith("MIDRUN-NEXT")[0]!);
    assert.ok(next.includes("[summary of the earlier conversation]") && !next.includes("MIDRUN-A line"), "a later run starts from the summary");
  });

  it("consolidates old messages into MEMORY.md and HISTORY.md after the reply; a malformed answer changes nothing", async () => {
    await writeConfig({ compaction: { enabled: false }, memory: { window: 6 } });
    const memoryPath = join(system.workspace, "MEMORY.md");
    const historyPath = join(system.workspace, "memory", "HISTORY.md");
    writeFileSync(memoryPath, "# Memory\n- Likes tea.\n");
    consolidationAnswer = JSON.stringify({
      history_entry: "[2025-01-01 10:00] The user introduced themselves as Ada and asked about tea.",
      memory_update: "# Memory\n- Likes tea.\n- Name: Ada.",
    });
    const sessionKey = "agent:main:cli:dm:memory";
    await run(sessionKey, "MEM-ONE my name is Ada");
    await run(sessionKey, "MEM-TWO what tea?");
    assert.equal(consolidationPrompts.length, 0, "below the window");
    await run(sessionKey, "MEM-THREE thanks");
    await waitFor(() => existsSync(historyPath) && readFileSync(memoryPath, "utf8").includes("Ada"), 20_000, "consolidation");
    assert.equal(consolidationPrompts.length, 1);
    assert.ok(consolidationPrompts[0]!.includes("- Likes tea.") && consolidationPrompts[0]!.includes("MEM-ONE") && !consolidationPrompts[0]!.includes("MEM-THREE"), "current memory and the older messages only");
    assert.equal(readFileSync(memoryPath, "utf8"), "# Memory\n- Likes tea.\n- Name: Ada.\n");
    const historyText = readFileSync(historyPath, "utf8");
    assert.match(historyText, /^\[2025-01-01 10:00\] The user introduced themselves as Ada/);
    const markers = async () => (await history(sessionKey)).filter((r) => r.kind === "context_note" && r.meta?.consolidation === true);
    await waitFor(async () => (await markers()).length === 1, 10_000, "the consolidation marker");

    consolidationAnswer = 'Sure! Here is the update: {"history_entry": "oops", "memory_update": ';
    await run(sessionKey, "MEM-FOUR");
    await run(sessionKey, "MEM-FIVE");
    await waitFor(() => consolidationPrompts.length === 2, 20_000, "the second consolidation call");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(readFileSync(memoryPath, "utf8"), "# Memory\n- Likes tea.\n- Name: Ada.\n", "MEMORY.md unchanged");
    assert.equal(readFileSync(historyPath, "utf8"), historyText, "HISTORY.md unchanged");
    assert.equal((await markers()).length, 1, "no marker: it is tried again later");

    // after a failure the next attempt waits for another half window (3 messages: two runs)
    await run(sessionKey, "MEM-SIX");
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(consolidationPrompts.length, 2, "not tried again after the very next run");
    await run(sessionKey, "MEM-SEVEN");
    await waitFor(() => consolidationPrompts.length === 3, 20_000, "tried again once the session grew");
  });

  it("/new puts the ended session into MEMORY.md and HISTORY.md, all of it since its last consolidation; a short one costs no call", async () => {
    await writeConfig({ compaction: { enabled: false }, memory: { window: 40 } });
    const memoryPath = join(system.workspace, "MEMORY.md");
    const historyPath = join(system.workspace, "memory", "HISTORY.md");
    writeFileSync(memoryPath, "# Memory\n- Likes tea.\n");
    consolidationAnswer = JSON.stringify({
      history_entry: "[2025-02-01 09:00] The user said they moved to Lisbon.",
      memory_update: "# Memory\n- Likes tea.\n- Lives in Lisbon.",
    });
    const before = consolidationPrompts.length;
    await client.send("NEW-ONE I moved to Lisbon", { sessionName: "ending" });
    await client.send("NEW-TWO it is sunny here", { sessionName: "ending" });
    assert.equal(consolidationPrompts.length, before, "far below the window: no consolidation after the runs");
    const notice = await client.send("/new", { sessionName: "ending" });
    assert.match(notice.text, /^Fresh session started/);
    await waitFor(() => consolidationPrompts.length > before, 20_000, "the ended session's consolidation");
    const prompt = consolidationPrompts.at(-1)!;
    assert.ok(prompt.includes("- Likes tea.") && prompt.includes("NEW-ONE") && prompt.includes("NEW-TWO"), "the memory and all of the ended transcript");
    await waitFor(() => readFileSync(memoryPath, "utf8").includes("Lisbon"), 10_000, "MEMORY.md updated");
    assert.match(readFileSync(historyPath, "utf8"), /\[2025-02-01 09:00\] The user said they moved to Lisbon\./);
    assert.ok(!JSON.stringify(await history("agent:main:cli:dm:ending")).includes("NEW-ONE"), "the new transcript starts empty");

    await client.send("NEW-SHORT hi", { sessionName: "short" });
    const calls = consolidationPrompts.length;
    await client.send("/new", { sessionName: "short" });
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(consolidationPrompts.length, calls, "one exchange: no consolidation call");
  });

  it("an idle reset puts the ended transcript into memory: made when a run begins (beside the run), or by the router's ensure (/new)", async () => {
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({ compaction: { enabled: false }, memory: { window: 40 }, sessions: { idleResetMinutes: 1 } }));
    await system.actors.get("sessions")!.stop();
    await system.startActor("sessions");
    await system.actors.get("agent-runner")!.stop();
    await system.startActor("agent-runner");
    const memoryPath = join(system.workspace, "MEMORY.md");
    consolidationAnswer = JSON.stringify({ history_entry: "[2025-03-01 08:00] The user adopted a cat named Miso.", memory_update: "# Memory\n- Has a cat, Miso." });
    await client.send("IDLE-ONE I adopted a cat", { sessionName: "idle-end" });
    await client.send("IDLE-TWO her name is Miso", { sessionName: "idle-end" });
    // a second session, ended by the idle reset that the router's /new (sessions.ensure) makes
    await client.send("IDLEB-ONE I start a new job on Monday", { sessionName: "idle-new" });
    await client.send("IDLEB-TWO at the harbour office", { sessionName: "idle-new" });
    const before = consolidationPrompts.length;
    await new Promise((r) => setTimeout(r, 61_000)); // idleResetMinutes: 1
    const reply = await client.send("IDLE-THREE good morning", { sessionName: "idle-end" });
    assert.match(reply.text, /^ack/, "the run answered (the consolidation does not hold it)");
    await waitFor(() => consolidationPrompts.slice(before).some((p) => p.includes("IDLE-ONE")), 20_000, "the idle-ended transcript's consolidation");
    const prompt = consolidationPrompts.slice(before).find((p) => p.includes("IDLE-ONE"))!;
    assert.ok(prompt.includes("IDLE-TWO") && !prompt.includes("IDLE-THREE"), "the ended transcript, not the new run");
    await waitFor(() => readFileSync(memoryPath, "utf8").includes("Miso"), 10_000, "MEMORY.md updated");
    await client.send("/new", { sessionName: "idle-new" });
    const ended = await waitFor(() => consolidationPrompts.slice(before).find((p) => p.includes("IDLEB-ONE")), 20_000, "the consolidation of the transcript the router's ensure reset");
    assert.ok(ended.includes("IDLEB-TWO"));
  });

  it("backs off consolidation after failures: half a window, doubling, at most four windows", () => {
    const gate = new ConsolidationBackoff();
    assert.equal(gate.due("s", 49, 50), false, "below the window");
    assert.equal(gate.due("s", 50, 50), true);
    gate.record("s", 50, false);
    assert.equal(gate.due("s", 74, 50), false);
    assert.equal(gate.due("s", 75, 50), true, "half a window later");
    gate.record("s", 75, false);
    assert.equal(gate.due("s", 124, 50), false);
    assert.equal(gate.due("s", 125, 50), true, "a full window after the second failure");
    for (let i = 0; i < 10; i++) gate.record("s", 1000, false);
    assert.equal(gate.due("s", 1199, 50), false);
    assert.equal(gate.due("s", 1200, 50), true, "capped at four windows");
    gate.record("s", 1200, true);
    assert.equal(gate.due("s", 50, 50), true, "a success clears the backoff");
    assert.equal(gate.due("other", 50, 50), true, "per session");
  });

  it("consolidation keeps MEMORY.md when the model returns an empty memory, and a repeat appends no second entry", async () => {
    const workspace = join(system.nats.dir, "consolidate-direct");
    const records: TranscriptRecord[] = Array.from({ length: 6 }, (_, i) => ({ id: `d${i}`, ts: 1_700_000_000_000 + i, kind: "message", message: i % 2 ? assistant(`reply ${i}`) : user(`note ${i}`) }));
    const appended: TranscriptRecord[] = [];
    const deps = {
      workspace, window: 6, records, log: createLogger("test", "silent"),
      complete: async () => ({ text: JSON.stringify({ history_entry: "Talked about notes.", memory_update: "  " }), usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }),
      append: async (r: TranscriptRecord[]) => void appended.push(...r),
    };
    const { mkdirSync } = await import("node:fs");
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(workspace, "MEMORY.md"), "keep me\n");
    assert.equal(await consolidate(deps), "done");
    assert.equal(await consolidate(deps), "done", "a repeat (marker not yet seen)");
    assert.equal(readFileSync(join(workspace, "MEMORY.md"), "utf8"), "keep me\n");
    const log = readFileSync(join(workspace, "memory", "HISTORY.md"), "utf8");
    assert.equal(log.match(/Talked about notes\./g)?.length, 1, "one entry");
    assert.match(log, /^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}\] Talked about notes\./, "a timestamp is added when missing");
    assert.equal(new Set(appended.map((r) => r.id)).size, 1, "the same marker id both times");
  });

  it("compaction fails over like the run's calls: a summary the primary model refuses (429) is made by the fallback", async () => {
    await writeConfig({
      models: { entries: { "openai/test-model": { contextWindow: 40_000 }, "openai/fallback-model": { contextWindow: 40_000 } } },
      agents: [{ id: "main", default: true, fallbacks: ["openai/fallback-model"] }],
      compaction: { thresholdRatio: 0.8, reserveTokens: 0, keepRecent: 2 }, memory: { enabled: false },
    });
    const sessionKey = "agent:main:cli:dm:compact-failover";
    await run(sessionKey, "CFO-ONE first");
    await run(sessionKey, "CFO-TWO second");
    refuseSummariesOn = "test-model";
    const asked = summarizerModels.length;
    const { terminal } = await run(sessionKey, "/compact", { command: "compact" });
    refuseSummariesOn = undefined;
    assert.equal(terminal.event.kind, "done", JSON.stringify(terminal.event));
    assert.match((terminal.event as { text: string }).text, /^Compacted 2 messages into a summary/);
    assert.deepEqual(summarizerModels.slice(asked), ["test-model", "fallback-model"], "the primary refused; the fallback summarized");
    assert.equal((await history(sessionKey)).filter((r) => r.kind === "compaction_summary").length, 1);
    // the primary model now cools down: the next turn of the run goes to the fallback, announced
    const { runId } = await run(sessionKey, "CFO-THREE next");
    assert.ok(events.some((e) => e.runId === runId && e.event.kind === "provider_switch" && e.event.to === "openai/fallback-model"));
    assert.equal(requestWith("CFO-THREE")[0]?.model, "fallback-model");
  });

  it("compaction.model writes the summaries while the run keeps its model; refused, the run's model summarizes", async () => {
    await writeConfig({
      models: { entries: { "openai/test-model": { contextWindow: 40_000 }, "openai/summary-model": { contextWindow: 40_000 } } },
      compaction: { thresholdRatio: 0.8, reserveTokens: 0, keepRecent: 2, model: "openai/summary-model" }, memory: { enabled: false },
    });
    const sessionKey = "agent:main:cli:dm:compact-model";
    await run(sessionKey, "CMOD-ONE first");
    await run(sessionKey, "CMOD-TWO second");
    let asked = summarizerModels.length;
    const first = await run(sessionKey, "/compact", { command: "compact" });
    assert.match((first.terminal.event as { text?: string }).text ?? "", /^Compacted 2 messages into a summary/, JSON.stringify(first.terminal.event));
    assert.deepEqual(summarizerModels.slice(asked), ["summary-model"]);
    await run(sessionKey, "CMOD-THREE third");
    assert.equal(requestWith("CMOD-THREE")[0]?.model, "test-model", "the run's own turns stay on the run's model");
    await run(sessionKey, "CMOD-FOUR fourth");
    refuseSummariesOn = "summary-model";
    asked = summarizerModels.length;
    const second = await run(sessionKey, "/compact", { command: "compact" });
    refuseSummariesOn = undefined;
    assert.equal(second.terminal.event.kind, "done", JSON.stringify(second.terminal.event));
    assert.deepEqual(summarizerModels.slice(asked), ["summary-model", "test-model"], "the summary model refused; the run's model summarized");
  });
});
