/**
 * What an idle heartbeat costs: a beat stopped by its gates (no LLM call), asked for over
 * `lurk.heartbeat.run`, against a raw NATS request/reply and a trivial endpoint of the same
 * services framework (router.status), both measured in the same run.
 *   emptyFile:  HEARTBEAT.md effectively empty -> the file read is the whole work (no bus call)
 *   inFlight:   a checklist, but the main session holds a run -> file read + one sessions.get
 *               (the entry's activeRunId, set through sessions.patch; router.lanes is not asked)
 * timerTick: the actor's own once-a-second tick (the function its timer calls), in process, with
 *   `agents` agents configured and none due, per tick against two same-run baselines: an empty
 *   async callback (what any timer callback costs) and a plain Map scan of the same size (the
 *   least a "who is due?" check can do).
 * Needs nats-server, the sessions, router and heartbeat actors (child processes); no LLM.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { heartbeatActor } from "../../services/heartbeat/actor.js";
import { startActor } from "../../shared/runtime/actor.js";
import { BusClient } from "../../shared/runtime/client.js";
import { startActorProcess, waitFor, type ActorProcess } from "../harness/actors.js";
import { TestNats } from "../harness/nats.js";
import { rawNatsRequestReply } from "./baselines.js";
import { latencyStats, p50Ratio, timeEach, timePerCallUs, type LatencyStats, type MicroStats } from "./stats.js";

export interface TimerTickResult {
  agents: number;
  /** the heartbeat actor's tick with every agent enabled and none due */
  tick: MicroStats;
  /** an empty async callback, awaited like the tick */
  emptyCallback: MicroStats;
  /** one pass over a Map of `agents` states comparing each due time with now */
  mapScan: MicroStats;
  ratioToMapScanP50: number;
  /** tick p50 minus the empty callback's, per configured agent */
  perAgentNs: number;
}

export interface HeartbeatBenchResult {
  natsRequestReply: LatencyStats;
  /** a trivial endpoint through the same services framework and typed client (router.status) */
  endpointBaseline: LatencyStats;
  idleTick: { emptyFile: LatencyStats; inFlight: LatencyStats };
  ratioToNatsRequestReplyP50: { emptyFile: number; inFlight: number };
  ratioToEndpointBaselineP50: { emptyFile: number; inFlight: number };
  timerTick: TimerTickResult;
}

const DAY_MINUTES = 24 * 60;

/**
 * The heartbeat actor in process (its own data dir) with `agents` agents, its timer replaced by
 * one that hands the tick to us. Its first tick (at start) plans every agent a day ahead; the
 * ticks timed here find none due, and the check afterwards proves they changed nothing.
 */
async function timerTick(nats: TestNats, agents: number): Promise<TimerTickResult> {
  const config = nats.config({
    dataDir: join(nats.dir, "tick-data"),
    agents: Array.from({ length: agents }, (_, i) => (i === 0 ? { id: "main", default: true } : { id: `agent-${i}` })),
    heartbeat: { intervalMinutes: DAY_MINUTES },
  });
  let tick: (() => Promise<void>) | undefined;
  const rt = await startActor(heartbeatActor({
    every: (fn) => {
      tick = fn;
      return { stop: () => undefined };
    },
  }), { config, env: nats.passwordEnv("heartbeat") });
  const nc = await nats.connect("cli");
  try {
    const bus = new BusClient(nc);
    const planned = async () => (await bus.call("heartbeat", "status", {})).agents.map((a) => a.nextDueAt);
    const before = await waitFor(async () => {
      const due = await planned();
      return due.every((at) => at !== undefined) ? due : undefined;
    }, 60_000, "the first tick to plan every agent");
    await new Promise((r) => setTimeout(r, 200)); // the first tick's last write commits
    const run = tick!;
    await timePerCallUs(20, 10, run);
    const measured = await timePerCallUs(200, 10, run);
    const after = await planned();
    if (after.some((at, i) => at !== before[i])) throw new Error("an idle tick changed a due time: the ticks timed were not idle");

    const emptyCallback = await timePerCallUs(200, 10, async () => undefined);
    const states = new Map(Array.from({ length: agents }, (_, i) => [`agent-${i}`, { enabled: true, nextDueAt: Date.now() + DAY_MINUTES * 60_000 }]));
    let due = 0;
    const scan = async () => {
      const now = Date.now();
      for (const state of states.values()) if (state.enabled && now >= state.nextDueAt) due++;
    };
    await timePerCallUs(20, 10, scan);
    const mapScan = await timePerCallUs(200, 10, scan);
    if (due !== 0) throw new Error("the baseline scan found an agent due");
    return {
      agents,
      tick: measured,
      emptyCallback,
      mapScan,
      ratioToMapScanP50: Math.round((measured.p50Us / Math.max(0.001, mapScan.p50Us)) * 100) / 100,
      perAgentNs: Math.round(((measured.p50Us - emptyCallback.p50Us) * 1000) / agents),
    };
  } finally {
    await nc.close();
    await rt.stop();
  }
}

