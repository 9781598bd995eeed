/**
 * `node dist/test/bench/trace-turn.js [N] [--short]`: where a turn with one tool call spends its
 * time. Starts the whole system and warms it up; then runs 200 tool turns untraced and prints
 * the CPU milliseconds each process used per turn (and per thread of the agent-runner); then
 * records every message on the bus (as admin) during N traced turns and prints, for each step
 * of the most common sequence, its median offset from the inbound publish. `--short` runs the
 * untraced turns in sessions of 10 turns each (a short history). Not part of `npm run bench`.
 */
import type { Msg } from "@nats-io/transport-node";
import { CliClient, TestSystem } from "../harness/system.js";
import { cpuMeter, ioCalls, threadCpuMs } from "./cpu.js";
import { progress } from "./stats.js";

const N = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 40);
const SHORT = process.argv.includes("--short");
/** turns before anything is measured (LURKBOT_TRACE_WARMUP, default 40; the benchmark warms up with 1 000) */
const WARMUP = Number(process.env.LURKBOT_TRACE_WARMUP ?? 40);

async function main(): Promise<void> {
  const system = await TestSystem.start({ files: { "notes.txt": "benchmark file\n" }, env: { LURKBOT_LOG_LEVEL: "warn" } });
  try {
    const client = await CliClient.connect(system.nats, "trace");
    progress("warming up");
    for (let i = 0; i < WARMUP; i++) await client.send(i % 2 ? "read notes.txt" : "hello");
    // CPU per turn of every process, without the tracing subscriber
    const pids: Record<string, number> = { "nats-server": system.nats.pid!, "bench (client + fake LLM)": process.pid };
    for (const [name, actor] of system.actors) pids[name] = actor.child.pid!;
    const meter = cpuMeter(pids);
    const threadsBefore = threadCpuMs(pids["agent-runner"]!);
    const ioBefore = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, ioCalls(pid)]));
    const t0 = performance.now();
    for (let i = 0; i < 200; i++) await client.send("read notes.txt", SHORT ? { sessionName: `short-${Math.floor(i / 10)}` } : {});
    const wall = performance.now() - t0;
    const used = meter.stop();
    const threadsAfter = threadCpuMs(pids["agent-runner"]!);
    const io = Object.entries(pids).map(([k, pid]) => {
      const now = ioCalls(pid);
      return `${k} ${((now.reads - ioBefore[k]!.reads) / 200).toFixed(1)}/${((now.writes - ioBefore[k]!.writes) / 200).toFixed(1)}`;
    });
    process.stdout.write(`read/write syscalls a turn: ${io.join(", ")}\n`);
    process.stdout.write(`agent-runner threads, CPU ms a turn: ${Object.entries(threadsAfter).map(([k, v]) => `${k} ${((v - (threadsBefore[k] ?? 0)) / 200).toFixed(2)}`).join(", ")}\n`);
    const perTurn = Object.entries(used).map(([k, t]) => `${k} ${((t.user + t.system) / 200).toFixed(2)} (${(t.user / 200).toFixed(1)}u/${(t.system / 200).toFixed(1)}s)`);
    process.stdout.write(`200 tool turns untraced: ${(wall / 200).toFixed(2)} ms a turn; CPU ms a turn: ${perTurn.join(", ")}\n`);
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
    const lengths = new Map<number, number>();
    for (const t of timelines) lengths.set(t.length, (lengths.get(t.length) ?? 0) + 1);
    const longest = [...lengths].sort((a, b) => b[1] - a[1])[0]![0];
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
