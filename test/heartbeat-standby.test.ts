/**
 * Two heartbeat instances, in process, each with its own data directory (two hosts), against
 * the real system (sessions, router, agent-runner as processes, fake LLM): one holds the lease
 * and beats, the other stands by and relays the requests it takes to the active one; when the
 * active instance stops, the standby takes over with the replicated state (tokens spent, the
 * alert already delivered, the run under way) and finishes that run.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  heartbeatEventSchema, outboundMessageSchema, safeParseJson, subjects, type HeartbeatEvent, type OutboundMessage,
} from "../shared/contract/index.js";
import type { ActorRuntime } from "../shared/runtime/actor.js";
import { BusClient } from "../shared/runtime/client.js";
import { Lease } from "../shared/runtime/lease.js";
import { loadConfig, type LurkConfig } from "../shared/runtime/config.js";
import { heartbeatActor } from "../services/heartbeat/actor.js";
import { gatherStatus } from "../services/cli/status.js";
import { startInProcess, waitFor } from "./harness/actors.js";
import { holdReplies } from "./harness/held-reply.js";
import { CliClient, TestSystem } from "./harness/system.js";

const S = subjects();
const ALERT = "The nightly backup did not run.";

describe("heartbeat: one active instance, a standby that relays and takes over", () => {
  let system: TestSystem;
  let config: LurkConfig;
  let first: ActorRuntime | undefined;
  let second: ActorRuntime | undefined;
  let observer: NatsConnection;
  let bus: BusClient;
  const events: HeartbeatEvent[] = [];
  const delivered: OutboundMessage[] = [];
  const relayed: string[] = [];
  const roles: string[] = [];
  /** counts the relayed requests (it is a subscriber there, so it goes before a test that needs none) */
  let relayWatch: Subscription | undefined;

  /** an instance on "another host": its own data directory; beats only when asked */
  const startInstance = (dir: string) => startInProcess(heartbeatActor({ tickMs: 3600_000 }), system.nats, { ...config, dataDir: join(system.nats.home, dir) });
  const status = async () => (await bus.call("heartbeat", "status", { agentId: "main" })).agents[0]!;
  /** the heartbeat rows of `lurkbot status`, read as the operator console (user cli): service id -> role */
  const roleRows = async () => {
    const cli = await system.nats.connect("cli");
    try {
      const report = await gatherStatus(cli, system.nats.url);
      return new Map(report.instances.filter((i) => i.name === "heartbeat").map((i) => [i.id, i.role]));
    } finally {
      await cli.close();
    }
  };

  before(async () => {
    system = await TestSystem.start({ config: { heartbeat: { intervalMinutes: 600, runTimeoutMs: 20_000, leaseTtlMs: 2_000, leaseRenewMs: 500 } } });
    writeFileSync(join(system.workspace, "HEARTBEAT.md"), "- [ ] check the backups\n");
    config = loadConfig(system.nats.env(system.env));
    observer = await system.nats.connect("admin");
    observer.subscribe(S.eventsOf("heartbeat"), {
      callback: (_e, msg) => {
        const parsed = heartbeatEventSchema.safeParse(safeParseJson(msg.data));
        if (parsed.success) events.push(parsed.data);
        else if (/\.(active|standby)$/.test(msg.subject)) roles.push(msg.subject.split(".").pop()!);
      },
    });
    observer.subscribe(S.outboundChannel("cli"), { callback: (err, msg) => void (err ? undefined : delivered.push(outboundMessageSchema.parse(safeParseJson(msg.data)))) });
    relayWatch = observer.subscribe(S.activeOpAll("heartbeat"), { callback: (_e, msg) => void relayed.push(msg.subject) });
    await observer.flush();
    bus = new BusClient(observer);
    const client = await CliClient.connect(system.nats, "main");
    await client.send("hello"); // the main session's last origin: cli/main
    await client.close();
    first = await startInstance("host-a");
    second = await startInstance("host-b");
  });

  after(async () => {
    system.fake.responder = undefined;
    await first?.stop();
    await second?.stop();
    await observer?.close();
    await system?.stop();
  });

  it("only the first instance beats; requests to either are answered by it", async () => {
    assert.deepEqual(roles, ["active"], "the second instance found the lease held and reported nothing");
    assert.deepEqual(await roleRows(), new Map([[first!.service.info().id, "active"], [second!.service.info().id, "standby"]]), "lurkbot status tells them apart");
    const before = delivered.length;
    system.fake.enqueue({ kind: "text", text: ALERT });
    const sent = (await bus.call("heartbeat", "run", { agentId: "main" }, { timeoutMs: 30_000 })).event!;
    assert.equal(sent.status, "sent", JSON.stringify(sent));
    const spent = (await status()).tokensSpent;
    assert.ok(spent > 0);
    // the services framework spreads requests over both instances: the standby relays its share
    const answers = await Promise.all(Array.from({ length: 20 }, () => status()));
    assert.ok(answers.every((a) => a.tokensSpent === spent && a.last?.id === sent.id), "every answer is the active instance's state");
    assert.ok(relayed.length > 0, "some requests went through the standby's relay");
    assert.ok(relayed.every((s) => s.startsWith(`${S.prefix}.heartbeat.active.`)));
    await waitFor(() => delivered.length > before, 5_000, "the alert");
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(delivered.slice(before).map((m) => m.text), [ALERT], "one delivery: one instance beat");
    // a bad request relayed by the standby gets the active instance's typed error
    const unknown = await Promise.all(Array.from({ length: 6 }, () => bus.call("heartbeat", "last", { agentId: "nobody" }).then(() => undefined, (err) => err as { code?: string })));
    assert.ok(unknown.every((e) => e?.code === "NOT_FOUND"), JSON.stringify(unknown));
  });

  it("the standby takes over with the replicated state and finishes the run under way", async () => {
    const spentBefore = (await status()).tokensSpent;
    const held = holdReplies(system.fake, (body) => JSON.stringify(body.messages).includes("check the backups"), { kind: "text", text: "HEARTBEAT_OK" });
    try {
      const pendingCall = bus.call("heartbeat", "run", { agentId: "main" }, { timeoutMs: 30_000 }).catch((err: Error) => err);
      await waitFor(() => held.reached, 10_000, "the heartbeat run to reach the model");
      await first!.stop(); // gives the lease up; the run stays under way
      first = undefined;
      await pendingCall;
      await waitFor(() => roles.filter((r) => r === "active").length === 2, 5_000, "the standby to take the lease");
      assert.deepEqual(await roleRows(), new Map([[second!.service.info().id, "active"]]));
      const since = events.length;
      held.release();
      const recovered = await waitFor(() => events.slice(since).find((e) => e.agentId === "main" && e.status !== "skipped"), 10_000, "the finished run's event");
      assert.equal(recovered.status, "ok-token");
      const now = await status();
      assert.ok(now.tokensSpent > spentBefore, `the tokens spent before the takeover and by the finished run are counted (${spentBefore} -> ${now.tokensSpent})`);
      assert.equal(now.last?.id, recovered.id);
    } finally {
      system.fake.responder = undefined;
      held.release();
    }
    // the second instance never delivered this alert; the replicated hash keeps it from repeating
    const before = delivered.length;
    await waitFor(async () => !(await bus.call("sessions", "get", { sessionKey: "agent:main:main" })).session?.activeRunId, 10_000, "the session to be free");
    system.fake.enqueue({ kind: "text", text: ALERT });
    const dup = (await bus.call("heartbeat", "run", { agentId: "main" }, { timeoutMs: 30_000 })).event!;
    assert.deepEqual([dup.status, dup.reason], ["skipped", "duplicate"], JSON.stringify(dup));
    assert.equal(delivered.length, before);
  });

  it("a standby with no active instance answers UNAVAILABLE and what to do; it takes over once the lease is free", async () => {
    relayWatch?.unsubscribe();
    await second!.stop();
    second = undefined;
    // a holder that died without giving the lease up (its TTL not yet over)
    const ghost = await Lease.open(observer, { key: "heartbeat", holder: "ghost", ttlMs: 60_000 });
    assert.equal(await ghost.acquire(), true);
    first = await startInstance("host-a");
    await assert.rejects(bus.call("heartbeat", "status", {}), (err: { code?: string; message?: string }) =>
      err.code === "UNAVAILABLE" && /no heartbeat instance is active right now .*retry in a few seconds/.test(err.message ?? ""));
    await ghost.release();
    const back = await waitFor(async () => status().catch(() => undefined), 5_000, "the instance to take the freed lease");
    assert.ok(back.tokensSpent > 0, "its host's older copy was replaced by the replicated state");
    assert.equal(back.last?.reason, "duplicate", "the last event is the one the other host recorded");
  });
});
