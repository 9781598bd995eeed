/**
 * The heartbeat actor end to end: a real nats-server, the sessions, approvals, tools, router and
 * agent-runner actors and the heartbeat actor as child processes, a fake OpenAI server behind
 * the real SDK, the `lurkbot heartbeat` CLI as a process. The gates make no LLM call (requests
 * on the fake counted); a HEARTBEAT_OK reply is never delivered; an alert is delivered once by
 * the heartbeat actor and the same alert is suppressed; the interval fires on its own; state
 * (enabled flag, last event, tokens, alert hashes) survives a restart of the actor.
 */
import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  heartbeatEventSchema, outboundMessageSchema, safeParseJson, subjects, type HeartbeatEvent, type OutboundMessage,
} from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { messageText } from "./fakes/openai-server.js";
import { waitFor, type ActorProcess } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { CliClient, TestSystem } from "./harness/system.js";

const S = subjects();
const MAIN_KEY = "agent:main:main";

/** an active-hours window of one hour that starts two hours from now (UTC): we are outside it */
function quietWindow(now = new Date()) {
  const hh = (h: number) => `${String(((h % 24) + 24) % 24).padStart(2, "0")}:00`;
  return { start: hh(now.getUTCHours() + 2), end: hh(now.getUTCHours() + 3), timeZone: "UTC" };
}

