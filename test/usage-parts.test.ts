/**
 * The usage ledger by model and purpose through real actors: nats-server with the sessions,
 * agent-runner and tools actors as child processes, the models local fake servers speaking the
 * OpenAI and Anthropic wire formats. A run that fails over (gpt-4o answers its first turn, then a
 * 429; sonnet answers) adds a row per model, each priced at its own model's prices, the run counted
 * once; `/compact` with `compaction.model` books the summary under `compaction` at that model; the
 * consolidation of a transcript a reset ended under `consolidation`; a long reply's summary for
 * speech under `tts`; memory_search's embeddings
 * under `embedding`, booked to the calling session's agent; a run end delivered again and a usage
 * request repeated with its idempotency key count once; `lurkbot usage --by model,purpose` shows it.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  subjects, utcDay, type RunEvent, type RunRequest, type Usage, type UsageReport, type UsageReportRow,
} from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { FakeAnthropicServer } from "./fakes/anthropic-server.js";
import { FakeOpenAIServer, messageText, type ChatRequestBody, type FakeReply } from "./fakes/openai-server.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { TestNats } from "./harness/nats.js";
import { runDirect } from "./harness/run-request.js";
import { toolCaller } from "./harness/tools-actor.js";

const S = subjects();
type UsageEvent = Extract<RunEvent["event"], { kind: "usage" }>;
const near = (a: number, b: number, what = "") => assert.ok(Math.abs(a - b) < 1e-12, `${what} ${a} ≈ ${b}`);
/** USD per million tokens: input, output, cache read (the built-in table, shared/runtime/models.ts) */
const PRICES: Record<string, [number, number, number, number]> = {
  "openai/gpt-4o": [2.5, 10, 1.25, 2.5],
  "anthropic/claude-sonnet-4-6": [3, 15, 0.3, 3.75],
  "openai/gpt-4.1-nano": [0.1, 0.4, 0.025, 0.1],
  "openai/text-embedding-3-small": [0.02, 0, 0.02, 0.02],
};
const priced = (model: string, u: Pick<Usage, "input" | "output" | "cacheRead" | "cacheWrite">) => {
  const [i, o, r, w] = PRICES[model]!;
  return (u.input * i + u.output * o + u.cacheRead * r + u.cacheWrite * w) / 1e6;
};

