/**
 * What an idle heartbeat costs: a beat stopped by its gates (no LLM call), asked for over
 * `lurk.heartbeat.run`, against a raw NATS request/reply and a trivial endpoint of the same
 * services framework (router.status), both measured in the same run.
 *   emptyFile:  HEARTBEAT.md effectively empty -> the file read is the whole work (no bus call)
 *   inFlight:   a checklist, but the main session holds a run -> file read + one sessions.get
 *               (the entry's activeRunId, set through sessions.patch; router.lanes is not asked)
 * Needs nats-server, the sessions, router and heartbeat actors (child processes); no LLM.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BusClient } from "../../shared/runtime/client.js";
import { startActorProcess, type ActorProcess } from "../harness/actors.js";
import { TestNats } from "../harness/nats.js";
import { rawNatsRequestReply } from "./baselines.js";
import { latencyStats, timeEach, type LatencyStats } from "./stats.js";

export interface HeartbeatBenchResult {
  natsRequestReply: LatencyStats;
  /** a trivial endpoint through the same services framework and typed client (router.status) */
  endpointBaseline: LatencyStats;
  idleTick: { emptyFile: LatencyStats; inFlight: LatencyStats };
  ratioToNatsRequestReplyP50: { emptyFile: number; inFlight: number };
  ratioToEndpointBaselineP50: { emptyFile: number; inFlight: number };
}

export async function heartbeatIdleTick(n = Number(process.env.LURKBOT_BENCH_HEARTBEAT_TICKS ?? 1000)): Promise<HeartbeatBenchResult> {
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

    const ratio = (s: LatencyStats, base: LatencyStats) => Math.round((s.p50Ms / base.p50Ms) * 100) / 100;
    return {
      natsRequestReply, endpointBaseline, idleTick: { emptyFile, inFlight },
      ratioToNatsRequestReplyP50: { emptyFile: ratio(emptyFile, natsRequestReply), inFlight: ratio(inFlight, natsRequestReply) },
      ratioToEndpointBaselineP50: { emptyFile: ratio(emptyFile, endpointBaseline), inFlight: ratio(inFlight, endpointBaseline) },
    };
  } finally {
    for (const actor of actors.reverse()) await actor.stop();
    await nats.stop();
  }
}
