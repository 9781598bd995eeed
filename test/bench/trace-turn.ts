/**
 * `node dist/test/bench/trace-turn.js [N]`: the bus timeline of a turn with one tool call.
 * Starts the whole system, warms it up, then records every message on the bus (as admin) during
 * N tool turns and prints, for each step in the sequence, its median offset from the inbound
 * publish. Used to find where a turn's time goes; not part of `npm run bench`.
 */
import type { Msg } from "@nats-io/transport-node";
import { CliClient, TestSystem } from "../harness/system.js";
import { cpuMeter } from "./cpu.js";
import { progress } from "./stats.js";

const N = Number(process.argv[2] ?? 40);

async function main(): Promise<void> {
  const system = await TestSystem.start({ files: { "notes.txt": "benchmark file\n" }, env: { LURKBOT_LOG_LEVEL: "warn" } });
  try {
    const client = await CliClient.connect(system.nats, "trace");
    progress("warming up");
    for (let i = 0; i < 40; i++) await client.send(i % 2 ? "read notes.txt" : "hello");
    // CPU per turn of every process, without the tracing subscriber
    const pids: Record<string, number> = { "nats-server": system.nats.pid!, "bench (client + fake LLM)": process.pid };
    for (const [name, actor] of system.actors) pids[name] = actor.child.pid!;
    const meter = cpuMeter(pids);
    const t0 = performance.now();
    for (let i = 0; i < 200; i++) await client.send("read notes.txt");
    const wall = performance.now() - t0;
    const used = meter.stop();
    process.stdout.write(`200 tool turns untraced: ${(wall / 200).toFixed(2)} ms a turn; CPU ms a turn: ${Object.entries(used).map(([k, v]) => `${k} ${(v / 200).toFixed(2)}`).join(", ")}\n`);
    const admin = await system.nats.connect("admin");
    let events: { t: number; subject: string; bytes: number }[] = [];
    admin.subscribe(">", { callback: (_e, m: Msg) => { events.push({ t: performance.now(), subject: m.subject, bytes: m.data.length }); } });
    await admin.flush();
    const timelines: { t: number; subject: string; bytes: number }[][] = [];
    const totals: number[] = [];
    for (let i = 0; i < N; i++) {
      events = [];
      const start = performance.now();
      await client.send("read notes.txt");
      totals.push(performance.now() - start);
      await new Promise((r) => setTimeout(r, 20));
      timelines.push(events.map((e) => ({ ...e, t: e.t - start })));
    }
    await admin.close();
    await client.close();
    const norm = (s: string) => s.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, "<id>").replace(/_INBOX[^ ]*/g, "_INBOX").replace(/\.cli[:.][^.]*$/, ".cli:…").replace(/\$JS\.ACK\..*/, "$JS.ACK…");
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
    const longest = Math.max(...timelines.map((t) => t.length));
    const ref = timelines.find((t) => t.length === longest)!;
    process.stdout.write(`turn p50 ${median(totals).toFixed(2)} ms over ${N} turns; ${ref.length} bus messages in a turn\n`);
    ref.forEach((e, idx) => {
      const at = median(timelines.filter((t) => t.length === longest).map((t) => t[idx]!.t));
      process.stdout.write(`${at.toFixed(2).padStart(8)} ms  ${String(e.bytes).padStart(6)} B  ${norm(e.subject)}\n`);
    });
  } finally {
    await system.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`trace failed: ${(err as Error).stack}\n`);
  process.exit(1);
});
