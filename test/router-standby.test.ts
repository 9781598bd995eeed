/**
 * The router on several hosts: the router of the rig as a process (host A) and a second one in
 * process with its own data directory (host B), on a real nats-server with the sessions and
 * approvals actors and a scripted runner. One instance holds the lease and reads INBOUND; the
 * other reads nothing and relays the requests it takes. When the active router is SIGKILLed with
 * a run in flight, the other takes over (at once: the holder's process is gone from this host)
 * and holds that session's lane from the replica, so the next message waits for the run instead
 * of running beside it. When it stops cleanly, the first takes over with the DM pairing the other
 * decided: an approved sender is let in, a revoked one is asked for a code again. Group messages
 * kept as context by one instance (SIGKILLed or stopped) reach the model once, through the next;
 * an instance that lost the lease and takes it back reads the sessions' settings afresh; a message
 * merged into another's run whose ack was lost (a proxy between that router and nats-server left
 * its acks out) gets no run of its own from the next instance.
 */
import assert from "node:assert/strict";
import { hostname } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { LEASE_BUCKET, ROUTER_BUCKET, STREAMS, CONSUMERS, type RunRequest } from "../shared/contract/index.js";
import { after, before, describe, it } from "node:test";
import type { ActorRuntime } from "../shared/runtime/actor.js";
import { loadConfig, type LurkConfig } from "../shared/runtime/config.js";
import { definition as routerActor } from "../services/router/actor.js";
import { groupKey, handledKey } from "../services/router/replica.js";
import type { StatusReport } from "../services/cli/status.js";
import { AckDroppingProxy } from "./harness/ack-dropping-proxy.js";
import { startActorProcess, startInProcess, waitFor } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { RouterRig } from "./harness/router-rig.js";

