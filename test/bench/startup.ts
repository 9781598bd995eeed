/** Cold start (every actor answering $SRV.PING) and the single-process launcher's memory. */
import { spawn, type ChildProcess } from "node:child_process";
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Svcm } from "@nats-io/services";
import { connect } from "@nats-io/transport-node";
import { inboxPrefix } from "../../shared/contract/index.js";
import { readCredentials } from "../../shared/runtime/credentials.js";
import { ACTOR_NODE_FLAGS } from "../../shared/runtime/memory.js";
import { actorMainPath, DIST_ROOT } from "../../shared/scripts/paths.js";
import { freePort, TestNats } from "../harness/nats.js";
import { ACTOR_ORDER } from "../harness/system.js";
import { progress, rssMb } from "./stats.js";

async function pingedActors(url: string, user: string, pass: string): Promise<Set<string>> {
  const nc = await connect({ servers: url, user, pass, inboxPrefix: inboxPrefix(user), reconnect: false });
  const seen = new Set<string>();
  try {
    const it = await new Svcm(nc).client({ strategy: "timer", maxWait: 150 }).ping();
    for await (const p of it) seen.add(p.name);
  } finally {
    await nc.close();
  }
  return seen;
}

async function untilAllPing(url: string, user: string, pass: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const seen = await pingedActors(url, user, pass).catch(() => new Set<string>());
    if (ACTOR_ORDER.every((a) => seen.has(a))) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("not every actor answered $SRV.PING in time");
}

/** Actors started as separate processes at once, nats-server already up. */
export async function coldStart(): Promise<Record<string, number>> {
  const nats = await TestNats.start();
  const runs: number[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      const children: ChildProcess[] = ACTOR_ORDER.map((name) => fork(actorMainPath(name), [], { env: nats.env({ ...nats.passwordEnv(name), LURKBOT_LOG_LEVEL: "warn" }), stdio: ["ignore", "ignore", "ignore", "ipc"], execArgv: ACTOR_NODE_FLAGS }));
      await untilAllPing(nats.url, "admin", nats.password("admin"));
      runs.push(Date.now() - started);
      await Promise.all(children.map((c) => new Promise((r) => { c.once("exit", r); c.kill("SIGTERM"); })));
      progress(`cold start ${i + 1}: ${runs.at(-1)} ms`);
    }
  } finally {
    await nats.stop();
  }
  return { actorsOnlyMs: Math.min(...runs), actorsOnlyMedianMs: runs.sort((a, b) => a - b)[1]! };
}

/** `lurkbot start --single-process` with its own nats-server: time to ready and RSS at idle. */
export async function singleProcess(): Promise<Record<string, number>> {
  const home = mkdtempSync(join(tmpdir(), "lurk-bench-"));
  const port = await freePort();
  const url = `nats://127.0.0.1:${port}`;
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", LURKBOT_HOME: home, LURKBOT_NATS_URL: url, LURKBOT_LOG_LEVEL: "warn" };
  const started = Date.now();
  const launcher = spawn(process.execPath, [join(DIST_ROOT, "services", "cli", "main.js"), "start", "--single-process"], { env, stdio: ["ignore", "ignore", "inherit"] });
  try {
    let pass = "";
    const deadline = Date.now() + 30_000;
    while (!pass && Date.now() < deadline) {
      try { pass = readCredentials(join(home, "credentials", "nats.json")).users.admin ?? ""; } catch { await new Promise((r) => setTimeout(r, 20)); }
    }
    await untilAllPing(url, "admin", pass);
    const readyMs = Date.now() - started;
    await new Promise((r) => setTimeout(r, 3000));
    const launcherRss = rssMb(launcher.pid!);
    const natsPid = await natsServerPid(port);
    const natsRss = natsPid ? rssMb(natsPid) : 0;
    return { coldStartWithNatsServerMs: readyMs, actorsProcessRssMb: launcherRss, natsServerRssMb: natsRss, totalRssMb: Math.round((launcherRss + natsRss) * 10) / 10 };
  } finally {
    await new Promise((r) => { launcher.once("exit", r); launcher.kill("SIGTERM"); });
    rmSync(home, { recursive: true, force: true });
  }
}

async function natsServerPid(port: number): Promise<number | undefined> {
  const { readdirSync, readFileSync } = await import("node:fs");
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      const environ = readFileSync(`/proc/${entry}/environ`, "utf8");
      if (cmd.includes("nats-server") && environ.includes(`LURKBOT_NATS_PORT=${port}`)) return Number(entry);
    } catch { /* gone */ }
  }
  return undefined;
}
