/**
 * The heartbeat actor in-process with a clock the test moves (`heartbeatActor({ clock })`,
 * ManualClock), against the real system (sessions, router, agent-runner as processes, fake LLM):
 * the 24 h alert suppression expires; an empty or NO_REPLY reply is an `ok-empty` event with no
 * delivery; a run that ends while the actor is down is finished by the next instance with its
 * real tokens; `target: "last"` runs in and delivers to the conversation used last.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  heartbeatEventSchema, outboundMessageSchema, safeParseJson, subjects, type HeartbeatEvent, type OutboundMessage,
} from "../shared/contract/index.js";
import type { ActorRuntime } from "../shared/runtime/actor.js";
import { BusClient } from "../shared/runtime/client.js";
import { loadConfig, type LurkConfig } from "../shared/runtime/config.js";
import { heartbeatActor } from "../services/heartbeat/actor.js";
import { startInProcess, waitFor } from "./harness/actors.js";
import { holdReplies } from "./harness/held-reply.js";
import { ManualClock } from "./harness/clock.js";
import { CliClient, TestSystem } from "./harness/system.js";

const S = subjects();
const DAY = 24 * 3600_000;

describe("heartbeat with a controllable clock", () => {
  let system: TestSystem;
  let heartbeat: ActorRuntime | undefined;
  let config: LurkConfig;
  let client: CliClient;
  let observer: NatsConnection;
  let bus: BusClient;
  const clock = new ManualClock(Date.now());
  const events: HeartbeatEvent[] = [];
  const delivered: OutboundMessage[] = [];

  const startHeartbeat = async (cfg: LurkConfig = config) => {
    // a tick interval far beyond the test: heartbeats run only when asked (`heartbeat.run`) or at start
    heartbeat = await startInProcess(heartbeatActor({ clock, tickMs: 3600_000 }), system.nats, cfg);
  };
  const stopHeartbeat = async () => {
    await heartbeat?.stop();
    heartbeat = undefined;
  };
  const run = async () => (await bus.call("heartbeat", "run", { agentId: "main" }, { timeoutMs: 30_000 })).event!;
  const tokens = async () => (await bus.call("heartbeat", "status", { agentId: "main" })).agents[0]!.tokensSpent;

  before(async () => {
    system = await TestSystem.start({ config: { heartbeat: { intervalMinutes: 600, runTimeoutMs: 20_000 } } });
    writeFileSync(join(system.workspace, "HEARTBEAT.md"), "- [ ] check the backups\n");
    config = loadConfig(system.nats.env(system.env));
    observer = await system.nats.connect("cli");
    observer.subscribe(S.eventsOf("heartbeat"), {
      callback: (_e, msg) => {
        const parsed = heartbeatEventSchema.safeParse(safeParseJson(msg.data));
        if (parsed.success) events.push(parsed.data);
      },
    });
    observer.subscribe(S.outboundChannel("cli"), { callback: (err, msg) => void (err ? undefined : delivered.push(outboundMessageSchema.parse(safeParseJson(msg.data)))) });
    await observer.flush();
    bus = new BusClient(observer);
    client = await CliClient.connect(system.nats, "main");
    await client.send("hello"); // the main session's last origin: cli/main
    await startHeartbeat();
  });

  after(async () => {
    await stopHeartbeat();
    await client?.close();
    await observer?.close();
    await system?.stop();
  });

  it("the same alert is suppressed for 24 hours, then delivered again", async () => {
    const alert = "Backups failed twice tonight.";
    const before = delivered.length;
    system.fake.enqueue({ kind: "text", text: alert });
    assert.equal((await run()).status, "sent");
    clock.advance(DAY - 60_000);
    system.fake.enqueue({ kind: "text", text: alert });
    const dup = await run();
    assert.deepEqual([dup.status, dup.reason], ["skipped", "duplicate"], "23 h 59 min later: still suppressed");
    clock.advance(2 * 60_000);
    system.fake.enqueue({ kind: "text", text: alert });
    assert.equal((await run()).status, "sent", "past 24 h the alert goes out again");
    await waitFor(() => delivered.slice(before).filter((m) => m.text === alert).length === 2, 5_000, "the second delivery");
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(delivered.slice(before).map((m) => [m.conversation, m.kind, m.text]), [["main", "notice", alert], ["main", "notice", alert]]);
  });

  it("an empty or NO_REPLY reply is an ok-empty event on the bus and nothing is delivered", async () => {
    const before = delivered.length;
    const since = events.length;
    for (const text of ["NO_REPLY", ""]) {
      clock.advance(60_000);
      system.fake.enqueue({ kind: "text", text });
      const event = await run();
      assert.equal(event.status, "ok-empty", `reply ${JSON.stringify(text)}`);
      assert.equal(event.silent, true);
    }
    const onBus = await waitFor(() => {
      const got = events.slice(since).filter((e) => e.status === "ok-empty");
      return got.length === 2 ? got : undefined;
    }, 5_000, "two lurk.evt.heartbeat.ok-empty events");
    assert.ok(onBus.every((e) => e.agentId === "main" && e.indicatorType === "ok"));
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(delivered.length, before, "nothing delivered");
  });

  it("a run that ends while the actor is down is finished by the next instance with its real tokens", async () => {
    const held = holdReplies(system.fake, (body) => JSON.stringify(body.messages).includes("check the backups"), { kind: "text", text: "HEARTBEAT_OK" });
    try {
      const tokensBefore = await tokens();
      clock.advance(60_000);
      const pendingCall = bus.call("heartbeat", "run", { agentId: "main" }, { timeoutMs: 30_000 }).catch((err: Error) => err);
      await waitFor(() => held.reached, 10_000, "the heartbeat run to reach the model");
      await stopHeartbeat();
      const answer = await pendingCall;
      assert.ok(answer instanceof Error || /actor stopping/.test(answer.event?.reason ?? ""), `the stopping actor left the run pending: ${JSON.stringify(answer)}`);
      held.release();
      const lastRun = await waitFor(async () => {
        const { session } = await bus.call("sessions", "get", { sessionKey: "agent:main:main" });
        return session && !session.activeRunId ? session : undefined;
      }, 10_000, "the run to end while the actor is down");
      assert.ok(lastRun);
      const since = events.length;
      await startHeartbeat();
      const recovered = await waitFor(() => events.slice(since).find((e) => e.agentId === "main" && e.status !== "skipped"), 10_000, "the recovered run's event");
      assert.equal(recovered.status, "ok-token");
      const spent = (await tokens()) - tokensBefore;
      assert.ok(spent > 0, `the recovered run's tokens are counted (${spent})`);
      assert.equal(spent, (recovered.usage?.total ?? 0) > 0 ? recovered.usage!.total : recovered.usage!.input + recovered.usage!.output);
    } finally {
      system.fake.responder = undefined;
      held.release();
    }
  });

  it("target last: the heartbeat runs in the conversation used last and its alert goes there", async () => {
    // the clock moved a day: re-plan the next interval beat from now, so the restart does not fire one
    await bus.call("heartbeat", "enable", { agentId: "main" });
    await stopHeartbeat();
    await startHeartbeat({ ...config, heartbeat: { ...config.heartbeat, target: "last" } });
    const side = await CliClient.connect(system.nats, "side-chat");
    try {
      await side.send("a question in another chat", { sessionName: "side" });
      const before = delivered.length;
      clock.advance(60_000);
      system.fake.enqueue({ kind: "text", text: "The side project's backup is stale." });
      // the side chat's run may hold its session a moment after its reply went out
      const event = await waitFor(async () => {
        const e = await run();
        return e.reason === "requests-in-flight" ? undefined : e;
      }, 10_000, "a heartbeat that is not skipped for the side chat's run");
      assert.equal(event.status, "sent", JSON.stringify(event));
      assert.deepEqual([event.channel, event.to], ["cli", "side-chat"]);
      const alert = await waitFor(() => delivered.slice(before).find((m) => m.text === "The side project's backup is stale."), 5_000, "the alert");
      assert.equal(alert.conversation, "side-chat");
      assert.notEqual(alert.sessionKey, "agent:main:main");
      const records = (await bus.call("sessions", "history", { sessionKey: alert.sessionKey!, limit: 50 })).records;
      assert.ok(records.some((r) => r.kind === "system_event" && /check the backups/.test(r.text ?? "")), "the heartbeat ran in that session");
      assert.ok(!delivered.slice(before).some((m) => m.conversation === "main"), "nothing to the main conversation");
    } finally {
      await side.close();
    }
  });
});