const ROUTING = {
  dm: { policy: "open", byChannel: { telegram: { policy: "pairing" } } },
  // discord groups: mention gating (kept context) and collect (merged messages)
  groups: { byChannel: { discord: { requireMention: true } } },
  queue: { byChannel: { discord: { mode: "collect" } } },
  leaseTtlMs: 3_000,
  leaseRenewMs: 1_000,
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const textOf = (run: RunRequest) => run.inputs.map((i) => i.text);

describe("router: one active instance, a standby that relays and takes over", () => {
  const rig = new RouterRig();
  const { send, web, runOf, noRun, noticeFor, finish } = rig;
  let hostB: ActorRuntime | undefined;
  let config: LurkConfig;
  const startHostB = async () => (hostB = await startInProcess(routerActor, rig.nats, { ...config, dataDir: join(rig.nats.home, "host-b") }));
  const count = (role: string) => roles.filter((r) => r === role).length;
  const chat = (group: string, text: string, sender: string, mentioned = false) => send("discord", { kind: "group", id: group }, text, { sender, mentioned });
  /** the replicated entry under `key` in lurk_router (undefined: none) */
  const replicated = async (key: string) => {
    const entry = await (await new Kvm(rig.admin).open(ROUTER_BUCKET)).get(key);
    return entry?.operation === "PUT" ? entry.json<Record<string, unknown>>() : undefined;
  };
  const keptLines = async (group: string) => ((await replicated(groupKey(`agent:main:discord:group:${group}`)))?.lines as unknown[] | undefined)?.length ?? 0;
  const relayed: string[] = [];
  const roles: string[] = [];

  const pairingCode = async (text: string) => {
    const code = /pairing code: ([A-Z2-9]{8})/.exec(text)?.[1];
    assert.ok(code, text);
    return code!;
  };

  before(async () => {
    await rig.start({ agents: [{ id: "main", default: true }], routing: ROUTING, bus: { ackWaitMs: 2_000 } }, ["sessions", "approvals", "router"]);
    rig.admin.subscribe("lurk.router.active.>", { callback: (_e, m) => void relayed.push(m.subject) });
    rig.admin.subscribe("lurk.evt.router.*", { callback: (_e, m) => void roles.push(m.subject.split(".").at(-1)!) });
    await rig.admin.flush();
    config = loadConfig(rig.nats.env());
    await startHostB();
  });
  after(async () => {
    await hostB?.stop();
    await rig.stop();
  });

  it("the standby reads nothing and relays requests: every message is routed once, by the active router", async () => {
    const sent = await Promise.all(Array.from({ length: 6 }, (_, i) => web(`g-${i}`, `hello ${i}`)));
    const runs = await Promise.all(sent.map((m) => runOf(m.runId)));
    let processed = 0;
    for (let i = 0; i < 20; i++) processed = (await rig.bus.call("router", "status", {})).processed;
    assert.ok(processed >= 6, `the active router counted the messages (${processed})`);
    assert.ok(relayed.some((s) => s === "lurk.router.active.status"), "some status requests reached the standby and were relayed");
    const counts = await Promise.all(sent.map(async (m) => (await rig.runRequests()).filter((r) => r.runId === m.runId).length));
    assert.deepEqual(counts, sent.map(() => 1), "one run request per message");
    await Promise.all(runs.map((run) => finish(run)));
    // `lurkbot status`: the process holds the lease, the in-process instance stands by
    const run = await runCli(["status", "--json"], rig.nats.env(rig.nats.passwordEnv("cli")));
    assert.equal(run.code, 0, run.stderr);
    const rows = (JSON.parse(run.stdout) as StatusReport).instances.filter((i) => i.name === "router");
    assert.deepEqual(rows.map((r) => [r.pid === process.pid ? "host B" : "host A", r.role]).sort(), [["host A", "active"], ["host B", "standby"]]);
  });

  it("the active router SIGKILLed with a run in flight: the other holds that session's lane, so the next message waits for the run", async () => {
    const first = await web("g-held", "a long task");
    const firstRun = await runOf(first.runId);
    const activations = roles.filter((r) => r === "active").length;
    await rig.actor("router").kill();
    const second = await web("g-held", "and then this");
    await waitFor(() => roles.filter((r) => r === "active").length > activations, 10_000, "host B active");
    const lanes = await waitFor(async () => (await rig.bus.call("router", "lanes", { sessionKey: firstRun.sessionKey }).catch(() => undefined))?.lanes, 10_000, "the lanes of host B");
    assert.equal(lanes[0]?.activeRunId, first.runId, "the run in flight holds its lane at the new active router");
    await noRun(second.runId, 3_000); // the crashed router's unacked message came again (ack wait 2 s) and waits
    await finish(firstRun);
    const secondRun = await runOf(second.runId, "the second run, once the first ended");
    assert.equal((await rig.runRequests()).filter((r) => r.runId === second.runId).length, 1);
    await finish(secondRun);
    await rig.restart("router"); // host A again, as the standby
  });

  it("stopped cleanly, the active router hands over at once with the DM pairing it decided", async () => {
    const newbie = await send("telegram", { kind: "dm", id: "newbie" }, "hi bot", { sender: "newbie" });
    const leaver = await send("telegram", { kind: "dm", id: "leaver" }, "hello", { sender: "leaver" });
    const newbieCode = await pairingCode((await noticeFor(newbie.id)).text);
    const leaverCode = await pairingCode((await noticeFor(leaver.id)).text);
    await rig.bus.call("router", "pairing", { action: "approve", code: newbieCode, decidedBy: "cli:test" });
    await rig.bus.call("router", "pairing", { action: "approve", code: leaverCode, decidedBy: "cli:test" });
    await rig.bus.call("router", "pairing", { action: "revoke", channel: "telegram", senderId: "leaver" });
    const activations = roles.filter((r) => r === "active").length;
    await hostB!.stop();
    hostB = undefined;
    await waitFor(() => roles.filter((r) => r === "active").length > activations, 5_000, "host A active at once");
    const again = await send("telegram", { kind: "dm", id: "newbie" }, "hi again", { sender: "newbie" });
    await finish(await runOf(again.runId, "the approved sender's run at host A"));
    const back = await send("telegram", { kind: "dm", id: "leaver" }, "let me in", { sender: "leaver" });
    assert.match((await noticeFor(back.id)).text, /pairing code: [A-Z2-9]{8}/, "the revoked sender is asked for a code");
    await noRun(back.runId, 500);
    const { approved } = await rig.bus.call("router", "pairing", { action: "list" });
    assert.deepEqual(approved.map((a) => `${a.channel}:${a.senderId}`), ["telegram:newbie"]);
  });

  const context = (lines: string[], text: string) => ["[Chat messages since your last reply, for context]", ...lines, "", "[Current message, to you]", text].join("\n");

  it("group messages kept by an active router that is SIGKILLed reach the model once, through the next one", async () => {
    await startHostB(); // standby; the process (host A) is active
    await chat("crew", "anyone up for lunch?", "ann");
    await chat("crew", "pizza at noon", "ben");
    await waitFor(async () => (await keptLines("crew")) === 2, 5_000, "the kept lines in the replica");
    const activations = count("active");
    await rig.actor("router").kill();
    await waitFor(() => count("active") > activations, 10_000, "host B active");
    const mention = await chat("crew", "@bot book a table", "ann", true);
    const run = await runOf(mention.runId, "the mention's run at host B");
    await finish(run);
    assert.deepEqual(textOf(run), [context(["ann: anyone up for lunch?", "ben: pizza at noon"], "@bot book a table")]);
    await waitFor(async () => (await keptLines("crew")) === 0, 5_000, "the shown lines gone from the replica");
    const next = await chat("crew", "@bot and a cake", "ben", true);
    const nextRun = await runOf(next.runId, "the next mention's run");
    await finish(nextRun);
    assert.deepEqual(textOf(nextRun), ["@bot and a cake"], "shown once");
  });

  it("group messages kept by an active router that stops cleanly reach the model through the next one", async () => {
    await rig.restart("router"); // host A, standing by
    await chat("crew", "the usual place?", "cat");
    await waitFor(async () => (await keptLines("crew")) === 1, 5_000, "the kept line in the replica");
    const activations = count("active");
    await hostB!.stop();
    hostB = undefined;
    await waitFor(() => count("active") > activations, 5_000, "host A active at once");
    const mention = await chat("crew", "@bot yes?", "ann", true);
    const run = await runOf(mention.runId, "the mention's run at host A");
    await finish(run);
    assert.deepEqual(textOf(run), [context(["cat: the usual place?"], "@bot yes?")]);
  });

  it("an instance that lost the lease and takes it back reads the sessions' settings afresh", async () => {
    await startHostB(); // standby; host A is active
    const hostA = rig.actor("router").child;
    const first = await web("prefs", "hello", "web-user");
    const firstRun = await runOf(first.runId, "a run at host A (it caches the session's settings)");
    assert.equal(firstRun.options.thinking, undefined);
    await finish(firstRun);
    // the lease taken from host A without a restart: a live lease of nobody, until it lapses;
    // host A, standing by, is paused meanwhile so that host B takes it then
    const standbys = count("standby");
    const activations = count("active");
    const leases = await new Kvm(rig.admin).open(LEASE_BUCKET);
    await leases.put("router", JSON.stringify({ holder: "test:nobody", host: hostname(), pid: process.pid, ttlMs: ROUTING.leaseTtlMs, renewedAt: Date.now(), released: false }));
    await waitFor(() => count("standby") > standbys, 5_000, "host A standing by");
    hostA.kill("SIGSTOP");
    try {
      await waitFor(() => count("active") > activations, 10_000, "host B active once the lease lapsed");
      const directive = await web("prefs", "/think:high", "web-user");
      await noticeFor(directive.id);
    } finally {
      hostA.kill("SIGCONT");
    }
    await hostB!.stop();
    hostB = undefined;
    await waitFor(() => count("active") > activations + 1, 5_000, "host A active again");
    const again = await web("prefs", "hello again", "web-user");
    const run = await runOf(again.runId, "the run at host A");
    await finish(run);
    assert.equal(run.options.thinking, "high", "the setting host B stored while host A stood by");
  });

  it("a message merged into another's run whose ack was lost gets no run of its own from the next active router", async () => {
    // host A again, connected through a proxy that can lose its acks; it takes over from the rig's process
    const proxy = await AckDroppingProxy.start({ host: "127.0.0.1", port: rig.nats.port });
    const hostA = await startActorProcess("router", rig.nats, { LURKBOT_NATS_URL: proxy.url });
    try {
      let activations = count("active");
      await rig.actor("router").stop();
      await waitFor(() => count("active") > activations, 5_000, "the proxied host A active");
      await startHostB(); // standby
      const first = await chat("merge", "@bot first", "ann", true);
      const firstRun = await runOf(first.runId);
      // the first message's ack has reached the server (it leaves once the run is stored: wait for it, not only for the run)
      const jsm = await jetstreamManager(rig.admin);
      const consumer = () => jsm.consumers.info(STREAMS.inbound, CONSUMERS.router);
      await waitFor(async () => (await consumer()).num_ack_pending === 0, 5_000, "the first message acked");
      proxy.dropAcks = true;
      const second = await chat("merge", "@bot second", "ann", true);
      const third = await chat("merge", "@bot third", "ann", true);
      await sleep(400); // both wait for the lane and are collected into one run (well within the 2 s ack wait)
      await finish(firstRun);
      const merged = await runOf(second.runId, "the collected run");
      assert.deepEqual(textOf(merged), ["@bot second", "@bot third"]);
      await waitFor(() => replicated(handledKey(`discord:${third.id}`)), 5_000, "the merged message in the replica");
      assert.ok(proxy.dropped >= 2, `the acks of both were lost (${proxy.dropped})`);
      activations = count("active");
      await hostA.kill();
      await waitFor(() => count("active") > activations, 10_000, "host B active");
      // both come again after the ack wait: the second's run holds the lane (the replica), the third was merged into it
      const deliveredBefore = (await consumer()).delivered.consumer_seq;
      await waitFor(async () => {
        const info = await consumer();
        return info.delivered.consumer_seq >= deliveredBefore + 2 && info.num_ack_pending === 0;
      }, 10_000, "both delivered again and acked by host B");
      assert.equal((await rig.runRequests()).filter((r) => r.runId === merged.runId).length, 1, "the redelivered second stored no second request");
      await finish(merged);
      await noRun(third.runId, 1_500);
    } finally {
      await hostA.kill();
      await proxy.stop();
    }
  });
});
