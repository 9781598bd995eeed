/**
 * Router benchmark: messages per second through the router (INBOUND -> router -> RUNS) with
 * 100 sessions, and the latency it adds, against raw JetStream (publish to a stream and consume
 * it with a durable pull consumer) measured in the same run. The router and sessions actors are
 * real processes; a scripted runner ("agent-runner" user) consumes RUNS and ends each run at
 * once (terminal event), so the router's lanes free as fast as the bus allows.
 * The router path is two JetStream hops (INBOUND, RUNS) plus the router's work; the raw figure
 * is one hop, so `addedP50Ms` = router p50 - 2 x raw p50. Raw core NATS request/reply (an echo
 * responder, same payload size, same server) is measured too: `latencyRatioToCoreRequest`.
 */
import { randomUUID } from "node:crypto";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { CONSUMERS, envelope, inboundMsgId, runIdFor, runRequestSchema, safeParseJson, STREAMS, subjects } from "../../shared/contract/index.js";
import { ensureDurableConsumer } from "../../shared/runtime/consumer.js";
import { startActorProcess, type ActorProcess } from "../harness/actors.js";
import { TestNats } from "../harness/nats.js";
import { latencyStats, progress, type LatencyStats } from "./stats.js";

export interface RouterBenchResult {
  sessions: number;
  messages: number;
  router: { messagesPerSecond: number; latency: LatencyStats };
  rawJetStream: { messagesPerSecond: number; latency: LatencyStats };
  rawCoreRequest: { requestsPerSecond: number; latency: LatencyStats };
  addedP50Ms: number;
  latencyRatioToCoreRequest: number;
  throughputRatioToRaw: number;
}

const s = subjects();
const round = (x: number) => Math.round(x * 100) / 100;

/** Receives run requests and ends each run at once; `waiters` resolve on a run id's arrival. */
async function scriptedRunner(nats: TestNats): Promise<{ nc: NatsConnection; arrived: Map<string, number>; wait(runId: string): Promise<number>; stop(): Promise<void> }> {
  const nc = await nats.connect("agent-runner");
  await ensureDurableConsumer(nc, { stream: STREAMS.runs, consumer: CONSUMERS.agentRunner, ackWaitMs: 30_000, maxAckPending: 1000 });
  const consumer = await jetstream(nc).consumers.get(STREAMS.runs, CONSUMERS.agentRunner);
  const messages = await consumer.consume({ max_messages: 256 });
  const arrived = new Map<string, number>();
  const waiters = new Map<string, (t: number) => void>();
  void (async () => {
    for await (const m of messages) {
      const now = performance.now();
      const req = runRequestSchema.parse(safeParseJson(m.data));
      arrived.set(req.runId, now);
      waiters.get(req.runId)?.(now);
      m.ack();
      nc.publish(s.runEvent(req.runId, "done"), JSON.stringify(envelope("lurk.run.event.v1", {
        runId: req.runId, sessionKey: req.sessionKey, seq: 1, event: { kind: "done" as const, text: "", turns: 0, usage: {}, silent: true },
      })));
    }
  })();
  return {
    nc, arrived,
    wait: (runId) => new Promise((resolve) => {
      const at = arrived.get(runId);
      if (at !== undefined) resolve(at);
      else waiters.set(runId, resolve);
    }),
    async stop() {
      await messages.close();
      await nc.close();
    },
  };
}

async function routerPath(nats: TestNats, sessions: number, latencyN: number, perSession: number): Promise<RouterBenchResult["router"]> {
  const admin = await nats.connect("admin");
  const js = jetstream(admin);
  const runner = await scriptedRunner(nats);
  const send = async (session: number, text: string) => {
    const id = randomUUID();
    const msg = envelope("lurk.inbound.message.v1", {
      id, channel: "telegram", conversation: `bench-${session}`, peer: { kind: "group" as const, id: `-100${session}` }, sender: { id: `u${session}` },
      text, attachments: [], mentioned: false,
    });
    const t0 = performance.now();
    await js.publish(s.inbound("telegram"), JSON.stringify(msg), { msgID: inboundMsgId("telegram", id) });
    return { runId: runIdFor("telegram", id), t0 };
  };
  try {
    progress(`router: warming ${sessions} sessions`);
    await Promise.all(Array.from({ length: sessions }, async (_, i) => runner.wait((await send(i, "warm-up")).runId)));
    progress(`router: latency, ${latencyN} messages one at a time`);
    const samples: number[] = [];
    for (let i = 0; i < latencyN; i++) {
      const { runId, t0 } = await send(i % sessions, `latency ${i}`);
      samples.push((await runner.wait(runId)) - t0);
    }
    progress(`router: throughput, ${sessions} sessions x ${perSession} messages`);
    const start = performance.now();
    const runs: Array<Promise<number>> = [];
    for (let round = 0; round < perSession; round++) {
      const batch = await Promise.all(Array.from({ length: sessions }, (_, i) => send(i, `load ${round}`)));
      for (const { runId } of batch) runs.push(runner.wait(runId));
    }
    await Promise.all(runs);
    const seconds = (performance.now() - start) / 1000;
    return { messagesPerSecond: Math.round((sessions * perSession) / seconds), latency: latencyStats(samples) };
  } finally {
    await runner.stop();
    await admin.close();
  }
}

