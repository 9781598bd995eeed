/**
 * `node dist/test/bench/loop-own-cost.js [--no-events] [--profile FILE]`: the agent loop's own
 * cost per one-tool turn, without the network noise of the agentLoop section. `runLoop` runs in
 * process with the real ModelChain (LMDB auth state), real RunEvents published to a real
 * nats-server, and the real turn-tools path; the provider answers from memory at once (a tool
 * call, then four text deltas) and the tool executor returns at once. A turn ends when its
 * run_end and done events are handed to the socket, as in the agentLoop section. Prints wall and
 * CPU microseconds a turn (system time is mostly the socket write of the events) in three rounds.
 * `--no-events` publishes no run events (what the events cost); `--profile FILE` writes a CPU
 * profile of the measured rounds. Not part of `npm run bench`: a tool to steer loop changes by.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { emptyUsage, subjects, type AssistantMessage, type LlmMessage, type ToolDefinition, type Usage } from "../../shared/contract/index.js";
import { parseConfig } from "../../shared/runtime/config.js";
import { createLogger } from "../../shared/runtime/logger.js";
import { AuthStateStore } from "../../services/agent-runner/auth-profiles.js";
import { RunEvents } from "../../services/agent-runner/events.js";
import { ModelChain } from "../../services/agent-runner/failover.js";
import { runLoop } from "../../services/agent-runner/loop.js";
import { ProviderRegistry } from "../../services/agent-runner/providers/registry.js";
import type { Provider, ProviderRequest, ProviderStreamEvent, ToolCallBlock } from "../../services/agent-runner/providers/types.js";
import { TestNats } from "../harness/nats.js";
import { BENCH_SYSTEM_PROMPT, endRun } from "./loop-run.js";

const WARMUP_TURNS = 3_000;
const TURNS_PER_ROUND = 5_000;
const SESSION = "agent:main:main";
const usage: Usage = { input: 120, output: 12, cacheRead: 0, cacheWrite: 0, total: 132 };
const tools: ToolDefinition[] = [{
  name: "read", description: "Read a file.", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  actor: "tools", sideEffects: false, parallelSafe: true, groups: [], needsApproval: false,
}];

/** Answers a user message with a `read` call and a tool result with text, at once. */
const instantProvider: Provider = {
  name: "openai",
  async *stream(req: ProviderRequest): AsyncIterable<ProviderStreamEvent> {
    const last = req.messages[req.messages.length - 1];
    if (last?.role === "user") {
      const call: ToolCallBlock = { type: "tool_call", id: `call_${Math.random().toString(36).slice(2)}`, name: "read", args: { path: "notes.txt" } };
      yield { type: "usage", usage };
      yield { type: "tool_call", call };
      yield { type: "done", message: { role: "assistant", content: [call], provider: "openai", model: req.model, stopReason: "tool_use", usage } };
      return;
    }
    for (const text of ["The file ", "says: bench", "mark file", "."]) yield { type: "text_delta", text };
    yield { type: "usage", usage };
    const message: AssistantMessage = { role: "assistant", content: [{ type: "text", text: "The file says: benchmark file." }], provider: "openai", model: req.model, stopReason: "end_turn", usage };
    yield { type: "done", message };
  },
};

async function main(): Promise<void> {
  const withEvents = !process.argv.includes("--no-events");
  const profileAt = process.argv.indexOf("--profile");
  const profileFile = profileAt > 0 ? process.argv[profileAt + 1] : undefined;
  const home = mkdtempSync(join(tmpdir(), "lurk-loop-cost-"));
  const nats = await TestNats.start({ streams: false });
  const nc = await nats.connect("agent-runner");
  const config = parseConfig({ model: "openai/test-model" }, { OPENAI_BASE_URL: "http://127.0.0.1:9/v1", OPENAI_API_KEY: "sk-bench-000000000000" }, home);
  const registry = new ProviderRegistry(config);
  registry.providerFor = () => instantProvider; // the chain's candidates answer from memory
  const store = new AuthStateStore(join(home, "auth-state"));
  const log = createLogger("bench-loop-cost", "silent");
  const S = subjects();
  const user: LlmMessage = { role: "user", content: [{ type: "text", text: "read notes.txt" }] };
  let runs = 0;
  const turn = async () => {
    const runId = `loop-cost-${++runs}`;
    const events = new RunEvents(nc, S, runId, SESSION, runId, log);
    if (!withEvents) events.emit = () => {};
    const chain = new ModelChain({ registry, config, refs: ["openai/test-model"], sessionKey: SESSION, store, log });
    const result = await runLoop({
      provider: instantProvider, providerName: "openai", model: "test-model", chain, system: BENCH_SYSTEM_PROMPT, tools, events, log,
      signal: new AbortController().signal, llmTimeoutMs: 30_000, maxIterations: 4,
      execute: async (call) => ({ role: "tool_result", toolCallId: call.id, toolName: call.name, content: [{ type: "text", text: "benchmark file\n" }], isError: false }),
      checkpointAssistant: () => Promise.resolve(),
      checkpoint: () => Promise.resolve(),
    }, { turn: 0, context: [user], after: [], usage: emptyUsage() });
    if (result.turns !== 2) throw new Error(`expected a two-call turn, got ${result.turns}`);
    endRun(events, result);
    await new Promise((resolve) => setImmediate(resolve)); // the connection writes its buffer
  };
  try {
    for (let i = 0; i < WARMUP_TURNS; i++) await turn();
    const profiler = profileFile ? new Session() : undefined;
    if (profiler) {
      profiler.connect();
      await profiler.post("Profiler.enable");
      await profiler.post("Profiler.setSamplingInterval", { interval: 50 });
      await profiler.post("Profiler.start");
    }
    for (let round = 1; round <= 3; round++) {
      const cpu = process.cpuUsage();
      const start = process.hrtime.bigint();
      for (let i = 0; i < TURNS_PER_ROUND; i++) await turn();
      const wallUs = Number(process.hrtime.bigint() - start) / 1e3 / TURNS_PER_ROUND;
      const used = process.cpuUsage(cpu);
      process.stdout.write(`round ${round}${withEvents ? "" : " (no events)"}: wall ${wallUs.toFixed(1)} us a turn, CPU ${((used.user + used.system) / TURNS_PER_ROUND).toFixed(1)} us (system ${(used.system / TURNS_PER_ROUND).toFixed(1)})\n`);
    }
    if (profiler && profileFile) {
      const { profile } = await profiler.post("Profiler.stop");
      writeFileSync(profileFile, JSON.stringify(profile));
      process.stdout.write(`wrote ${profileFile}\n`);
    }
  } finally {
    await nc.close();
    await store.close();
    await nats.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`loop-own-cost failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