describe("heartbeat actor", () => {
  let system: TestSystem;
  let heartbeat: ActorProcess;
  let client: CliClient;
  let observer: NatsConnection;
  let admin: NatsConnection;
  let bus: BusClient;
  let cliEnv: Record<string, string>;
  const events: HeartbeatEvent[] = [];
  const delivered: OutboundMessage[] = [];

  const heartbeatFile = (content: string | null) => {
    const path = join(system.workspace, "HEARTBEAT.md");
    if (content === null) rmSync(path, { force: true });
    else writeFileSync(path, content);
  };
  const run = async (agentId = "main") => (await bus.call("heartbeat", "run", { agentId }, { timeoutMs: 30_000 })).event!;
  const status = async (agentId = "main") => (await bus.call("heartbeat", "status", { agentId })).agents[0]!;
  const cli = (...args: string[]) => runCli(["heartbeat", ...args], cliEnv);
  const startHeartbeat = async () => {
    heartbeat = await system.startActor("heartbeat");
  };

  before(async () => {
    system = await TestSystem.start();
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
      agents: [{ id: "main", default: true }, { id: "night" }, { id: "fast" }],
      heartbeat: {
        intervalMinutes: 60,
        runTimeoutMs: 20_000,
        // a killed instance's lease lapses in 2 s: its successor takes over within the test's waits
        leaseTtlMs: 2_000,
        leaseRenewMs: 500,
        agents: {
          night: { activeHours: quietWindow() },
          // a two-second interval; its workspace has no HEARTBEAT.md: every beat is a cheap skip
          fast: { intervalMinutes: 2 / 60 },
        },
      },
    }));
    cliEnv = system.nats.env(system.nats.passwordEnv("cli"));
    client = await CliClient.connect(system.nats, "main");
    observer = await system.nats.connect("cli");
    observer.subscribe(S.eventsOf("heartbeat"), {
      callback: (_e, msg) => {
        const parsed = heartbeatEventSchema.safeParse(safeParseJson(msg.data));
        if (parsed.success) events.push(parsed.data);
      },
    });
    observer.subscribe(S.outboundChannel("cli"), {
      callback: (_e, msg) => void delivered.push(outboundMessageSchema.parse(safeParseJson(msg.data))),
    });
    await observer.flush();
    bus = new BusClient(observer);
    admin = await system.nats.connect("admin");
    // the main session gets its last origin (cli/main) from a message the user writes
    await client.send("hello");
    await startHeartbeat();
  });

  after(async () => {
    await heartbeat?.stop();
    await client?.close();
    await observer?.close();
    await admin?.close();
    await system?.stop();
  });

  it("the gates skip without any LLM call and publish skipped events with their reason", async () => {
    const llmCalls = system.fake.requests.length;
    const deliveredBefore = delivered.length;
    heartbeatFile(null);
    const missing = await run();
    assert.deepEqual([missing.status, missing.reason], ["skipped", "no-heartbeat-file"]);
    heartbeatFile("# HEARTBEAT.md\n\n<!-- Keep this file empty to skip heartbeat checks. -->\n## Checks\n- [ ]\n- \n");
    const empty = await run();
    assert.equal(empty.status, "skipped");
    assert.equal(empty.reason, "empty-heartbeat-file");
    const quiet = await run("night");
    assert.equal(quiet.reason, "quiet-hours", "outside the night agent's active hours");

    heartbeatFile("- [ ] check the build\n");
    // a run in flight in the main session: the model call hangs until the run is aborted
    system.fake.enqueue({ kind: "hang", text: "thinking" });
    const busy = await client.publish("a long question");
    await waitFor(() => system.fake.requests.length > llmCalls, 10_000, "the user's run to reach the model");
    const inFlight = await run();
    assert.equal(inFlight.status, "skipped");
    assert.equal(inFlight.reason, "requests-in-flight");
    assert.equal(system.fake.requests.length, llmCalls + 1, "only the user's run reached the model");
    admin.publish(S.runControl(busy.runId), JSON.stringify({ type: "lurk.run.control.v1", id: "ctl-hb-1", ts: Date.now(), runId: busy.runId, action: "abort", reason: "test" }));
    await waitFor(async () => (await bus.call("router", "lanes", { sessionKey: MAIN_KEY })).lanes.every((l) => !l.activeRunId && l.queued === 0), 15_000, "the aborted run to free the lane");
    await waitFor(async () => !(await bus.call("sessions", "get", { sessionKey: MAIN_KEY })).session?.activeRunId, 10_000, "the session to be free");

    const reasons = events.filter((e) => e.agentId !== "fast" && e.status === "skipped").map((e) => e.reason);
    for (const r of ["no-heartbeat-file", "empty-heartbeat-file", "quiet-hours", "requests-in-flight"]) assert.ok(reasons.includes(r), `a skipped event with reason ${r}`);
    assert.equal(delivered.slice(deliveredBefore).filter((m) => m.kind === "notice").length, 0, "nothing delivered by a gate");
  });

  it("a HEARTBEAT_OK reply is a run in the main session whose reply never reaches the chat", async () => {
    heartbeatFile("- [ ] check the build\n");
    const llmCalls = system.fake.requests.length;
    const deliveredBefore = delivered.length;
    const tokensBefore = (await status()).tokensSpent;
    system.fake.enqueue({ kind: "text", text: "HEARTBEAT_OK" });
    const event = await run();
    assert.equal(event.status, "ok-token");
    assert.equal(event.indicatorType, "ok");
    assert.equal(system.fake.requests.length, llmCalls + 1, "one LLM call");
    const lastUser = system.fake.requests.at(-1)!.body.messages.filter((m) => m.role === "user").at(-1);
    assert.match(messageText(lastUser), /^\[system event\][\s\S]*Heartbeat Check[\s\S]*check the build[\s\S]*HEARTBEAT_OK/, "the heartbeat prompt with the checklist reached the model");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(delivered.length, deliveredBefore, "no delivery at all to the cli conversation");
    const after = await status();
    assert.ok(after.tokensSpent > tokensBefore, `tokens counted (${tokensBefore} -> ${after.tokensSpent})`);
    assert.equal(after.last?.status, "ok-token");

    system.fake.enqueue({ kind: "text", text: "HEARTBEAT_OK nothing is due today" });
    assert.equal((await run()).status, "ok-token", "token plus a short remark: within the ack limit");
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(delivered.length, deliveredBefore);
  });

  it("an alert is delivered once by the heartbeat actor; the same alert is suppressed", async () => {
    heartbeatFile("- [ ] check the build\n");
    const before = delivered.length;
    system.fake.enqueue({ kind: "text", text: "The nightly build is red: 3 tests fail." });
    const sent = await run();
    assert.equal(sent.status, "sent");
    assert.equal(sent.channel, "cli");
    assert.equal(sent.to, "main");
    const alert = await waitFor(() => delivered.slice(before).find((m) => m.text === "The nightly build is red: 3 tests fail."), 5000, "the alert");
    assert.equal(alert.kind, "notice");

    system.fake.enqueue({ kind: "text", text: "The nightly build is red:  3 tests fail." });
    const again = await run();
    assert.equal(again.status, "skipped");
    assert.equal(again.reason, "duplicate");

    const long = `HEARTBEAT_OK ${"The disk is 95% full. ".repeat(8).trim()}`;
    system.fake.enqueue({ kind: "text", text: long });
    assert.equal((await run()).status, "sent", "beyond the ack limit: an alert, token stripped");
    await waitFor(() => delivered.slice(before).some((m) => m.text.startsWith("The disk is 95% full.")), 5000, "the second alert");
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(delivered.slice(before).length, 2, "two alerts, the duplicate never delivered");
  });

  it("the interval fires on its own; each due beat is a skip without an LLM call", async () => {
    const llmCalls = system.fake.requests.length;
    const since = Date.now();
    await waitFor(() => events.filter((e) => e.agentId === "fast" && e.ts >= since).length >= 2, 12_000, "two scheduled beats of the fast agent");
    const fast = events.filter((e) => e.agentId === "fast" && e.ts >= since);
    assert.ok(fast.every((e) => e.status === "skipped" && e.reason === "no-heartbeat-file"));
    assert.equal(system.fake.requests.length, llmCalls);
    const st = await status("fast");
    assert.equal(st.everyMs, 2000);
    assert.ok(st.nextDueAt !== undefined && st.nextDueAt > since);
  });

  it("lurkbot heartbeat status|last|run|enable|disable", async () => {
    const table = await cli("status");
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /AGENT\s+ENABLED\s+EVERY/);
    assert.match(table.stdout, /^main\s+on\s+60m/m);
    assert.match(table.stdout, /^fast\s+on\s+2s/m);

    const last = await cli("last", "--json");
    assert.equal(last.code, 0, last.stderr);
    assert.equal(JSON.parse(last.stdout).agentId, "main");

    const disabled = await cli("disable", "--agent", "main", "--json");
    assert.equal(disabled.code, 0, disabled.stderr);
    assert.deepEqual(JSON.parse(disabled.stdout).map((a: { agentId: string; enabled: boolean }) => [a.agentId, a.enabled]), [["main", false]]);
    const ran = await cli("run", "--agent", "main");
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(ran.stdout, /main: skipped \(disabled\)/);

    const bad = await cli("frobnicate");
    assert.equal(bad.code, 64);
    assert.match(bad.stderr, /unknown subcommand "frobnicate"/);
    const unknown = await cli("status", "--agent", "nobody");
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /no agent "nobody"/);
  });

  it("state survives a restart of the heartbeat actor: enabled flag, last event, tokens, alert hashes", async () => {
    const before = await status();
    assert.equal(before.enabled, false, "disabled by the previous test");
    await heartbeat.stop();
    await startHeartbeat();
    const afterRestart = await status();
    assert.equal(afterRestart.enabled, false);
    assert.equal(afterRestart.tokensSpent, before.tokensSpent);
    assert.deepEqual(afterRestart.last, before.last);

    const enabled = await cli("enable", "--agent", "main", "--json");
    assert.equal(enabled.code, 0, enabled.stderr);
    assert.equal(JSON.parse(enabled.stdout)[0].enabled, true);
    assert.ok(JSON.parse(enabled.stdout)[0].nextDueAt > Date.now(), "enabled: the next beat is one interval away");

    heartbeatFile("- [ ] check the build\n");
    system.fake.enqueue({ kind: "text", text: "The nightly build is red: 3 tests fail." });
    const dup = await run();
    assert.equal(dup.status, "skipped");
    assert.equal(dup.reason, "duplicate", "the alert hash outlived the restart");
    assert.ok((await status()).tokensSpent > before.tokensSpent, "tokens keep adding up after the restart");
  });

  it("a heartbeat run under way when the actor dies is finished by the next instance", async () => {
    heartbeatFile("- [ ] check the build\n");
    const llmCalls = system.fake.requests.length;
    system.fake.enqueue({ kind: "hang", text: "checking" });
    const pendingCall = bus.call("heartbeat", "run", { agentId: "main" }, { timeoutMs: 5_000 }).catch((err: Error) => err);
    await waitFor(() => system.fake.requests.length > llmCalls, 10_000, "the heartbeat run to reach the model");
    await heartbeat.kill();
    assert.ok((await pendingCall) instanceof Error, "the killed actor never answered");
    const lane = await waitFor(async () => (await bus.call("router", "lanes", { sessionKey: MAIN_KEY })).lanes.find((l) => l.activeRunId), 5000, "the heartbeat run's lane");
    admin.publish(S.runControl(lane.activeRunId!), JSON.stringify({ type: "lurk.run.control.v1", id: "ctl-hb-2", ts: Date.now(), runId: lane.activeRunId, action: "abort", reason: "test" }));
    await waitFor(async () => (await bus.call("sessions", "run", { sessionKey: MAIN_KEY, runId: lane.activeRunId! })).status === "aborted", 10_000, "the run to end");
    const since = Date.now();
    await startHeartbeat();
    const recovered = await waitFor(() => events.find((e) => e.agentId === "main" && e.ts >= since && e.status === "failed"), 10_000, "the recovered run's event");
    assert.match(recovered.reason ?? "", /ABORTED|aborted/);
    assert.equal((await status()).last?.status, "failed");
  });
});

