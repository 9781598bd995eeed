/**
 * Tools benchmark, every figure against a baseline measured in the same run:
 *  - a `read` call's round trip through the bus (agent-runner user -> tools actor -> piscina
 *    worker -> reply) vs a raw piscina task (ratio);
 *  - `exec true` in the bubblewrap sandbox (in-process, runCommand) vs a bare child process
 *    (`spawn("true")`), and the same exec through the bus;
 *  - tool calls per second (16 in flight) with one and with two tools actors on the bus.
 * Returns a plain result object; wire it in main.ts as `results.tools = await toolsBench()`.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toolCallReply } from "../../shared/contract/index.js";
import { BusClient } from "../../shared/runtime/client.js";
import { parseConfig } from "../../shared/runtime/config.js";
import { runCommand } from "../../services/tools/exec/run.js";
import { probeExecHost } from "../../services/tools/exec/sandbox.js";
import { startActorProcess } from "../harness/actors.js";
import { TestNats } from "../harness/nats.js";
import { rawPiscinaTask } from "./baselines.js";
import { latencyStats, timeEach, type LatencyStats } from "./stats.js";

const ratio = (a: LatencyStats, b: LatencyStats) => Math.round((a.p50Ms / Math.max(0.001, b.p50Ms)) * 100) / 100;

async function callsPerSecond(call: () => Promise<unknown>, total: number, inFlight: number): Promise<number> {
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < total) {
      next++;
      await call();
    }
  }));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return Math.round(total / seconds);
}

function spawnTrue(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("true", [], { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", () => resolve());
  });
}

export async function toolsBench(opts: { n?: number; execN?: number; throughputCalls?: number } = {}): Promise<Record<string, unknown>> {
  const n = opts.n ?? 500;
  const execN = opts.execN ?? 50;
  const total = opts.throughputCalls ?? 600;
  const ws = realpathSync(mkdtempSync(join(tmpdir(), "lurk-bench-tools-")));
  writeFileSync(join(ws, "notes.txt"), "benchmark file\n");
  const sandboxed = existsSync("/usr/bin/bwrap");
  const nats = await TestNats.start({ streams: false });
  writeFileSync(join(nats.home, "config.json"), JSON.stringify({ tools: { exec: sandboxed ? {} : { allowUnsandboxed: true } } }));
  const env = { LURKBOT_WORKSPACE: ws, LURKBOT_LOG_LEVEL: "warn" };
  const first = await startActorProcess("tools", nats, env);
  const nc = await nats.connect("agent-runner");
  const client = new BusClient(nc);
  let id = 0;
  const call = (tool: string, args: Record<string, unknown>) => client.callSubject(`lurk.tools.call.${tool}`, "lurk.tools.call.v1", {
    toolCallId: `bench-${++id}`, runId: "bench", sessionKey: "agent:main:main", agentId: "main", tool, args,
  }, toolCallReply, { timeoutMs: 30_000 });
  try {
    // round trip of a worker tool vs a raw piscina task
    await timeEach(100, () => call("read", { path: "notes.txt" }));
    const readCall = latencyStats(await timeEach(n, () => call("read", { path: "notes.txt" })));
    const piscina = await rawPiscinaTask(n);

    // the sandbox's cost: exec `true` in bubblewrap vs a bare child process
    const host = await probeExecHost(parseConfig({}, {}, nats.home).tools.exec);
    const inSandbox = () => runCommand(host, { command: "true", workspace: ws, timeoutMs: 10_000, signal: new AbortController().signal, capBytes: 4096 });
    await timeEach(5, inSandbox);
    const sandboxExec = latencyStats(await timeEach(execN, inSandbox));
    await timeEach(5, spawnTrue);
    const bareSpawn = latencyStats(await timeEach(execN, spawnTrue));
    const busExec = latencyStats(await timeEach(execN, () => call("exec", { command: "true" })));

    // throughput with one and two tools actors
    const readOnce = () => call("read", { path: "notes.txt" });
    const one = await callsPerSecond(readOnce, total, 16);
    const second = await startActorProcess("tools", nats, env);
    await timeEach(50, readOnce);
    const two = await callsPerSecond(readOnce, total, 16);
    await second.stop();

    return {
      toolCall: { read: readCall, rawPiscina: piscina, ratioP50: ratio(readCall, piscina) },
      exec: {
        sandbox: host.mode,
        inSandbox: sandboxExec,
        bareSpawn,
        ratioP50: ratio(sandboxExec, bareSpawn),
        throughBus: busExec,
      },
      throughput: { oneActorCallsPerSec: one, twoActorsCallsPerSec: two, ratio: Math.round((two / Math.max(1, one)) * 100) / 100, inFlight: 16, calls: total },
    };
  } finally {
    await nc.close();
    await first.stop();
    await nats.stop();
    rmSync(ws, { recursive: true, force: true });
  }
}

// `node dist/test/bench/tools.js` runs it alone
if (import.meta.url === `file://${process.argv[1]}`) {
  toolsBench().then((r) => console.log(JSON.stringify(r, null, 2)), (err) => {
    console.error(err);
    process.exit(1);
  });
}
