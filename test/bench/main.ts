/**
 * `npm run bench`: LurkBot's own path (terminal channel -> router -> agent-runner -> tools ->
 * back) against baselines measured in the same run, with a zero-latency fake LLM. Writes
 * test/bench/results/latest.json and prints ratios. Long steps print progress to stderr.
 * The core section measures a warm system: after WARMUP_TURNS turns, and the 50-session
 * throughput after a first 50-session round (whose figure is reported as well).
 * `npm run bench -- agentLoop cronScheduling` runs only the named sections and merges their
 * results into latest.json (sections: core, coldStart, singleProcess, agentLoop,
 * heartbeatIdleTick, cronScheduling, router, tools).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../../shared/scripts/paths.js";
import { httpTransport } from "../../services/agent-runner/providers/http-transport.js";
import { CliClient, TestSystem } from "../harness/system.js";
import { rawNatsRequestReply, rawPiscinaTask, rawProviderCall } from "./baselines.js";
import { agentLoopBench } from "./agent-loop.js";
import { cronScheduling } from "./cron.js";
import { heartbeatIdleTick } from "./heartbeat.js";
import { routerBench } from "./router.js";
import { toolsBench } from "./tools.js";
import { coldStart, singleProcess } from "./startup.js";
import { latencyStats, progress, rssMb, timeEach } from "./stats.js";

const TURNS = Number(process.env.LURKBOT_BENCH_TURNS ?? 300);
/**
 * Turns (half with a tool call) before anything is measured. A fresh actor process gets faster
 * for its first ~1 000 turns while V8 optimizes it (a tool turn: ~36 ms over the first 100 turns,
 * ~16 ms after 1 000 on 2026-11-26), and the figures are for a running assistant.
 */
const WARMUP_TURNS = Number(process.env.LURKBOT_BENCH_WARMUP_TURNS ?? 1_000);
const CONCURRENT_SESSIONS = 50;

/** Turns per second of `sessions` sessions at once, each sending `turnsPerSession` turns in order (sessions named by `round`: new ones each round). */
async function throughput(client: CliClient, sessions: number, turnsPerSession: number, round = "measured"): Promise<number> {
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: sessions }, async (_, s) => {
    for (let i = 0; i < turnsPerSession; i++) await client.send(`turn ${i}`, { sessionName: `bench-${round}-${sessions}-${s}`, timeoutMs: 60_000 });
  }));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return Math.round((sessions * turnsPerSession) / seconds);
}