/** One JetStream hop: publish to a stream, consume with a durable pull consumer, ack. */
async function rawJetStream(nats: TestNats, latencyN: number, total: number): Promise<RouterBenchResult["rawJetStream"]> {
  const admin = await nats.connect("admin");
  const jsm = await jetstreamManager(admin);
  await jsm.streams.add({ name: "BENCH_RAW", subjects: ["bench.raw.>"] });
  await jsm.consumers.add("BENCH_RAW", { durable_name: "bench", ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, max_ack_pending: 1000 });
  const js = jetstream(admin);
  const messages = await (await js.consumers.get("BENCH_RAW", "bench")).consume({ max_messages: 256 });
  const waiters = new Map<string, (t: number) => void>();
  const arrived = new Map<string, number>();
  void (async () => {
    for await (const m of messages) {
      const now = performance.now();
      const id = m.headers?.get("Nats-Msg-Id") ?? "";
      arrived.set(id, now);
      waiters.get(id)?.(now);
      m.ack();
    }
  })();
  const wait = (id: string) => new Promise<number>((resolve) => {
    const at = arrived.get(id);
    if (at !== undefined) resolve(at);
    else waiters.set(id, resolve);
  });
  const payload = (i: number) => JSON.stringify({ type: "bench", i, text: "x".repeat(200) });
  const send = async (i: number) => {
    const id = randomUUID();
    const t0 = performance.now();
    await js.publish(`bench.raw.${i % 100}`, payload(i), { msgID: id });
    return { id, t0 };
  };
  try {
    for (let i = 0; i < 100; i++) await wait((await send(i)).id);
    const samples: number[] = [];
    for (let i = 0; i < latencyN; i++) {
      const { id, t0 } = await send(i);
      samples.push((await wait(id)) - t0);
    }
    const start = performance.now();
    const all: Array<Promise<number>> = [];
    for (let done = 0; done < total; done += 100) {
      const batch = await Promise.all(Array.from({ length: Math.min(100, total - done) }, (_, i) => send(done + i)));
      for (const { id } of batch) all.push(wait(id));
    }
    await Promise.all(all);
    const seconds = (performance.now() - start) / 1000;
    return { messagesPerSecond: Math.round(total / seconds), latency: latencyStats(samples) };
  } finally {
    await messages.close();
    await jsm.streams.delete("BENCH_RAW").catch(() => undefined);
    await admin.close();
  }
}

/** Core NATS request/reply to an echo responder: the cheapest round trip the bus offers. */
async function rawCoreRequest(nats: TestNats, latencyN: number, total: number): Promise<RouterBenchResult["rawCoreRequest"]> {
  const admin = await nats.connect("admin");
  const echo = admin.subscribe("bench.echo", { callback: (_e, m) => void m.respond(m.data) });
  const payload = JSON.stringify({ type: "bench", text: "x".repeat(200) });
  try {
    for (let i = 0; i < 100; i++) await admin.request("bench.echo", payload, { timeout: 5_000 });
    const samples: number[] = [];
    for (let i = 0; i < latencyN; i++) {
      const t0 = performance.now();
      await admin.request("bench.echo", payload, { timeout: 5_000 });
      samples.push(performance.now() - t0);
    }
    const start = performance.now();
    for (let done = 0; done < total; done += 100) {
      await Promise.all(Array.from({ length: Math.min(100, total - done) }, () => admin.request("bench.echo", payload, { timeout: 5_000 })));
    }
    return { requestsPerSecond: Math.round(total / ((performance.now() - start) / 1000)), latency: latencyStats(samples) };
  } finally {
    echo.unsubscribe();
    await admin.close();
  }
}

export async function routerBench(opts: { sessions?: number; latencyN?: number; perSession?: number } = {}): Promise<RouterBenchResult> {
  const sessions = opts.sessions ?? 100;
  const latencyN = opts.latencyN ?? 300;
  const perSession = opts.perSession ?? 20;
  progress("router bench: nats-server, sessions and router");
  const nats = await TestNats.start();
  const actors: ActorProcess[] = [];
  try {
    for (const name of ["sessions", "router"]) actors.push(await startActorProcess(name, nats, { LURKBOT_LOG_LEVEL: "warn" }));
    progress("raw JetStream baseline");
    const raw = await rawJetStream(nats, latencyN, sessions * perSession);
    progress("raw core NATS request/reply baseline");
    const core = await rawCoreRequest(nats, latencyN, sessions * perSession);
    const router = await routerPath(nats, sessions, latencyN, perSession);
    return {
      sessions,
      messages: sessions * perSession,
      router,
      rawJetStream: raw,
      rawCoreRequest: core,
      addedP50Ms: round(router.latency.p50Ms - 2 * raw.latency.p50Ms),
      latencyRatioToCoreRequest: round(router.latency.p50Ms / core.latency.p50Ms),
      throughputRatioToRaw: round(router.messagesPerSecond / raw.messagesPerSecond),
    };
  } finally {
    for (const a of actors.reverse()) await a.stop();
    await nats.stop();
  }
}

// `node dist/test/bench/router.js` runs it alone
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  routerBench().then((r) => process.stdout.write(`${JSON.stringify(r, null, 2)}\n`), (err) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  });
}
