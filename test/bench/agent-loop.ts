/**
 * The agent loop's own overhead and the sessions actor's rates, each against a baseline
 * measured in the same run (figures are ratios; no timed asserts).
 *
 * Loop: one tool turn = `runLoop` in process (the real ModelChain with an LMDB auth state, the
 * real OpenAIProvider, RunEvents published on the bus, the tool call through ToolsClient to the
 * real tools actor process reading a workspace file) = two LLM calls + one tool call. Baseline:
 * the same external work done raw: two streamed chat completions through the openai SDK with the
 * same messages and tools to the same zero-latency fake server (the SDK given the same lean
 * transport the provider uses, http-transport.ts), and one raw NATS request to the tools actor's
 * `read`. Samples alternate loop/baseline so drift hits both alike.
 * A loop sample ends when its run_end and done events were handed to the socket, as a real run's
 * end does (earlier builds let the last events go out during the next sample).
 * `overheadP50` = loop p50 / baseline p50 - 1 (target: under 0.10). Checkpoints are no-ops here;
 * `withCheckpoints` adds the two appends per tool turn through the sessions actor;
 * `eventsUnpublished` is an ablation, not a mode: the run events are built as usual but not
 * handed to the connection, so `overheadUnpublishedP50` is the loop's overhead without the bus
 * messages of its ~13 run events.
 * Measured after `LURKBOT_BENCH_LOOP_WARMUP` (400) rounds of all four kinds (a fresh process gets faster for its first
 * ~1 000 turns while V8 optimizes it; the loop has more code to optimize than the baseline).
 *
 * Sessions: sequential `sessions.append` (one record) and `sessions.history` (50 records) calls
 * through BusClient to the sessions actor process, against a raw NATS request/reply echo of the
 * same payload size; rates in operations per second.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { NatsConnection } from "@nats-io/transport-node";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import {
  emptyUsage, subjects, toolCallRequest, type AssistantMessage, type LlmMessage, type ToolDefinition, type ToolResultMessage, type TranscriptRecord,
} from "../../shared/contract/index.js";
import { BusClient } from "../../shared/runtime/client.js";
import { parseConfig } from "../../shared/runtime/config.js";
import { createLogger } from "../../shared/runtime/logger.js";
import { AuthStateStore } from "../../services/agent-runner/auth-profiles.js";
import { httpTransport } from "../../services/agent-runner/providers/http-transport.js";
import { RunEvents } from "../../services/agent-runner/events.js";
import { ModelChain } from "../../services/agent-runner/failover.js";
import { runLoop } from "../../services/agent-runner/loop.js";
import { toOpenAITools } from "../../services/agent-runner/providers/openai-convert.js";
import { ProviderRegistry } from "../../services/agent-runner/providers/registry.js";
import { ToolsClient } from "../../services/agent-runner/tools-client.js";
import { FakeOpenAIServer } from "../fakes/openai-server.js";
import { startActorProcess, type ActorProcess } from "../harness/actors.js";
import { TestNats } from "../harness/nats.js";
import { BENCH_SYSTEM_PROMPT, endRun } from "./loop-run.js";
import { latencyStats, progress, type LatencyStats } from "./stats.js";

const S = subjects();

export interface AgentLoopBenchResult {
  loop: {
    oneToolTurn: LatencyStats; withCheckpoints: LatencyStats; eventsUnpublished: LatencyStats; baseline: LatencyStats;
    overheadP50: number; overheadP50Ms: number; overheadUnpublishedP50: number; checkpointsP50Ms: number; warmupRounds: number; target: string;
  };
  sessions: { appendPerSecond: number; historyReadsPerSecond: number; rawRequestReplyPerSecond: number; appendRatioToRaw: number; historyRatioToRaw: number };
}

const ms = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;
const round = (x: number) => Math.round(x * 1000) / 1000;

function shuffled<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

async function rate(n: number, fn: (i: number) => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn(i);
  return Math.round(n / (ms(start) / 1000));
}

export async function agentLoopBench(opts: { turns?: number; warmupRounds?: number; sessionOps?: number } = {}): Promise<AgentLoopBenchResult> {
  const turns = opts.turns ?? Number(process.env.LURKBOT_BENCH_LOOP_TURNS ?? 1_000);
  const warmupRounds = opts.warmupRounds ?? Number(process.env.LURKBOT_BENCH_LOOP_WARMUP ?? 400);
  const sessionOps = opts.sessionOps ?? Number(process.env.LURKBOT_BENCH_SESSION_OPS ?? 1000);
  const work = mkdtempSync(join(tmpdir(), "lurk-bench-loop-"));
  const workspace = join(work, "workspace");
  const log = createLogger("bench-loop", "silent");
  progress("agent-loop: nats-server, sessions and tools actors, fake LLM");
  const nats = await TestNats.start();
  const fake = await FakeOpenAIServer.start();
  const actors: ActorProcess[] = [];
  const store = new AuthStateStore(join(work, "auth-state"));
  try {
    mkdirSync(workspace, { recursive: true });
    writeFileSync(join(workspace, "notes.txt"), "benchmark file\n");
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({ workspace, log: { level: "warn" } }));
    actors.push(await startActorProcess("sessions", nats), await startActorProcess("tools", nats, { LURKBOT_WORKSPACE: workspace }));
    const nc = await nats.connect("agent-runner");
    const bus = new BusClient(nc);
    const toolsClient = new ToolsClient(nc, bus, S, log, 30_000);
    const tools: ToolDefinition[] = (await toolsClient.list("main", "agent:main:main", "openai/test-model")).filter((t) => t.name === "read");
    if (tools.length === 0) throw new Error("the tools actor did not list `read`");

    const config = parseConfig({ model: "openai/test-model" }, { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-bench-000000000000" }, nats.home);
    const registry = new ProviderRegistry(config);
    const user: LlmMessage = { role: "user", content: [{ type: "text", text: "read notes.txt" }] };
    const sessionKey = "agent:main:main";
    // the session the checkpoints are appended to
    await bus.call("sessions", "begin", { sessionKey, runId: "bench-setup", agentId: "main", sessionType: "main", records: [], historyLimit: 10 });
    let runN = 0;
    const ctxOf = (runId: string) => ({ runId, sessionKey, agentId: "main", sessionType: "main", model: "openai/test-model" });

    /** a connection stand-in that drops what it is handed (the ablation) */
    const noBus = { publish: () => undefined } as unknown as NatsConnection;
    const loopTurn = async (mode: "plain" | "checkpoints" | "unpublished") => {
      const checkpoints = mode === "checkpoints";
      const runId = `bench-run-${++runN}`;
      const events = new RunEvents(mode === "unpublished" ? noBus : nc, S, runId, sessionKey, runId, log);
      const chain = new ModelChain({ registry, config, refs: ["openai/test-model"], sessionKey, store, log });
      const resolved = registry.resolve("openai/test-model");
      const append = (record: TranscriptRecord) => bus.call("sessions", "append", { sessionKey, records: [record] }).then(() => undefined);
      const result = await runLoop({
        provider: resolved.provider, providerName: "openai", model: "test-model", chain, system: BENCH_SYSTEM_PROMPT, tools, events, log,
        signal: new AbortController().signal, llmTimeoutMs: 30_000, maxIterations: 4,
        execute: (call) => toolsClient.call(ctxOf(runId), call.id, call.name, call.args),
        checkpointAssistant: (turn: number, message: AssistantMessage, _withResults: boolean) =>
          checkpoints && message.content.some((b) => b.type === "tool_call")
            ? append({ id: `${runId}:a:${turn}`, ts: Date.now(), runId, kind: "message", message, meta: { turn } })
            : Promise.resolve(),
        checkpoint: (turn: number, result: ToolResultMessage, durationMs: number) =>
          checkpoints ? append({ id: `${runId}:r:${result.toolCallId}`, ts: Date.now(), runId, kind: "message", message: result, meta: { turn, durationMs } }) : Promise.resolve(),
      }, { turn: 0, context: [user], after: [], usage: emptyUsage() });
      endRun(events, result);
    };

    const client = new OpenAI({ baseURL: fake.baseUrl, apiKey: "sk-bench-000000000000", maxRetries: 0, fetch: httpTransport() });
    const openaiTools = toOpenAITools(tools);
    const consume = async (messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[]) => {
      const stream = await client.chat.completions.create({ model: "test-model", stream: true, stream_options: { include_usage: true }, messages, tools: openaiTools });
      let call: { id: string; args: string } | undefined;
      for await (const chunk of stream) {
        const tc = chunk.choices[0]?.delta.tool_calls?.[0];
        if (tc) call = { id: tc.id ?? call?.id ?? "", args: (call?.args ?? "") + (tc.function?.arguments ?? "") };
      }
      return call;
    };
    const baselineTurn = async () => {
      const first: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: "system", content: BENCH_SYSTEM_PROMPT }, { role: "user", content: "read notes.txt" }];
      const call = await consume(first);
      if (!call) throw new Error("the fake did not call the tool");
      const reply = await nc.request(S.toolCall("read"), JSON.stringify(toolCallRequest.parse({
        type: "lurk.tools.call.v1", id: `bench-${runN}`, ts: Date.now(), toolCallId: call.id, runId: "bench-raw", sessionKey, agentId: "main", sessionType: "main", model: "openai/test-model", tool: "read", args: JSON.parse(call.args),
      })), { timeout: 30_000 });
      const text = JSON.stringify(reply.json());
      await consume([...first,
        { role: "assistant", content: null, tool_calls: [{ id: call.id, type: "function", function: { name: "read", arguments: call.args } }] },
        { role: "tool", tool_call_id: call.id, content: text.slice(0, 200) }]);
    };

    // one round: each kind of sample once, in a shuffled order, so drift and the work a sample
    // leaves behind (the sessions actor's flush after checkpoints) hit every kind alike
    const kinds = { baseline: baselineTurn, plain: () => loopTurn("plain"), checkpoints: () => loopTurn("checkpoints"), unpublished: () => loopTurn("unpublished") };
    const samples: Record<keyof typeof kinds, number[]> = { baseline: [], plain: [], checkpoints: [], unpublished: [] };
    progress(`agent-loop: warming up (${warmupRounds} rounds)`);
    for (let i = 0; i < warmupRounds; i++) for (const run of Object.values(kinds)) await run();
    progress(`agent-loop: ${turns} one-tool turns of each kind, loop and raw baseline alternating`);
    for (let i = 0; i < turns; i++) {
      if (i > 0 && i % 250 === 0) progress(`agent-loop: ${i} / ${turns}`);
      for (const [kind, run] of shuffled(Object.entries(kinds) as [keyof typeof kinds, () => Promise<void>][])) {
        const t = process.hrtime.bigint();
        await run();
        samples[kind].push(ms(t));
      }
    }
    const oneToolTurn = latencyStats(samples.plain);
    const withCheckpoints = latencyStats(samples.checkpoints);
    const eventsUnpublished = latencyStats(samples.unpublished);
    const baseline = latencyStats(samples.baseline);

    progress(`sessions: ${sessionOps} appends, history reads, raw request/reply`);
    const message: AssistantMessage = { role: "assistant", provider: "openai", model: "test-model", stopReason: "end_turn", content: [{ type: "text", text: "x".repeat(300) }] };
    const appendPerSecond = await rate(sessionOps, (i) => bus.call("sessions", "append", { sessionKey, records: [{ id: `bench-append-${i}`, ts: Date.now(), runId: "bench-append", kind: "message", message }] }));
    const historyReadsPerSecond = await rate(sessionOps, () => bus.call("sessions", "history", { sessionKey, limit: 50 }));
    const echo = await nats.connect("admin");
    echo.subscribe("bench.echo", { callback: (_e, m) => void m.respond(m.data) });
    await echo.flush();
    const requester = await nats.connect("admin");
    const payload = JSON.stringify({ sessionKey, records: [{ id: "x", ts: Date.now(), runId: "r", kind: "message", message }] });
    await rate(200, () => requester.request("bench.echo", payload));
    const rawRequestReplyPerSecond = await rate(sessionOps, () => requester.request("bench.echo", payload));
    await Promise.all([echo.close(), requester.close(), nc.close()]);

    return {
      loop: {
        oneToolTurn, withCheckpoints, eventsUnpublished, baseline,
        overheadP50: round(oneToolTurn.p50Ms / baseline.p50Ms - 1),
        overheadP50Ms: round(oneToolTurn.p50Ms - baseline.p50Ms),
        overheadUnpublishedP50: round(eventsUnpublished.p50Ms / baseline.p50Ms - 1),
        checkpointsP50Ms: round(withCheckpoints.p50Ms - oneToolTurn.p50Ms),
        warmupRounds,
        target: "overheadP50 < 0.10",
      },
      sessions: {
        appendPerSecond, historyReadsPerSecond, rawRequestReplyPerSecond,
        appendRatioToRaw: round(appendPerSecond / rawRequestReplyPerSecond),
        historyRatioToRaw: round(historyReadsPerSecond / rawRequestReplyPerSecond),
      },
    };
  } finally {
    await store.close().catch(() => undefined);
    for (const a of actors.reverse()) await a.stop().catch(() => undefined);
    await fake.close();
    await nats.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

// `node dist/test/bench/agent-loop.js` runs it alone
if (import.meta.url === `file://${process.argv[1]}`) {
  agentLoopBench().then((r) => console.log(JSON.stringify(r, null, 2)), (err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