async function core(results: Record<string, unknown>): Promise<void> {
  progress("starting nats-server, fake LLM and the actors");
  const system = await TestSystem.start({ files: { "notes.txt": "benchmark file\n" }, env: { LURKBOT_LOG_LEVEL: "warn" } });
  const rssOfActors = () => {
    const rss: Record<string, number> = {};
    for (const [name, actor] of system.actors) rss[name] = rssMb(actor.child.pid!);
    return { perActor: rss, actorsTotal: round(Object.values(rss).reduce((a, b) => a + b, 0)) };
  };
  try {
    // idle after start-up: each actor collects 10-20 s after it went quiet, and again 6 s later
    await new Promise((r) => setTimeout(r, 28_000));
    const fresh = rssOfActors();
    progress("baselines: raw NATS request/reply, raw piscina task, raw SDK call (LurkBot's transport and the SDK's default fetch)");
    const nats = await rawNatsRequestReply(system.nats, 2000);
    const piscina = await rawPiscinaTask(2000);
    // the overheads are taken over the SDK call with the transport LurkBot's providers use; the
    // SDK with its default fetch is measured too (LurkBot's turns do not pay that difference)
    const provider = await rawProviderCall(system.fake, 300, httpTransport());
    const providerDefaultFetch = await rawProviderCall(system.fake, 300);
    results.baselines = { natsRequestReply: nats, piscinaTask: piscina, providerCall: provider, providerCallSdkDefaultFetch: providerDefaultFetch };

    const client = await CliClient.connect(system.nats, "bench");
    progress(`warming up (${WARMUP_TURNS} turns)`);
    await timeEach(WARMUP_TURNS, (i) => client.send(i % 2 ? "read notes.txt" : "hello"));
    progress(`turns without a tool call (${TURNS})`);
    const plain = latencyStats(await timeEach(TURNS, () => client.send("hello")));
    progress(`turns with one tool call (${TURNS})`);
    const withTool = latencyStats(await timeEach(TURNS, () => client.send("read notes.txt")));
    // a plain turn is one LLM call; a tool turn is two LLM calls and one tool call
    const overheadPlain = plain.p50Ms - provider.p50Ms;
    const overheadTool = withTool.p50Ms - 2 * provider.p50Ms;
    results.turns = {
      plain, withTool,
      overheadOverFakeLlmP50Ms: { plain: round(overheadPlain), withTool: round(overheadTool) },
      ratioToNatsRequestReplyP50: { plain: round(plain.p50Ms / nats.p50Ms), withTool: round(withTool.p50Ms / nats.p50Ms) },
      ratioToProviderCallP50: { plain: round(plain.p50Ms / provider.p50Ms), withTool: round(withTool.p50Ms / provider.p50Ms) },
    };
    progress("throughput: 1 session");
    const one = await throughput(client, 1, 200);
    // the first round with many sessions in flight warms that path (reported, not the figure)
    progress(`throughput: ${CONCURRENT_SESSIONS} sessions, a first round, then the measured one`);
    const firstRound = await throughput(client, CONCURRENT_SESSIONS, 20, "first");
    const many = await throughput(client, CONCURRENT_SESSIONS, 20);
    results.throughputTurnsPerSecond = { sessions1: one, [`sessions${CONCURRENT_SESSIONS}`]: many, [`sessions${CONCURRENT_SESSIONS}FirstRound`]: firstRound, warmupTurns: WARMUP_TURNS };
    await client.close();

    // an actor collects 10-20 s after it went quiet and again 6 s later: all done by 26 s
    progress("idle memory after the load (actors collect garbage once idle)");
    await new Promise((r) => setTimeout(r, 30_000));
    results.idleRssMb = { afterStart: fresh, afterLoad: rssOfActors() };
  } finally {
    await system.stop();
  }
}

/** The sections of the benchmark, in run order; each adds its figures to `results`. */
const SECTIONS: Record<string, (results: Record<string, unknown>) => Promise<void>> = {
  core,
  coldStart: async (r) => { progress("cold start of every actor until each answers $SRV.PING"); r.coldStart = await coldStart(); },
  singleProcess: async (r) => { progress("single-process mode"); r.singleProcess = await singleProcess(); },
  agentLoop: async (r) => { progress("agent loop overhead vs a raw SDK call; sessions append/history vs raw request/reply"); r.agentLoop = await agentLoopBench(); },
  heartbeatIdleTick: async (r) => { progress("heartbeat: an idle tick (gates only) vs a raw request/reply"); r.heartbeatIdleTick = await heartbeatIdleTick(); },
  router: async (r) => { progress("router: messages/s with 100 sessions and added latency vs raw JetStream"); r.router = await routerBench(); },
  tools: async (r) => { progress("tools: a call through the bus vs a raw piscina task; exec in bubblewrap vs a bare child; calls/s with 1 and 2 tools actors"); r.tools = await toolsBench(); },
  cronScheduling: async (r) => { progress("cron: scheduling 10 000 jobs vs a bare croner loop"); r.cronScheduling = await cronScheduling(); },
};

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((w) => !(w in SECTIONS));
  if (unknown.length > 0) throw new Error(`unknown bench section(s) ${unknown.join(", ")}; sections: ${Object.keys(SECTIONS).join(", ")}`);
  const dir = join(REPO_ROOT, "test", "bench", "results");
  const file = join(dir, "latest.json");
  // a partial run keeps the other sections' figures from the last full run
  const results: Record<string, unknown> = wanted.length > 0 && existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown> : {};
  Object.assign(results, { date: new Date().toISOString(), node: process.version, cpus: (await import("node:os")).cpus().length });
  for (const [name, run] of Object.entries(SECTIONS)) if (wanted.length === 0 || wanted.includes(name)) await run(results);

  mkdirSync(dir, { recursive: true });
  writeFileSync(file, JSON.stringify(results, null, 2) + "\n");
  process.stdout.write(JSON.stringify(results, null, 2) + "\n");
  process.stdout.write(`wrote ${file}\n`);
}

const round = (x: number) => Math.round(x * 1000) / 1000;

main().catch((err) => {
  process.stderr.write(`benchmark failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