export async function heartbeatIdleTick(
  n = Number(process.env.LURKBOT_BENCH_HEARTBEAT_TICKS ?? 1000),
  agents = Number(process.env.LURKBOT_BENCH_HEARTBEAT_AGENTS ?? 1000),
): Promise<HeartbeatBenchResult> {
  const nats = await TestNats.start();
  const workspace = join(nats.dir, "workspace");
  mkdirSync(workspace, { recursive: true });
  // a long interval: only the beats asked for here run
  writeFileSync(join(nats.home, "config.json"), JSON.stringify({ heartbeat: { intervalMinutes: 24 * 60 } }));
  const env = { LURKBOT_WORKSPACE: workspace, LURKBOT_LOG_LEVEL: "warn" };
  const actors: ActorProcess[] = [];
  try {
    for (const name of ["sessions", "router", "heartbeat"]) actors.push(await startActorProcess(name, nats, env));
    const nc = await nats.connect("cli");
    const bus = new BusClient(nc);
    const beat = async (expected: string) => {
      const { event } = await bus.call("heartbeat", "run", { agentId: "main" });
      if (event?.reason !== expected) throw new Error(`expected a skip (${expected}), got ${event?.status} (${event?.reason})`);
    };
    const natsRequestReply = await rawNatsRequestReply(nats, n);
    await timeEach(50, () => bus.call("router", "status", {}));
    const endpointBaseline = latencyStats(await timeEach(n, () => bus.call("router", "status", {})));

    writeFileSync(join(workspace, "HEARTBEAT.md"), "# HEARTBEAT.md\n\n<!-- empty: no checks -->\n- [ ]\n");
    await timeEach(50, () => beat("empty-heartbeat-file"));
    const emptyFile = latencyStats(await timeEach(n, () => beat("empty-heartbeat-file")));

    writeFileSync(join(workspace, "HEARTBEAT.md"), "- [ ] check the build\n");
    const sessionKey = "agent:main:main";
    await bus.call("sessions", "ensure", { sessionKey, agentId: "main", sessionType: "main", origin: { channel: "cli", conversation: "main", messageIds: [] } });
    await bus.call("sessions", "patch", { sessionKey, patch: { activeRunId: "run-bench-busy" } });
    await timeEach(50, () => beat("requests-in-flight"));
    const inFlight = latencyStats(await timeEach(n, () => beat("requests-in-flight")));
    await nc.close();
    // the heartbeat process goes first: the in-process one answers `heartbeat.status` alone
    await actors.pop()!.stop();
    const tick = await timerTick(nats, agents);

    return {
      natsRequestReply, endpointBaseline, idleTick: { emptyFile, inFlight },
      ratioToNatsRequestReplyP50: { emptyFile: p50Ratio(emptyFile, natsRequestReply), inFlight: p50Ratio(inFlight, natsRequestReply) },
      ratioToEndpointBaselineP50: { emptyFile: p50Ratio(emptyFile, endpointBaseline), inFlight: p50Ratio(inFlight, endpointBaseline) },
      timerTick: tick,
    };
  } finally {
    for (const actor of actors.reverse()) await actor.stop();
    await nats.stop();
  }
}
