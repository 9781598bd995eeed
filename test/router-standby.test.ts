/**
 * The router on several hosts: the router of the rig as a process (host A) and a second one in
 * process with its own data directory (host B), on a real nats-server with the sessions and
 * approvals actors and a scripted runner. One instance holds the lease and reads INBOUND; the
 * other reads nothing and relays the requests it takes. When the active router is SIGKILLed with
 * a run in flight, the other takes over (at once: the holder's process is gone from this host)
 * and holds that session's lane from the replica, so the next message waits for the run instead
 * of running beside it. When it stops cleanly, the first takes over with the DM pairing the other
 * decided: an approved sender is let in, a revoked one is asked for a code again.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ActorRuntime } from "../shared/runtime/actor.js";
import { loadConfig } from "../shared/runtime/config.js";
import { definition as routerActor } from "../services/router/actor.js";
import type { StatusReport } from "../services/cli/status.js";
import { startInProcess, waitFor } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { RouterRig } from "./harness/router-rig.js";

const ROUTING = {
  dm: { policy: "open", byChannel: { telegram: { policy: "pairing" } } },
  leaseTtlMs: 3_000,
  leaseRenewMs: 1_000,
};

describe("router: one active instance, a standby that relays and takes over", () => {
  const rig = new RouterRig();
  const { send, web, runOf, noRun, noticeFor, finish } = rig;
  let hostB: ActorRuntime | undefined;
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
    const config = loadConfig(rig.nats.env());
    hostB = await startInProcess(routerActor, rig.nats, { ...config, dataDir: join(rig.nats.home, "host-b") });
  });
  after(async () => {
    await hostB?.stop();
    await rig.stop();
  });

  it("the standby reads nothing and relays requests: every message is routed once, by the active router", async () => {
    const sent = await Promise.all(Array.from({ length: 6 }, (_, i) => web(`g-${i}`, `hello ${i}`)));
    for (const m of sent) finish(await runOf(m.runId));
    let processed = 0;
    for (let i = 0; i < 20; i++) processed = (await rig.bus.call("router", "status", {})).processed;
    assert.ok(processed >= 6, `the active router counted the messages (${processed})`);
    assert.ok(relayed.some((s) => s === "lurk.router.active.status"), "some status requests reached the standby and were relayed");
    const counts = await Promise.all(sent.map(async (m) => (await rig.runRequests()).filter((r) => r.runId === m.runId).length));
    assert.deepEqual(counts, sent.map(() => 1), "one run request per message");
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
    finish(firstRun);
    finish(await runOf(second.runId, "the second run, once the first ended"));
    assert.equal((await rig.runRequests()).filter((r) => r.runId === second.runId).length, 1);
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
    finish(await runOf(again.runId, "the approved sender's run at host A"));
    const back = await send("telegram", { kind: "dm", id: "leaver" }, "let me in", { sender: "leaver" });
    assert.match((await noticeFor(back.id)).text, /pairing code: [A-Z2-9]{8}/, "the revoked sender is asked for a code");
    await noRun(back.runId, 500);
    const { approved } = await rig.bus.call("router", "pairing", { action: "list" });
    assert.deepEqual(approved.map((a) => `${a.channel}:${a.senderId}`), ["telegram:newbie"]);
  });
});