describe("heartbeat: the seeds' model, session and includeReasoning", () => {
  let system: TestSystem;
  let client: CliClient;
  let observer: NatsConnection;
  let bus: BusClient;
  const delivered: OutboundMessage[] = [];
  const HEARTBEAT_SESSION = "agent:main:cron:heartbeat";

  before(async () => {
    system = await TestSystem.start();
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
      agents: [{ id: "main", default: true }, { id: "other" }],
      heartbeat: {
        intervalMinutes: 60, runTimeoutMs: 20_000, model: "openai/cheap-model", session: HEARTBEAT_SESSION, includeReasoning: true,
        // a session of another agent: refused when that agent beats
        agents: { other: { session: "agent:main:cron:not-mine" } },
      },
    }));
    writeFileSync(join(system.workspace, "HEARTBEAT.md"), "- [ ] check the disk\n");
    client = await CliClient.connect(system.nats, "main");
    observer = await system.nats.connect("cli");
    observer.subscribe(S.outboundChannel("cli"), { callback: (_e, msg) => void delivered.push(outboundMessageSchema.parse(safeParseJson(msg.data))) });
    await observer.flush();
    bus = new BusClient(observer);
    await client.send("hello"); // the main session's origin: where alerts go
    await system.startActor("heartbeat");
  });
  after(async () => {
    await client?.close();
    await observer?.close();
    await system?.stop();
  });

  it("runs with heartbeat.model in heartbeat.session, and sends the reasoning before the alert to the target's origin", async () => {
    system.fake.reset();
    const before = delivered.length;
    system.fake.enqueue({ kind: "text", text: "The disk is 97% full.", reasoning: "df shows /var at 97%; that is above the 90% line in HEARTBEAT.md." });
    const event = (await bus.call("heartbeat", "run", { agentId: "main" }, { timeoutMs: 30_000 })).event!;
    assert.equal(event.status, "sent", JSON.stringify(event));
    assert.equal(system.fake.requests[0]!.body.model, "cheap-model", "heartbeat.model");
    const sent = await waitFor(() => (delivered.length >= before + 2 ? delivered.slice(before) : undefined), 10_000, "two messages");
    assert.deepEqual(sent.map((m) => [m.conversation, m.text]), [
      ["main", "Reasoning:\ndf shows /var at 97%; that is above the 90% line in HEARTBEAT.md."],
      ["main", "The disk is 97% full."],
    ]);
    assert.deepEqual(sent.map((m) => m.sessionKey), [HEARTBEAT_SESSION, HEARTBEAT_SESSION]);
    const inSession = JSON.stringify((await bus.call("sessions", "history", { sessionKey: HEARTBEAT_SESSION, limit: 20 })).records);
    assert.match(inSession, /check the disk/, "the heartbeat ran in heartbeat.session");
    const inMain = JSON.stringify((await bus.call("sessions", "history", { sessionKey: "agent:main:main", limit: 50 })).records);
    assert.doesNotMatch(inMain, /check the disk/, "the main conversation stays free of heartbeat checks");
  });

  it("without reasoning only the alert goes out", async () => {
    system.fake.reset();
    const before = delivered.length;
    system.fake.enqueue({ kind: "text", text: "Backups stopped 2 days ago." });
    const event = (await bus.call("heartbeat", "run", { agentId: "main" }, { timeoutMs: 30_000 })).event!;
    assert.equal(event.status, "sent");
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(delivered.slice(before).map((m) => m.text), ["Backups stopped 2 days ago."]);
  });

  it("a heartbeat.session of another agent fails with what to write instead, before any LLM call", async () => {
    system.fake.reset();
    const event = (await bus.call("heartbeat", "run", { agentId: "other" }, { timeoutMs: 30_000 })).event!;
    assert.equal(event.status, "failed");
    assert.match(event.reason ?? "", /CONFIG_INVALID: heartbeat\.session "agent:main:cron:not-mine" is not a session of agent other: use a key that starts with agent:other:/);
    assert.equal(system.fake.requests.length, 0);
  });
});
