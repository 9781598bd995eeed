/**
 * The cron tool's update, status and wake actions through the tools actor, the real cron actor
 * and the bus (the whole system with the fake LLM): an agent updates its own job (the next fire
 * moves with the schedule; pausing drops it; the payload changes in place or turns into an agent
 * turn), cannot update another agent's job, reads the scheduler's status with its jobs' last
 * errors, and wakes its main session (next-heartbeat: the event waits; now: a run starts and the
 * fake LLM sees both events).
 */
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { subjects, toolCallReply, type CronJob } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { waitFor } from "./harness/actors.js";
import { TestSystem } from "./harness/system.js";

const s = subjects();
const HOUR = 3_600_000;

describe("the cron tool: update, status, wake", () => {
  let system: TestSystem;
  let nc: NatsConnection;
  let bus: BusClient;
  let agentNc: NatsConnection;
  let agentBus: BusClient;
  let n = 0;

  const tool = (args: Record<string, unknown>, opts: { agentId?: string; sessionKey?: string; toolCallId?: string } = {}) => agentBus.callSubject(s.toolCall("cron"), "lurk.tools.call.v1", {
    toolCallId: opts.toolCallId ?? `cron-tool-${++n}`, runId: "run-cron-tool-test", sessionKey: opts.sessionKey ?? `agent:${opts.agentId ?? "main"}:main`,
    agentId: opts.agentId ?? "main", tool: "cron", args,
  }, toolCallReply, { timeoutMs: 20_000 });
  const text = (r: { content: Array<{ type: string; text?: string }> }) => r.content.map((b) => b.text ?? "").join("");
  const job = async (jobId: string) => (await bus.call("cron", "get", { jobId })).job as CronJob;
  const history = async (sessionKey: string) => (await bus.call("sessions", "history", { sessionKey, limit: 200 })).records;
  const addNote = async (args: Record<string, unknown>) => {
    const added = await tool({ action: "add", systemEvent: true, ...args });
    assert.equal(added.isError, false, text(added));
    return /added (cron_[0-9a-f]{8})/.exec(text(added))![1]!;
  };

  before(async () => {
    system = await TestSystem.start({ config: { cron: { leaseTtlMs: 2_000, leaseRenewMs: 400 }, agents: [{ id: "main", default: true, toolProfile: "full" }, { id: "ops", toolProfile: "full" }] } });
    await system.startActor("cron");
    // the ops agent's own workspace (the tools actor confines its calls there)
    mkdirSync(join(system.nats.home, "workspace-ops"), { recursive: true });
    nc = await system.nats.connect("cli");
    bus = new BusClient(nc);
    agentNc = await system.nats.connect("agent-runner");
    agentBus = new BusClient(agentNc);
    await waitFor(async () => (await bus.call("cron", "status", {})).active, 10_000, "the cron actor to take the lease");
  });

  after(async () => {
    await nc?.close();
    await agentNc?.close();
    await system?.stop();
  });

  it("update changes the agent's own job: the next fire moves with the schedule, enabled pauses, the payload changes", async () => {
    const id = await addNote({ name: "standup", every: "1h", message: "stand up" });
    const before = await job(id);
    assert.equal(before.state.nextRunAtMs, before.createdAtMs + HOUR);

    const t0 = Date.now();
    const slower = await tool({ action: "update", jobId: id, every: "3h" });
    assert.equal(slower.isError, false, text(slower));
    assert.match(text(slower), new RegExp(`^updated ${id}\\s+"standup"\\s+every 3h`));
    const moved = await job(id);
    assert.deepEqual(moved.schedule, { kind: "every", everyMs: 3 * HOUR });
    // a new schedule plans from the job's anchor (its creation): the next fire moved two hours on
    assert.equal(moved.state.nextRunAtMs, before.createdAtMs + 3 * HOUR);
    assert.ok(moved.updatedAtMs >= t0);

    const weekdays = await tool({ action: "update", jobId: id, cron: "0 9 * * 1-5", tz: "Europe/Berlin", name: "morning" });
    assert.equal(weekdays.isError, false, text(weekdays));
    const cronJob = await job(id);
    assert.deepEqual(cronJob.schedule, { kind: "cron", expr: "0 9 * * 1-5", tz: "Europe/Berlin" });
    assert.equal(cronJob.name, "morning");
    const next = new Date(cronJob.state.nextRunAtMs!);
    assert.ok(next.getTime() > Date.now());
    const local = new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Berlin", hour: "2-digit", minute: "2-digit", weekday: "short", hourCycle: "h23" }).format(next);
    assert.match(local, /^(Mon|Tue|Wed|Thu|Fri) 09:00$/, local);
    // tz alone changes the zone of the cron expression
    await tool({ action: "update", jobId: id, tz: "America/New_York" });
    assert.deepEqual((await job(id)).schedule, { kind: "cron", expr: "0 9 * * 1-5", tz: "America/New_York" });

    const paused = await tool({ action: "update", jobId: id, enabled: false });
    assert.match(text(paused), /disabled/);
    assert.equal((await job(id)).enabled, false);
    assert.equal((await job(id)).state.nextRunAtMs, undefined, "a paused job has no next fire");
    await tool({ action: "update", jobId: id, enabled: true, message: "sit down", wake: "now" });
    const resumed = await job(id);
    assert.equal(resumed.enabled, true);
    assert.ok(resumed.state.nextRunAtMs! > Date.now());
    assert.deepEqual(resumed.payload, { kind: "systemEvent", text: "sit down" });
    assert.equal(resumed.wakeMode, "now");

    // a note becomes an agent turn: target, payload and delivery follow
    const turned = await tool({ action: "update", jobId: id, systemEvent: false, deliver: "none", thinking: "low" });
    assert.equal(turned.isError, false, text(turned));
    const turn = await job(id);
    assert.equal(turn.sessionTarget, "isolated");
    assert.equal(turn.payload.kind, "agentTurn");
    assert.deepEqual(turn.payload.kind === "agentTurn" && [turn.payload.message, turn.payload.deliver, turn.payload.thinking], ["sit down", false, "low"]);
    await tool({ action: "update", jobId: id, deliver: "telegram:4242" });
    const delivered = await job(id);
    assert.deepEqual(delivered.payload.kind === "agentTurn" && [delivered.payload.deliver, delivered.payload.channel, delivered.payload.to, delivered.payload.thinking], [true, "telegram", "4242", "low"]);

    // the same rules as add; the job stays as it was
    const badCron = await tool({ action: "update", jobId: id, cron: "61 * * * *" });
    assert.equal(badCron.isError, true);
    assert.equal(badCron.errorCode, "VALIDATION_FAILED");
    assert.match(text(badCron), /the cron expression "61 \* \* \* \*" is invalid/);
    const twoSchedules = await tool({ action: "update", jobId: id, every: "1h", at: "+1h" });
    assert.match(text(twoSchedules), /give exactly one schedule/);
    const nothing = await tool({ action: "update", jobId: id });
    assert.equal(nothing.errorCode, "TOOL_INVALID_ARGS");
    assert.match(text(nothing), /update needs something to change/);
    const noId = await tool({ action: "update", every: "1h" });
    assert.match(text(noId), /update needs jobId/);
    assert.deepEqual((await job(id)).schedule, { kind: "cron", expr: "0 9 * * 1-5", tz: "America/New_York" });
    await tool({ action: "rm", jobId: id });
  });

  it("an agent cannot update another agent's job, and a note takes no agent-turn fields", async () => {
    const foreign = (await bus.call("cron", "add", { name: "ops note", agentId: "ops", schedule: { kind: "every", everyMs: HOUR }, sessionTarget: "main", payload: { kind: "systemEvent", text: "ops only" } })).job;
    const denied = await tool({ action: "update", jobId: foreign.id, every: "5m", message: "hijacked" });
    assert.equal(denied.isError, true);
    assert.equal(denied.errorCode, "FORBIDDEN");
    assert.match(text(denied), new RegExp(`job ${foreign.id} belongs to agent ops, not to you`));
    const unchanged = await job(foreign.id);
    assert.deepEqual([unchanged.schedule, unchanged.payload, unchanged.updatedAtMs], [foreign.schedule, foreign.payload, foreign.updatedAtMs]);
    // its owner may
    const own = await tool({ action: "update", jobId: foreign.id, every: "2h" }, { agentId: "ops" });
    assert.equal(own.isError, false, text(own));
    assert.deepEqual((await job(foreign.id)).schedule, { kind: "every", everyMs: 2 * HOUR });
    const turnField = await tool({ action: "update", jobId: foreign.id, model: "openai/test-model" }, { agentId: "ops" });
    assert.equal(turnField.errorCode, "TOOL_INVALID_ARGS");
    assert.match(text(turnField), /model: only for agent-turn jobs/);
    const missing = await tool({ action: "update", jobId: "cron_00000000", every: "1h" });
    assert.equal(missing.errorCode, "NOT_FOUND");
    await bus.call("cron", "rm", { jobId: foreign.id });
  });

  it("status reports the scheduler, the agent's job counts, its next fire and its jobs' last errors", async () => {
    const soon = await addNote({ name: "soon", every: "10m", message: "tick" });
    const later = await addNote({ name: "later", every: "5h", message: "tock" });
    await tool({ action: "update", jobId: later, enabled: false });
    // an agent turn delivered to the main session's last conversation, which this agent has none of: its fire fails
    const broken = await tool({ action: "add", name: "broken", every: "2h", message: "report", deliver: "last" });
    const brokenId = /added (cron_[0-9a-f]{8})/.exec(text(broken))![1]!;
    const ran = await tool({ action: "run", jobId: brokenId }, { agentId: "main", sessionKey: "agent:main:cron:elsewhere" });
    assert.match(text(ran), /^skipped /);
    const foreign = (await bus.call("cron", "add", { name: "ops job", agentId: "ops", schedule: { kind: "every", everyMs: 60_000 }, sessionTarget: "main", payload: { kind: "systemEvent", text: "x" } })).job;

    const status = await tool({ action: "status" });
    assert.equal(status.isError, false, text(status));
    const lines = text(status).split("\n");
    assert.match(lines[0]!, /^scheduler: firing jobs; the instance that answered holds the lease and schedules; 4 job\(s\) of all agents$/);
    assert.equal(lines[1], "your jobs: 3 (2 enabled, 1 disabled)");
    const soonJob = await job(soon);
    assert.equal(lines[2], `your next fire: ${new Date(soonJob.state.nextRunAtMs!).toISOString()} ${soon} "soon"`, "the agent's own next fire, not the ops job's sooner one");
    assert.equal(lines[3], "last runs that failed:");
    assert.match(lines[4]!, new RegExp(`^  ${brokenId} "broken" at \\d{4}-\\d\\d-\\d\\dT.*: .*conversation`));
    assert.ok(!text(status).includes(foreign.id), "another agent's jobs are not shown");

    const opsStatus = text(await tool({ action: "status" }, { agentId: "ops" }));
    assert.match(opsStatus, /your jobs: 1 \(1 enabled, 0 disabled\)/);
    assert.match(opsStatus, /no job's last run failed/);
    for (const jobId of [soon, later, brokenId, foreign.id]) await bus.call("cron", "rm", { jobId });
  });

  it("wake puts a system event in the main session: next-heartbeat waits, now starts a run that sees both", async () => {
    const quiet = await tool({ action: "wake", message: "remember the milk" }, { sessionKey: "agent:main:cron:somejob" });
    assert.equal(quiet.isError, false, text(quiet));
    assert.match(text(quiet), /^queued the system event: it waits in your main session for its next run/);
    await waitFor(async () => (await history("agent:main:main")).some((r) => r.kind === "system_event" && r.text === "remember the milk"), 10_000, "the waiting event in the main session");
    const requestsBefore = system.fake.requests.length;
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(system.fake.requests.length, requestsBefore, "next-heartbeat starts no run");

    const loud = await tool({ action: "wake", message: "check the oven", wake: "now" }, { sessionKey: "agent:main:cron:somejob", toolCallId: "wake-once" });
    assert.match(text(loud), /^queued the system event: a run of your main session starts with it$/);
    const request = await waitFor(() => system.fake.requests.slice(requestsBefore).find((r) => JSON.stringify(r.body.messages).includes("check the oven")), 20_000, "the woken run's LLM request");
    const seen = JSON.stringify(request.body.messages);
    assert.ok(seen.includes("[system event] remember the milk"), `the waiting event reaches the model too: ${seen.slice(0, 400)}`);
    // the same tool call again lands once
    const again = await tool({ action: "wake", message: "check the oven", wake: "now" }, { sessionKey: "agent:main:cron:somejob", toolCallId: "wake-once" });
    assert.match(text(again), /^already queued/);
    const fromMain = await tool({ action: "wake", message: "later", wake: "now" }, { toolCallId: "wake-from-main" });
    assert.match(text(fromMain), /starts with it once this run has ended$/);
    const empty = await tool({ action: "wake" });
    assert.equal(empty.errorCode, "TOOL_INVALID_ARGS");
    assert.match(text(empty), /wake needs message/);
  });
});