describe("the usage ledger by model and purpose (sessions, agent-runner and tools actors)", () => {
  let nats: TestNats;
  let openai: FakeOpenAIServer;
  let anthropic: FakeAnthropicServer;
  let sessions: ActorProcess;
  let runner: ActorProcess;
  let tools: ActorProcess;
  let router: NatsConnection;
  let admin: NatsConnection;
  let runnerNc: NatsConnection;
  let js: JetStreamClient;
  let bus: BusClient;
  let ws: string;
  let counter = 0;
  const today = () => utcDay(Date.now());
  const report = (groupBy: Array<"model" | "purpose" | "agent" | "sessionType" | "channel">, agentId: string) =>
    bus.call("sessions", "usage_report", { from: today(), groupBy, agentId });
  const find = (rows: UsageReportRow[], model: string, purpose: string) => rows.find((r) => r.model === model && r.purpose === purpose);
  const systemText = (b: ChatRequestBody) => messageText(b.messages.find((m) => m.role === "system"));

  before(async () => {
    nats = await TestNats.start();
    [openai, anthropic] = await Promise.all([FakeOpenAIServer.start(), FakeAnthropicServer.start()]);
    // the summarizer and the consolidation answer by their prompts; everything else as scripted, else "echo"
    openai.responder = (body): FakeReply | undefined => {
      if (/^You are a conversation summarizer/.test(systemText(body))) return { kind: "text", text: "SUMMARY of the earlier talk" };
      if (/^You rewrite an assistant's reply so it can be read aloud/.test(systemText(body))) return { kind: "text", text: "A short spoken summary." };
      if (/^You are a memory consolidation agent/.test(systemText(body))) {
        return { kind: "text", text: JSON.stringify({ history_entry: "[2026-11-28 10:00] Talked about the ledger.", memory_update: "# Memory\n- Tracks costs." }) };
      }
      return undefined;
    };
    ws = mkdtempSync(join(tmpdir(), "lurk-usage-parts-"));
    writeFileSync(join(ws, "notes.txt"), "the notes");
    writeFileSync(join(ws, "MEMORY.md"), "# Memory\n\n## Garage\nMy car is a blue Volvo.\n");
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({
      model: "openai/gpt-4o",
      providers: { openai: { baseUrl: openai.baseUrl, apiKey: "sk-usage-parts-0123456789" }, anthropic: { baseUrl: anthropic.url, apiKey: "sk-ant-usage-0123456789" } },
      agents: [{ id: "main", default: true, fallbacks: ["sonnet"] }, { id: "house", model: "openai/gpt-4o-mini" }],
      compaction: { model: "openai/gpt-4.1-nano", keepRecent: 2 },
      memory: { embeddings: { model: "openai/text-embedding-3-small", timeoutMs: 10_000 } },
      tts: { maxChars: 100, summaryModel: "openai/gpt-4.1-nano" },
    }));
    [sessions, tools] = await Promise.all([startActorProcess("sessions", nats), startActorProcess("tools", nats, { LURKBOT_WORKSPACE: ws })]);
    runner = await startActorProcess("agent-runner", nats, { LURKBOT_LOG_LEVEL: "info" });
    [router, admin, runnerNc] = await Promise.all([nats.connect("router"), nats.connect("admin"), nats.connect("agent-runner")]);
    js = jetstream(router);
    bus = new BusClient(runnerNc);
  });
  after(async () => {
    await Promise.all([router?.close(), admin?.close(), runnerNc?.close()]);
    await Promise.all([runner?.stop(), tools?.stop(), sessions?.stop()]);
    await Promise.all([openai?.close(), anthropic?.close()]);
    await nats?.stop();
    rmSync(ws, { recursive: true, force: true });
  });

  /** Publishes a run request as the router would and waits for its terminal event. */
  async function run(text: string, opts: { sessionKey: string; agentId?: string; options?: RunRequest["options"] }) {
    return runDirect(admin, js, "u", ++counter, text, opts);
  }


  it("a run that fails over adds one row per model, each priced at its own model; the run counts once, on the fallback", async () => {
    openai.enqueue(
      { kind: "tool_calls", calls: [{ id: "call_usage_1", name: "read", arguments: { path: "notes.txt" } }] },
      { kind: "error", status: 429 },
    );
    const r = await run("read notes.txt", { sessionKey: "agent:main:cli:dm:usage-failover" });
    assert.equal(r.terminal.kind, "done", JSON.stringify(r.terminal));
    assert.ok(r.events.some((e) => e.event.kind === "provider_switch"), "the run switched model");
    const used = r.events.filter((e) => e.event.kind === "usage").map((e) => e.event as UsageEvent);
    assert.deepEqual(used.map((u) => `${u.provider}/${u.model}`), ["openai/gpt-4o", "anthropic/claude-sonnet-4-6"]);

    const rows = (await report(["model", "purpose"], "main")).rows;
    assert.deepEqual(rows.map((x) => [x.model, x.purpose, x.runs]), [["anthropic/claude-sonnet-4-6", "turn", 1], ["openai/gpt-4o", "turn", 0]]);
    for (const u of used) {
      const ref = `${u.provider}/${u.model}`;
      const row = find(rows, ref, "turn")!;
      assert.deepEqual([row.input, row.output, row.cacheRead, row.cacheWrite, row.total], [u.usage.input, u.usage.output, u.usage.cacheRead, u.usage.cacheWrite, u.usage.total], ref);
      near(row.costUsd, priced(ref, u.usage), ref);
    }
    // the session's own counters keep the run's total and the model it ended on
    const done = r.terminal as Extract<RunEvent["event"], { kind: "done" }>;
    const session = (await bus.call("sessions", "get", { sessionKey: "agent:main:cli:dm:usage-failover" })).session!;
    assert.deepEqual([session.usage.total, session.model], [done.usage.total, "anthropic/claude-sonnet-4-6"]);
    assert.equal(done.usage.total, rows.reduce((n, x) => n + x.total, 0));

    // the same run request delivered again (another message id): it is found finished, nothing is counted again
    await js.publish(S.runRequest("main"), JSON.stringify(r.req), { msgID: `${r.req.runId}-again` });
    await waitFor(() => runner.output().split("run already finished").length > 1, 15_000, "the replayed run");
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual((await report(["model", "purpose"], "main")).rows, rows);
  });

  it("/compact with compaction.model books the summary under `compaction` at that model's prices", async () => {
    const sessionKey = "agent:house:cli:dm:usage-compact";
    await run("COMPACT-ONE first", { sessionKey, agentId: "house" });
    await run("COMPACT-TWO second", { sessionKey, agentId: "house" });
    const compacted = await run("/compact", { sessionKey, agentId: "house", options: { command: "compact" } });
    assert.equal(compacted.terminal.kind, "done", JSON.stringify(compacted.terminal));
    const done = compacted.terminal as Extract<RunEvent["event"], { kind: "done" }>;
    assert.ok(done.usage.total > 0);
    const rows = (await report(["model", "purpose"], "house")).rows;
    const summary = find(rows, "openai/gpt-4.1-nano", "compaction")!;
    assert.ok(summary, JSON.stringify(rows));
    assert.deepEqual([summary.runs, summary.input, summary.output, summary.total], [0, done.usage.input, done.usage.output, done.usage.total], "the /compact run's usage is its summary");
    near(summary.costUsd, priced("openai/gpt-4.1-nano", summary));
    const turns = find(rows, "openai/gpt-4o-mini", "turn")!;
    assert.equal(turns.runs, 3, "two runs and the /compact run: a run counts on its model's turns, even with no tokens of its own");
  });

  it("the consolidation of a transcript a reset ended books its call under `consolidation`, to the session's agent", async () => {
    const sessionKey = "agent:house:cli:dm:usage-memory";
    await run("MEM-ONE I track costs", { sessionKey, agentId: "house" });
    await run("MEM-TWO every day", { sessionKey, agentId: "house" });
    const { previousSessionId } = await bus.call("sessions", "reset", { sessionKey, reason: "new" });
    const req = {
      type: "lurk.run.request.v1", id: `req-consolidate-${Date.now()}`, ts: Date.now(), runId: `run-consolidate-${Date.now().toString(36)}`,
      sessionKey, agentId: "house", sessionType: "dm", trigger: "system",
      inputs: [{ kind: "system_event", text: "consolidate the ended session into memory", attachments: [] }], deliver: false,
      options: { command: "consolidate", previousSessionId },
    };
    await js.publish(S.runRequest("house"), JSON.stringify(req), { msgID: req.runId });
    const row = await waitFor(async () => find((await report(["model", "purpose", "channel", "sessionType"], "house")).rows, "openai/gpt-4.1-nano", "consolidation"), 30_000, "the consolidation's usage");
    assert.deepEqual([row.runs, row.channel, row.sessionType], [0, "cli", "dm"]);
    assert.ok(row.input > 0 && row.output > 0);
    near(row.costUsd, priced("openai/gpt-4.1-nano", row));
  });

  it("a long reply's summary for speech is booked under `tts` at the summary model, with the run's end", async () => {
    const long = "The ledger now books every model call. ".repeat(8).trim();
    openai.enqueue({ kind: "text", text: long });
    const r = await run("tell me about the ledger", { sessionKey: "agent:house:cli:dm:usage-tts", agentId: "house", options: { tts: "always" } });
    assert.equal(r.terminal.kind, "done", JSON.stringify(r.terminal));
    const turn = r.events.filter((e) => e.event.kind === "usage").map((e) => (e.event as UsageEvent).usage)[0]!;
    const done = r.terminal as Extract<RunEvent["event"], { kind: "done" }>;
    const rows = (await report(["model", "purpose"], "house")).rows;
    const speech = find(rows, "openai/gpt-4.1-nano", "tts")!;
    assert.ok(speech, JSON.stringify(rows));
    assert.equal(speech.runs, 0);
    assert.equal(speech.total, done.usage.total - turn.total, "the run's usage is its turn and the speech summary");
    near(speech.costUsd, priced("openai/gpt-4.1-nano", speech));
  });

  it("memory_search's embeddings are booked under `embedding` to the calling session's agent, priced at the embedding model", async () => {
    const before = openai.embedRequests.length;
    const { ok } = toolCaller(() => bus);
    await bus.call("sessions", "ensure", { sessionKey: "agent:main:main", agentId: "main", sessionType: "main", channel: "cli" });
    const text = await ok("memory_search", { query: "automobile" });
    assert.match(text, /hybrid ranking/);
    const embedded = openai.embedRequests.slice(before).flatMap((r) => r.input);
    assert.ok(embedded.length > 0);
    const tokens = embedded.reduce((n, t) => n + Math.max(1, Math.ceil(t.length / 4)), 0);
    const row = await waitFor(async () => {
      const found = find((await report(["model", "purpose", "agent", "sessionType"], "main")).rows, "openai/text-embedding-3-small", "embedding");
      return found && found.input === tokens ? found : undefined;
    }, 15_000, `the embedding usage (${tokens} tokens)`);
    assert.deepEqual([row.agentId, row.sessionType, row.runs, row.output], ["main", "main", 0, 0]);
    near(row.costUsd, priced("openai/text-embedding-3-small", row));
  });

  it("a usage request repeated with its idempotency key is counted once", async () => {
    const body = { sessionKey: "agent:main:main", usage: { input: 400, output: 0, cacheRead: 0, cacheWrite: 0, total: 400 }, model: "text-embedding-3-small", provider: "openai", purpose: "embedding" as const, idempotencyKey: "usage:repeat-me" };
    const before = find((await report(["model", "purpose"], "main")).rows, "openai/text-embedding-3-small", "embedding")!;
    const first = await bus.call("sessions", "usage", body);
    const second = await bus.call("sessions", "usage", body);
    assert.deepEqual([first.duplicate, second.duplicate], [false, true]);
    const afterRow = find((await report(["model", "purpose"], "main")).rows, "openai/text-embedding-3-small", "embedding")!;
    assert.equal(afterRow.input, before.input + 400);
    // a malformed purpose is a typed error
    await assert.rejects(bus.call("sessions", "usage", { ...body, purpose: "lunch" as never }), (e: unknown) => (e as { code?: string }).code === "VALIDATION_FAILED");
  });

  it("lurkbot usage --by model,purpose shows the purpose column; --json has it in every row", async () => {
    const env = nats.env(nats.passwordEnv("cli"));
    const r = await runCli(["usage", "--days", "1", "--by", "model,purpose"], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /, by model, purpose$/m);
    assert.match(r.stdout, /^MODEL\s+PURPOSE\s+RUNS\s+INPUT\s+OUTPUT/m);
    assert.match(r.stdout, /^openai\/gpt-4\.1-nano\s+compaction\s+0\s+\d+/m);
    assert.match(r.stdout, /^openai\/gpt-4\.1-nano\s+consolidation\s+0\s+\d+/m);
    assert.match(r.stdout, /^openai\/text-embedding-3-small\s+embedding\s+0\s+\d+\s+0\s+/m);
    assert.match(r.stdout, /^openai\/gpt-4\.1-nano\s+tts\s+0\s+\d+/m);
    assert.match(r.stdout, /^anthropic\/claude-sonnet-4-6\s+turn\s+1\s+/m);
    const json = await runCli(["usage", "--json", "--days", "1", "--by", "purpose"], env);
    assert.equal(json.code, 0, json.stderr);
    const parsed = JSON.parse(json.stdout) as UsageReport;
    // `speech`: the voice reply's audio itself (characters, not tokens; usage-speech.test.ts)
    assert.deepEqual(parsed.rows.map((x) => x.purpose), ["compaction", "consolidation", "embedding", "speech", "tts", "turn"]);
    assert.equal(parsed.rows.find((x) => x.purpose === "speech")!.total, 0, "speech has characters, no tokens");
    assert.equal(parsed.rows.find((x) => x.purpose === "turn")!.runs, parsed.totals.runs, "only turns count runs");
  });
});
