/**
 * Two cron actors as on two hosts: each has its own LURKBOT_HOME (own LMDB), both on one
 * nats-server. Jobs reach the standby through the KV bucket lurk_cron_jobs; each fire id is
 * claimed once in lurk_cron_fires, so the standby that takes over fires the next slots and no
 * slot twice (counted on the `fired` events, which JetStream's duplicate window does not hide,
 * and on the INBOUND stream). A lone actor whose LMDB was emptied gets its jobs back.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { CRON_FIRES_BUCKET, STREAMS, subjects, type CronJob } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { collectActorEvents, type SeenActorEvent } from "./harness/events.js";
import { TestNats } from "./harness/nats.js";

const CRON_CONFIG = { cron: { leaseTtlMs: 2_000, leaseRenewMs: 400 } };
const s = subjects();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("cron on two hosts: jobs replicated, each fire once", () => {
  let nats: TestNats;
  let homeB: string;
  let a: ActorProcess | undefined;
  let b: ActorProcess | undefined;
  let nc: NatsConnection;
  let admin: NatsConnection;
  let bus: BusClient;
  let events: SeenActorEvent[];
  const start = (home: string) => startActorProcess("cron", nats, { LURKBOT_HOME: home });

  before(async () => {
    nats = await TestNats.start();
    homeB = mkdtempSync(join(tmpdir(), "lurk-cron-hostb-"));
    for (const home of [nats.home, homeB]) {
      mkdirSync(home, { recursive: true });
      writeFileSync(join(home, "config.json"), JSON.stringify(CRON_CONFIG));
    }
    nc = await nats.connect("cli");
    admin = await nats.connect("admin");
    bus = new BusClient(nc);
    events = await collectActorEvents(nc, "cron");
  });

  after(async () => {
    await a?.stop();
    await b?.stop();
    await nc?.close();
    await admin?.close();
    await nats?.stop();
    rmSync(homeB, { recursive: true, force: true });
  });

  it("the standby on its own store takes over the jobs and fires the next slots; no fire id twice", async () => {
    a = await start(nats.home);
    const first = a;
    await waitFor(() => events.find((e) => e.event === "active" && e.pid === first.child.pid), 10_000, "host A to take the lease");
    // added while only host A runs: host B's LMDB never sees this request
    const j1 = (await bus.call("cron", "add", { name: "pulse", schedule: { kind: "every", everyMs: 1_000 }, sessionTarget: "main", payload: { kind: "systemEvent", text: "pulse" } })).job;
    b = await start(homeB);
    const second = b;
    // added with both up (whichever answers): it reaches the other through the watch
    const j2 = (await bus.call("cron", "add", { name: "beat", schedule: { kind: "every", everyMs: 1_500 }, sessionTarget: "main", payload: { kind: "systemEvent", text: "beat" } })).job;
    await sleep(3_200);
    await first.kill();
    const killedAt = Date.now();
    await waitFor(() => events.find((e) => e.event === "active" && e.pid === second.child.pid), 10_000, "host B to take over");
    await sleep(3_500);
    for (const job of [j1, j2]) await bus.call("cron", "edit", { jobId: job.id, patch: { enabled: false } });
    await sleep(300);

    const fired = events.filter((e) => e.event === "fired");
    const fireIds = fired.map((e) => e.data.fireId as string);
    assert.equal(new Set(fireIds).size, fireIds.length, `a fire id fired twice: ${fireIds.join(", ")}`);
    for (const job of [j1, j2]) {
      const ofJob = fired.filter((e) => e.data.jobId === job.id);
      assert.ok(ofJob.some((e) => e.pid === first.child.pid), `host A fired ${job.name}`);
      assert.ok(ofJob.filter((e) => e.pid === second.child.pid).length >= 2, `host B fired ${job.name}'s next slots: ${JSON.stringify(ofJob)}`);
    }
    assert.ok(fired.filter((e) => e.pid === second.child.pid).every((e) => e.ts >= killedAt), "host B never fired while A held the lease");

    // INBOUND: one inject per fire id; the fires bucket: one published claim per fire id
    const jsm = await jetstreamManager(admin);
    const info = await jsm.streams.info(STREAMS.inbound, { subjects_filter: s.inject("main") });
    assert.equal(info.state.messages, fireIds.length);
    const claims = await new Kvm(admin).open(CRON_FIRES_BUCKET);
    const keys: string[] = [];
    for await (const key of await claims.keys()) keys.push(key);
    assert.deepEqual(keys.sort(), fireIds.map((id) => id.replace(":", ".")).sort());
    for (const key of keys) assert.equal((JSON.parse((await claims.get(key))!.string()) as { state: string }).state, "published");
  });

  it("a lone actor restarted with an emptied LMDB gets its jobs and their state back from JetStream", async () => {
    const before = (await bus.call("cron", "list", { includeDisabled: true })).jobs;
    assert.equal(before.length, 2);
    await b!.stop();
    rmSync(join(homeB, "data", "cron"), { recursive: true, force: true });
    b = await start(homeB);
    const after = (await bus.call("cron", "list", { includeDisabled: true })).jobs;
    const strip = (jobs: CronJob[]) => jobs.map((j) => ({ ...j })).sort((x, y) => x.id.localeCompare(y.id));
    assert.deepEqual(strip(after), strip(before));
    // and it keeps serving changes
    const edited = (await bus.call("cron", "edit", { jobId: before[0]!.id, patch: { name: "renamed" } })).job;
    assert.equal(edited.name, "renamed");
    await bus.call("cron", "rm", { jobId: before[1]!.id });
    await b!.stop();
    rmSync(join(homeB, "data", "cron"), { recursive: true, force: true });
    b = await start(homeB);
    const again = (await bus.call("cron", "list", { includeDisabled: true })).jobs;
    assert.deepEqual(again.map((j) => [j.id, j.name]), [[before[0]!.id, "renamed"]]);
  });
});
