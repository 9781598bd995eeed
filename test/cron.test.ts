/**
 * The cron actor over a real bus. (1) With the whole system (fake LLM): an agentTurn job fires,
 * the run happens in the job's cron session and its reply is delivered; systemEvent injects land
 * in the main session (or start a run with wake "now"); the CLI; the cron tool through the tools actor (and its clear error while no cron
 * actor runs). (2) Two cron actors on one store: one is active (lease), every fire happens
 * once, and the standby takes over when the active one is killed.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  outboundMessageSchema, safeParseJson, STREAMS, subjects, toolCallReply, type CronJob, type OutboundMessage,
} from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { collectActorEvents, type SeenActorEvent } from "./harness/events.js";
import { TestNats } from "./harness/nats.js";
import { CliClient, TestSystem } from "./harness/system.js";

const CRON_CONFIG = { cron: { leaseTtlMs: 2_000, leaseRenewMs: 400 } };
const s = subjects();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type AddBody = Parameters<BusClient["call"]>[2];

describe("cron actor in the whole system", () => {
  let system: TestSystem;
  let cron: ActorProcess;
  let nc: NatsConnection;
  let bus: BusClient;
  let agentNc: NatsConnection;
  let agentBus: BusClient;
  const outbound: OutboundMessage[] = [];
  let cronEvents: SeenActorEvent[];
  let cliEnv: Record<string, string>;
  let admin: NatsConnection;

  const add = async (body: Record<string, unknown>) => (await bus.call("cron", "add", body as AddBody as never)).job as CronJob;
  const runsOf = async (jobId: string) => (await bus.call("cron", "runs", { jobId, limit: 100 })).runs;
  const finished = (jobId: string, n = 1) => waitFor(async () => {
    const runs = await runsOf(jobId);
    return runs.filter((r) => r.status !== "running").length >= n ? runs : undefined;
  }, 30_000, `${n} finished run(s) of ${jobId}`);
  const history = async (sessionKey: string) => (await bus.call("sessions", "history", { sessionKey, limit: 200 })).records;

  before(async () => {
    system = await TestSystem.start({ config: { ...CRON_CONFIG, agents: [{ id: "main", default: true, toolProfile: "full" }, { id: "ops" }] } });
    cron = await system.startActor("cron");
    nc = await system.nats.connect("cli");
    bus = new BusClient(nc);
    agentNc = await system.nats.connect("agent-runner");
    agentBus = new BusClient(agentNc);
    nc.subscribe(s.outboundChannel("cli"), { callback: (_e, m) => void outbound.push(outboundMessageSchema.parse(safeParseJson(m.data))) });
    cronEvents = await collectActorEvents(nc, "cron");
    admin = await system.nats.connect("admin");
    cliEnv = system.nats.env(system.nats.passwordEnv("cli"));
    await waitFor(async () => (await bus.call("cron", "status", {})).active, 10_000, "the cron actor to take the lease");
  });

  after(async () => {
    await nc?.close();
    await agentNc?.close();
    await admin?.close();
    await system?.actors.get("cron")?.stop();
    await system?.stop();
  });

  it("an agentTurn job at a time a second ahead runs in its cron session, delivers, records ok, and is deleted after the run", async () => {
    const job = await add({
      name: "brief", schedule: { kind: "at", atMs: Date.now() + 1_000 }, sessionTarget: "isolated", deleteAfterRun: true,
      payload: { kind: "agentTurn", message: "summarize the news", channel: "cli", to: "cron-out", timeoutSeconds: 60 },
    });
    assert.match(job.id, /^cron_[0-9a-f]{8}$/);
    assert.equal(job.state.nextRunAtMs, job.schedule.kind === "at" ? job.schedule.atMs : -1);
    const [run] = await finished(job.id);
    assert.equal(run!.status, "ok", JSON.stringify(run));
    assert.ok(run!.runId);
    assert.equal(run!.fireId, `${job.id}:${job.state.nextRunAtMs}`);
    const delivered = await waitFor(() => outbound.find((m) => m.conversation === "cron-out" && m.text.includes("summarize the news")), 10_000, "the delivered reply");
    assert.equal(delivered.text, "echo: summarize the news");
    const records = await history(`agent:main:cron:${job.id}`);
    assert.ok(records.some((r) => r.kind === "message" && r.message?.role === "user"), "the task is in the cron session's transcript");
    // deleteAfterRun: gone once the run ended well; its log stays
    await waitFor(async () => !(await bus.call("cron", "list", {})).jobs.some((j) => j.id === job.id), 5_000, "the job to be deleted");
    assert.equal((await runsOf(job.id)).length, 1);
  });

  it("a systemEvent lands in the main session (next-heartbeat) and starts a run (wake now)", async () => {
    const quiet = await add({ name: "note", schedule: { kind: "every", everyMs: 3_600_000 }, sessionTarget: "main", payload: { kind: "systemEvent", text: "water the plants" } });
    const fired = await bus.call("cron", "run", { jobId: quiet.id, mode: "force" });
    assert.equal(fired.status, "fired");
    await waitFor(async () => (await history("agent:main:main")).some((r) => r.kind === "system_event" && r.text === "water the plants"), 10_000, "the system event in the main session");
    const [entry] = await runsOf(quiet.id);
    assert.equal(entry!.status, "ok", "no run to wait for: ok once the inject is stored");
    assert.equal(entry!.runId, undefined);
    const notDue = await bus.call("cron", "run", { jobId: quiet.id, mode: "due" });
    assert.equal(notDue.status, "skipped");
    assert.match(notDue.reason ?? "", /not due until/);

    const loud = await add({ name: "wake", schedule: { kind: "every", everyMs: 3_600_000 }, sessionTarget: "main", wakeMode: "now", payload: { kind: "systemEvent", text: "check the oven" } });
    await bus.call("cron", "run", { jobId: loud.id, mode: "force" });
    const [run] = await finished(loud.id);
    assert.equal(run!.status, "ok");
    assert.ok(run!.runId, "wake now: a run whose end is recorded");
    // next-heartbeat: the quiet event waited in the main session, and the next run there sees it
    const seen = system.fake.requests.map((r) => JSON.stringify(r.body.messages));
    assert.ok(seen.some((m) => m.includes("[system event] water the plants") && m.includes("check the oven")), "the next main-session run got the waiting event");
    const job = (await bus.call("cron", "get", { jobId: loud.id })).job;
    assert.equal(job.state.lastStatus, "ok");
    assert.equal(typeof job.state.lastDurationMs, "number");
    assert.equal(job.state.runningAtMs, undefined);
    for (const id of [quiet.id, loud.id]) await bus.call("cron", "rm", { jobId: id });
  });

  it("isolation: an isolated run's reply is posted once into the main session as a system event", async () => {
    const job = await add({
      name: "digest", schedule: { kind: "every", everyMs: 3_600_000 }, sessionTarget: "isolated",
      payload: { kind: "agentTurn", message: "make a digest", deliver: false },
      isolation: { postToMainPrefix: "Daily" },
    });
    await bus.call("cron", "run", { jobId: job.id, mode: "force" });
    const [run] = await finished(job.id);
    assert.equal(run!.status, "ok");
    // the post reaches the main session through the router after the fire is recorded
    const postedNow = async () => (await history("agent:main:main")).filter((r) => r.kind === "system_event" && r.text?.startsWith("Daily: digest:"));
    await waitFor(async () => (await postedNow()).length > 0, 10_000, "the post in the main session");
    await new Promise((r) => setTimeout(r, 300));
    const posted = await postedNow();
    assert.equal(posted.length, 1);
    assert.equal(posted[0]!.text, "Daily: digest: echo: make a digest");
    assert.equal(posted[0]!.id, `inject:post:${run!.fireId}`);
    await assert.rejects(add({
      name: "bad", schedule: { kind: "every", everyMs: 3_600_000 }, sessionTarget: "main",
      payload: { kind: "systemEvent", text: "x" }, isolation: {},
    }), /isolation .* is for sessionTarget "isolated"/);
    await bus.call("cron", "rm", { jobId: job.id });
  });

  it("delivery: channel last (the default) reaches the last conversation; bestEffortDeliver runs undelivered; nowhere to deliver is a visible error", async () => {
    // agent ops' main session has never seen a conversation
    const nowhere = await add({ name: "nowhere", agentId: "ops", schedule: { kind: "every", everyMs: 3_600_000 }, sessionTarget: "isolated", payload: { kind: "agentTurn", message: "ops report" } });
    assert.equal(nowhere.payload.kind === "agentTurn" && nowhere.payload.channel, "last", "channel last is the default");
    const failed = await bus.call("cron", "run", { jobId: nowhere.id, mode: "force" });
    assert.equal(failed.status, "skipped");
    assert.match(failed.reason ?? "", /nowhere to deliver: agent ops's main session has no last conversation/);
    const state = (await bus.call("cron", "get", { jobId: nowhere.id })).job.state;
    assert.equal(state.lastStatus, "error");
    assert.match(state.lastError ?? "", /nowhere to deliver/);
    assert.equal(state.runningAtMs, undefined);
    const [entry] = await runsOf(nowhere.id);
    assert.deepEqual([entry!.status, entry!.runId], ["error", undefined]);
    const list = await runCli(["cron", "list", "--agent", "ops"], cliEnv);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /nowhere .*error.*: nowhere to deliver/);
    const runs = await runCli(["cron", "runs", nowhere.id], cliEnv);
    assert.match(runs.stdout, new RegExp(`${nowhere.id}:\\d+\\s+error[\\s\\S]*nowhere to deliver`));

    const lenient = await add({ name: "lenient", agentId: "ops", schedule: { kind: "every", everyMs: 3_600_000 }, sessionTarget: "isolated", payload: { kind: "agentTurn", message: "lenient report", bestEffortDeliver: true } });
    assert.equal((await bus.call("cron", "run", { jobId: lenient.id, mode: "force" })).status, "fired");
    const [okRun] = await finished(lenient.id);
    assert.equal(okRun!.status, "ok");
    assert.ok((await history(`agent:ops:cron:${lenient.id}`)).some((r) => r.kind === "message" && r.message?.role === "user"), "the run happened");
    await sleep(500);
    assert.ok(!outbound.some((m) => m.text.includes("lenient report")), "nothing delivered: there was nowhere to deliver");

    // the main agent's main session has a last conversation once the user wrote there
    const user = await CliClient.connect(system.nats, "cron-last");
    await user.send("hello from the last conversation");
    await user.close();
    const last = await add({ name: "last", schedule: { kind: "every", everyMs: 3_600_000 }, sessionTarget: "isolated", payload: { kind: "agentTurn", message: "status to the last chat" } });
    await bus.call("cron", "run", { jobId: last.id, mode: "force" });
    const delivered = await waitFor(() => outbound.find((m) => m.text === "echo: status to the last chat"), 15_000, "the delivery to the last conversation");
    assert.equal(delivered.conversation, "cron-last");
    for (const id of [nowhere.id, lenient.id, last.id]) await bus.call("cron", "rm", { jobId: id });
  });

  it("runningAtMs while a run goes; a due slot while the previous run still runs is skipped and logged; CLI --disable/--enable and run --due", async () => {
    system.fake.enqueue({ kind: "hang", text: "working" });
    const job = await add({ name: "slow", schedule: { kind: "every", everyMs: 1_000 }, sessionTarget: "isolated", payload: { kind: "agentTurn", message: "slow work", deliver: false, timeoutSeconds: 120 } });
    const running = await waitFor(async () => {
      const j = (await bus.call("cron", "get", { jobId: job.id })).job;
      return j.state.runningAtMs !== undefined ? j : undefined;
    }, 10_000, "runningAtMs while the run goes");
    const skipped = await waitFor(() => cronEvents.find((e) => e.event === "fire_skipped" && e.data.jobId === job.id), 10_000, "the next slot skipped");
    assert.match(String(skipped.data.reason), /the previous run \(since .*\) is still running/);
    const disabled = await runCli(["cron", "edit", job.id, "--disable", "--json"], cliEnv);
    assert.equal(disabled.code, 0, disabled.stderr);
    assert.equal((JSON.parse(disabled.stdout) as CronJob).enabled, false);
    const runs = await runsOf(job.id);
    const first = runs.find((r) => r.status === "running");
    assert.ok(first?.runId, JSON.stringify(runs));
    assert.equal(first!.startedAtMs, running.state.runningAtMs);
    assert.ok(runs.some((r) => r.status === "skipped" && /still running/.test(r.error ?? "")), "the skip is in the run log");
    // the run ends (aborted): its end is recorded and runningAtMs goes
    admin.publish(s.runControl(first!.runId!), JSON.stringify({ type: "lurk.run.control.v1", id: "ctl-cron-1", ts: Date.now(), runId: first!.runId, action: "abort", reason: "test" }));
    const ended = await waitFor(async () => {
      const j = (await bus.call("cron", "get", { jobId: job.id })).job;
      return j.state.runningAtMs === undefined && j.state.lastStatus ? j : undefined;
    }, 15_000, "the end of the hanging run");
    assert.equal(ended.state.lastStatus, "error");
    const enabled = await runCli(["cron", "edit", job.id, "--enable", "--json"], cliEnv);
    assert.equal(enabled.code, 0, enabled.stderr);
    const re = JSON.parse(enabled.stdout) as CronJob;
    assert.equal(re.enabled, true);
    assert.ok(re.state.nextRunAtMs !== undefined);
    const both = await runCli(["cron", "edit", job.id, "--enable", "--disable"], cliEnv);
    assert.equal(both.code, 64);
    assert.match(both.stderr, /--enable and --disable contradict each other/);
    await bus.call("cron", "edit", { jobId: job.id, patch: { schedule: { kind: "every", everyMs: 3_600_000 } } });
    const due = await runCli(["cron", "run", job.id, "--due"], cliEnv);
    assert.equal(due.code, 0, due.stderr);
    assert.match(due.stdout, new RegExp(`skipped ${job.id}: not due until`));
    await bus.call("cron", "rm", { jobId: job.id });
  });

  it("CLI: add, list, edit, run, runs, rm, with errors that say what to do", async () => {
    const add = await runCli(["cron", "add", "--name", "cli job", "--cron", "0 9 * * *", "--tz", "Europe/Berlin", "--message", "stretch", "--system-event", "--json"], cliEnv);
    assert.equal(add.code, 0, add.stderr);
    const job = JSON.parse(add.stdout) as CronJob;
    assert.deepEqual(job.schedule, { kind: "cron", expr: "0 9 * * *", tz: "Europe/Berlin" });
    assert.equal(job.sessionTarget, "main");
    const nextLocal = new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Berlin", hour: "2-digit", minute: "2-digit" }).format(job.state.nextRunAtMs!);
    assert.equal(nextLocal, "09:00");

    const list = await runCli(["cron", "list"], cliEnv);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, new RegExp(`${job.id}\\s+cli job\\s+cron 0 9 \\* \\* \\* \\(Europe/Berlin\\)`));

    const edit = await runCli(["cron", "edit", job.id, "--every", "2h", "--json"], cliEnv);
    assert.equal(edit.code, 0, edit.stderr);
    assert.deepEqual((JSON.parse(edit.stdout) as CronJob).schedule, { kind: "every", everyMs: 7_200_000 });

    const run = await runCli(["cron", "run", job.id], cliEnv);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`fired ${job.id}`));
    const runs = await runCli(["cron", "runs", job.id, "--json"], cliEnv);
    assert.equal(runs.code, 0, runs.stderr);
    assert.equal((JSON.parse(runs.stdout) as unknown[]).length, 1);

    const rm = await runCli(["cron", "rm", job.id], cliEnv);
    assert.equal(rm.code, 0, rm.stderr);
    assert.match(rm.stdout, /removed/);
    const again = await runCli(["cron", "rm", job.id], cliEnv);
    assert.equal(again.code, 1);

    const noSchedule = await runCli(["cron", "add", "--name", "x", "--message", "m"], cliEnv);
    assert.equal(noSchedule.code, 64);
    assert.match(noSchedule.stderr, /a schedule is needed: --every 10m, --cron/);
    const both = await runCli(["cron", "add", "--name", "x", "--every", "1h", "--cron", "* * * * *", "--message", "m"], cliEnv);
    assert.match(both.stderr, /choose one schedule/);
    const badCron = await runCli(["cron", "add", "--name", "x", "--cron", "0 25 * * *", "--message", "m"], cliEnv);
    assert.equal(badCron.code, 1);
    assert.match(badCron.stderr, /cron expression "0 25 \* \* \*" is invalid/);
    const past = await runCli(["cron", "add", "--name", "x", "--at", "2020-01-01T00:00Z", "--message", "m"], cliEnv);
    assert.match(past.stderr, /is in the past; choose a future time/);
    const posting = await runCli(["cron", "add", "--name", "post", "--every", "1h", "--message", "m", "--deliver", "none", "--post-to-main", "full", "--json"], cliEnv);
    assert.equal(posting.code, 0, posting.stderr);
    const postingJob = JSON.parse(posting.stdout) as CronJob;
    assert.deepEqual(postingJob.isolation, { postToMainPrefix: "Cron", postToMainMode: "full", postToMainMaxChars: 8000 });
    await runCli(["cron", "rm", postingJob.id], cliEnv);
    const badPost = await runCli(["cron", "add", "--name", "x", "--every", "1h", "--message", "m", "--post-to-main", "all"], cliEnv);
    assert.equal(badPost.code, 64);
    assert.match(badPost.stderr, /--post-to-main "all": use summary/);
    const noJob = await runCli(["cron", "run", "cron_nope"], cliEnv);
    assert.equal(noJob.code, 1);
    assert.match(noJob.stderr, /no cron job cron_nope \(see `lurkbot cron list`\)/);
  });

  it("the cron tool adds, lists, runs and removes the agent's jobs, and says so when no cron actor runs", async () => {
    let n = 0;
    const tool = (args: Record<string, unknown>) => agentBus.callSubject(s.toolCall("cron"), "lurk.tools.call.v1", {
      toolCallId: `cron-call-${++n}`, runId: "run-cron-tool", sessionKey: "agent:main:main", agentId: "main", tool: "cron", args,
    }, toolCallReply, { timeoutMs: 20_000 });
    const text = (r: { content: Array<{ type: string; text?: string }> }) => r.content.map((b) => b.text ?? "").join("");

    const added = await tool({ action: "add", name: "tool job", every: "30m", message: "stand up", systemEvent: true });
    assert.equal(added.isError, false, text(added));
    const id = /added (cron_[0-9a-f]{8})/.exec(text(added))?.[1];
    assert.ok(id, text(added));
    const listed = await tool({ action: "list" });
    assert.match(text(listed), new RegExp(`${id}\\s+"tool job"\\s+every 30m\\s+systemEvent`));
    const ran = await tool({ action: "run", jobId: id });
    assert.match(text(ran), /^fired /);
    await waitFor(async () => (await history("agent:main:main")).some((r) => r.kind === "system_event" && r.text === "stand up"), 10_000, "the tool job's inject");
    // runs: the caller's own runs only, with or without a job id
    const foreign = await add({ name: "ops note", agentId: "ops", schedule: { kind: "every", everyMs: 3_600_000 }, sessionTarget: "main", payload: { kind: "systemEvent", text: "ops only" } });
    const foreignFire = await bus.call("cron", "run", { jobId: foreign.id, mode: "force" });
    assert.ok((await bus.call("cron", "runs", {})).runs.some((r) => r.fireId === foreignFire.fireId), "the operator sees every agent's runs");
    const allRuns = text(await tool({ action: "runs" }));
    assert.match(allRuns, new RegExp(`${id}:\\d+\\s+ok`), allRuns);
    assert.ok(!allRuns.includes(foreign.id), `another agent's runs are not shown: ${allRuns}`);
    const jobRuns = text(await tool({ action: "runs", jobId: id }));
    assert.match(jobRuns, new RegExp(`^${id}:\\d+\\s+ok`));
    const forbidden = await tool({ action: "runs", jobId: foreign.id });
    assert.equal(forbidden.isError, true);
    assert.match(text(forbidden), /belongs to agent ops, not to you/);
    await bus.call("cron", "rm", { jobId: foreign.id });
    const bad = await tool({ action: "add", name: "x", every: "30m", cron: "* * * * *", message: "m" });
    assert.equal(bad.isError, true);
    assert.match(text(bad), /give exactly one schedule/);
    const removed = await tool({ action: "rm", jobId: id });
    assert.equal(text(removed), `removed ${id}`);

    await cron.stop();
    const down = await tool({ action: "list" });
    assert.equal(down.isError, true);
    assert.equal(down.errorCode, "UNAVAILABLE");
    assert.match(text(down), /the cron actor is not running .*npx lurkbot start/);
    cron = await system.startActor("cron");
  });
});

describe("two cron actors: one lease, every fire once", () => {
  let nats: TestNats;
  let a: ActorProcess;
  let b: ActorProcess;
  let nc: NatsConnection;
  let admin: NatsConnection;
  let jsm: JetStreamManager;
  let events: SeenActorEvent[];

  before(async () => {
    nats = await TestNats.start();
    const { writeFileSync } = await import("node:fs");
    const { join } = await import("node:path");
    writeFileSync(join(nats.home, "config.json"), JSON.stringify(CRON_CONFIG));
    nc = await nats.connect("cli");
    admin = await nats.connect("admin");
    jsm = await jetstreamManager(admin);
    events = await collectActorEvents(nc, "cron");
    a = await startActorProcess("cron", nats);
    b = await startActorProcess("cron", nats);
  });

  after(async () => {
    await nc?.close();
    await admin?.close();
    await a?.stop();
    await b?.stop();
    await nats?.stop();
  });

  it("only the lease holder fires; after it is killed the standby takes over; no fire twice", async () => {
    const bus = new BusClient(nc);
    const active = await waitFor(() => events.find((e) => e.event === "active"), 10_000, "an active instance");
    const [first, second] = active.pid === a.child.pid ? [a, b] : [b, a];
    const { job } = await bus.call("cron", "add", { name: "pulse", schedule: { kind: "every", everyMs: 1_000 }, sessionTarget: "main", payload: { kind: "systemEvent", text: "pulse" } });
    await sleep(3_500);
    await first.kill();
    const killedAt = Date.now();
    const takeover = await waitFor(() => events.find((e) => e.event === "active" && e.pid === second.child.pid), 10_000, "the standby to take over");
    assert.ok(takeover);
    await sleep(3_000);
    await bus.call("cron", "edit", { jobId: job.id, patch: { enabled: false } });
    await sleep(300);

    const fired = events.filter((e) => e.event === "fired" && e.data.jobId === job.id);
    const fireIds = fired.map((e) => e.data.fireId as string);
    assert.equal(new Set(fireIds).size, fireIds.length, `a fire id fired twice: ${fireIds.join(", ")}`);
    assert.ok(fired.some((e) => e.pid === first.child.pid) && fired.some((e) => e.pid === second.child.pid), "both fired, one after the other");
    assert.ok(fired.filter((e) => e.pid === second.child.pid).every((e) => e.ts >= killedAt), "the standby never fired while the first held the lease");
    assert.ok(fired.filter((e) => e.pid === first.child.pid).length >= 2);
    assert.equal(events.filter((e) => e.event === "active" && e.pid === second.child.pid).length, 1);

    // INBOUND holds exactly one inject per fire id, and the run log agrees
    const info = await jsm.streams.info(STREAMS.inbound, { subjects_filter: s.inject("main") });
    assert.equal(info.state.messages, fireIds.length);
    const { runs } = await bus.call("cron", "runs", { jobId: job.id, limit: 1000 });
    assert.deepEqual(runs.map((r) => r.fireId).sort(), [...fireIds].sort());
  });
});
