/**
 * The router end to end, as a real process on a real nats-server with the real sessions and
 * approvals actors. An "agent-runner" connection plays the runner: it reads the run requests
 * stored in RUNS, answers run controls (accepting steering when told to) and publishes terminal
 * events. Covered: queue modes (steer taken or not, followup, collect, interrupt), /stop, /new,
 * /status, directives and session settings, inbound debounce, pairing with `lurkbot pairing`,
 * mention gating, /approve from chat (owner only), /subagents without a subagents actor and a
 * sequential broadcast. The last suite runs the whole system (real agent-runner, fake LLM):
 * a NO_REPLY answer delivers nothing, and chat commands answer through the terminal channel.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { outboundMessageSchema, recordIds, safeParseJson, subjects, type OutboundMessage } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { RouterRig } from "./harness/router-rig.js";
import { broadcastRunId } from "../services/router/broadcast.js";
import { waitFor } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { TestNats } from "./harness/nats.js";
import { CliClient, TestSystem } from "./harness/system.js";

const s = subjects();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const ROUTING = {
  dm: { policy: "open", byChannel: { telegram: { policy: "pairing" } } },
  groups: { byChannel: { discord: { requireMention: true } } },
  broadcast: { strategy: "sequential", peers: { "web:bcast": ["main", "helper"] } },
  commands: { owners: ["telegram:boss", "web:owner", "slack:owner"] },
  queue: { controlTimeoutMs: 300, byChannel: { slack: { mode: "collect", cap: 7 } } },
  debounceMs: 250,
};

describe("router: queue modes, commands, policies (router process, scripted runner)", () => {
  const rig = new RouterRig();
  const { outbound, controls, send, web, runRequests, runOf, noRun, noticeFor, finish } = rig;
  let nats: TestNats;
  let admin: NatsConnection;
  let runner: NatsConnection;
  let bus: BusClient;

  before(async () => {
    await rig.start({ agents: [{ id: "main", default: true }, { id: "helper" }], routing: ROUTING }, ["sessions", "approvals", "router"]);
    ({ nats, admin, runner, bus } = rig);
  });
  after(() => rig.stop());

  it("inline directives apply to one run; a directive alone changes the session", async () => {
    const a = await web("g-dir", "/think:high explain monads");
    const req = await runOf(a.runId);
    assert.equal(req.options.thinking, "high");
    assert.equal(req.inputs[0]!.text, "explain monads");
    assert.equal(req.sessionKey, "agent:main:web:group:g-dir");
    await finish(req);
    const set = await web("g-dir", "/model openai/other-model");
    assert.match((await noticeFor(set.id)).text, /model: openai\/other-model/);
    const b = await web("g-dir", "hello");
    const next = await runOf(b.runId);
    assert.equal(next.options.model, "openai/other-model");
    assert.equal(next.options.thinking, undefined);
    const { session } = await bus.call("sessions", "get", { sessionKey: next.sessionKey });
    assert.equal(session?.modelOverride, "openai/other-model");
    await finish(next);
    const bad = await web("g-dir", "/think:banana");
    const notice = await noticeFor(bad.id);
    assert.equal(notice.kind, "error");
    assert.match(notice.text, /unknown level/);
  });

  it("inbound debounce: rapid messages of one sender become one run", async () => {
    const first = await web("g-deb", "one");
    await web("g-deb", "two");
    await web("g-deb", "three");
    const req = await runOf(first.runId);
    assert.deepEqual(req.inputs.map((i) => i.text), ["one", "two", "three"]);
    assert.equal(req.origin?.messageIds.length, 3);
    await finish(req);
  });

  it("steer: a message for a busy session is handed to the active run when the runner takes it", async () => {
    await web("g-steer", "/queue steer");
    const first = await web("g-steer", "first");
    const r1 = await runOf(first.runId);
    rig.acceptControls = true;
    try {
      const second = await web("g-steer", "actually, do this instead");
      const ctl = await waitFor(() => controls.find((c) => c.runId === r1.runId && c.action === "steer"), 10_000, "steer control");
      assert.equal(ctl.input?.text, "actually, do this instead");
      await noRun(second.runId);
      const lanes = await bus.call("router", "lanes", { sessionKey: r1.sessionKey });
      assert.deepEqual(lanes.lanes.map((l) => [l.activeRunId, l.queued, l.queueMode]), [[r1.runId, 0, "steer"]]);
      // the run's loop takes it: its input record, as the agent-runner stores it (else it would get a run of its own)
      await new BusClient(runner).call("sessions", "append", {
        sessionKey: r1.sessionKey,
        records: [{ id: recordIds.mailboxInput(r1.runId, ctl.id), ts: Date.now(), runId: r1.runId, kind: "message", message: { role: "user", content: [{ type: "text", text: ctl.input!.text }] } }],
      });
      await finish(r1);
      await noRun(second.runId, 300);
    } finally {
      rig.acceptControls = false;
    }
  });

  it("followup not taken (no runner holds the run): the message runs on its own after the active run", async () => {
    await web("g-follow", "/queue followup");
    const first = await web("g-follow", "first");
    const r1 = await runOf(first.runId);
    const second = await web("g-follow", "and then this");
    await waitFor(() => controls.find((c) => c.runId === r1.runId && c.action === "followup"), 10_000, "followup control");
    await noRun(second.runId);
    await finish(r1);
    const r2 = await runOf(second.runId);
    assert.equal(r2.inputs[0]!.text, "and then this");
    await finish(r2);
  });

  it("queue defaults per channel: slack collects by default, a session's /queue still wins", async () => {
    const shown = await send("slack", { kind: "group", id: "s-col" }, "/queue", { sender: "owner" });
    assert.match((await noticeFor(shown.id)).text, /queue: collect \(debounce 0 ms, cap 7, drop old\) \(default\)/);
    const first = await send("slack", { kind: "group", id: "s-col" }, "first", { sender: "u1" });
    const r1 = await runOf(first.runId);
    const a = await send("slack", { kind: "group", id: "s-col" }, "a", { sender: "u2" });
    const b = await send("slack", { kind: "group", id: "s-col" }, "b", { sender: "u3" });
    await sleep(600); // past the inbound debounce
    await finish(r1);
    const ids = [a, b].map((m) => m.runId);
    const batch = await waitFor(async () => (await runRequests()).find((r) => ids.includes(r.runId)), 10_000, "collected run");
    assert.deepEqual(batch.inputs.map((i) => i.text).sort(), ["a", "b"], "collected into one run, as the channel's default says");
    await finish(batch);
    const own = await send("slack", { kind: "group", id: "s-col" }, "/queue queue", { sender: "owner" });
    assert.match((await noticeFor(own.id)).text, /queue: queue \(debounce 0 ms, cap 7, drop old\)$/m);
  });

  it("collect: messages that arrive during a run become one run when the lane frees", async () => {
    await web("g-col", "/queue collect");
    const first = await web("g-col", "first");
    const r1 = await runOf(first.runId);
    const a = await web("g-col", "a", "u2");
    const b = await web("g-col", "b", "u3");
    const c = await web("g-col", "c", "u4");
    await sleep(600); // past the inbound debounce
    await finish(r1);
    const ids = [a, b, c].map((m) => m.runId);
    const batch = await waitFor(async () => (await runRequests()).find((r) => ids.includes(r.runId)), 10_000, "collected run");
    assert.deepEqual(batch.inputs.map((i) => i.text).sort(), ["a", "b", "c"]);
    await sleep(300);
    assert.equal((await runRequests()).filter((r) => ids.includes(r.runId)).length, 1);
    await finish(batch);
  });

  it("interrupt: the active run is aborted, waiting messages are dropped, the new one runs next", async () => {
    const first = await web("g-int", "first");
    const r1 = await runOf(first.runId);
    const waiting = await web("g-int", "waiting", "u2");
    await sleep(400);
    const urgent = await web("g-int", "/queue:interrupt stop, do this", "u3");
    await waitFor(() => controls.find((c) => c.runId === r1.runId && c.action === "abort"), 10_000, "abort control");
    await finish(r1, "error");
    const r3 = await runOf(urgent.runId);
    assert.equal(r3.inputs[0]!.text, "stop, do this");
    await noRun(waiting.runId, 300);
    await finish(r3);
  });

  it("/stop aborts the active run and drops the queue; /status and /new answer with notices", async () => {
    const first = await web("g-stop", "first");
    const r1 = await runOf(first.runId);
    const queued = await web("g-stop", "queued", "u2");
    await sleep(400);
    const status = await web("g-stop", "/status");
    const statusText = (await noticeFor(status.id)).text;
    assert.match(statusText, /Session agent:main:web:group:g-stop \(group\), agent main/);
    assert.match(statusText, new RegExp(`run: ${r1.runId} active for \\d+ s, 1 waiting`));
    const stop = await web("g-stop", "/stop");
    assert.equal((await noticeFor(stop.id)).text, `Stopped the active run (${r1.runId}). Dropped 1 queued message.`);
    await waitFor(() => controls.find((c) => c.runId === r1.runId && c.action === "abort"), 10_000, "abort control");
    await finish(r1, "error");
    await noRun(queued.runId);
    const before = (await bus.call("sessions", "get", { sessionKey: r1.sessionKey })).session;
    const fresh = await web("g-stop", "/new");
    assert.match((await noticeFor(fresh.id)).text, /^Fresh session started \(agent:main:web:group:g-stop;/);
    const afterReset = (await bus.call("sessions", "get", { sessionKey: r1.sessionKey })).session;
    assert.notEqual(afterReset?.sessionId, before?.sessionId);
    const stranger = await web("g-stop", "/new", "nobody");
    assert.match((await noticeFor(stranger.id)).text, /only owners/);
  });

  it("a queued message that awaits an answer (a slash command's \"thinking…\") and is dropped gets a notice; one without the flag gets none", async () => {
    const first = await web("g-drop", "first");
    const r1 = await runOf(first.runId);
    const pending = await send("web", { kind: "group", id: "g-drop" }, "pending", { sender: "u2", awaitsAnswer: true });
    const plain = await web("g-drop", "plain", "u3");
    await sleep(400);
    const stop = await web("g-drop", "/stop");
    assert.equal((await noticeFor(stop.id)).text, `Stopped the active run (${r1.runId}). Dropped 2 queued messages.`);
    await finish(r1, "error");
    assert.match((await noticeFor(pending.id)).text, /^I dropped this message without answering it/);
    await noRun(plain.runId, 300);
    assert.equal(outbound.filter((o) => o.replyTo.includes(plain.id)).length, 0, "an ordinary dropped message stays silent");
    assert.equal(outbound.filter((o) => o.replyTo.includes(pending.id)).length, 1, "one notice");
  });

  it("pairing: an unknown DM sender gets a code; `lurkbot pairing approve` lets them in", async () => {
    const hello = await send("telegram", { kind: "dm", id: "newbie" }, "hi bot", { sender: "newbie" });
    const notice = await noticeFor(hello.id);
    const code = /pairing code: ([A-Z2-9]{8})/.exec(notice.text)?.[1];
    assert.ok(code, notice.text);
    await noRun(hello.runId, 300);
    const env = nats.env(nats.passwordEnv("cli"));
    const listed = await runCli(["pairing", "list"], env);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`${code}\\s+telegram:newbie`));
    const approved = await runCli(["pairing", "approve", code!], env);
    assert.equal(approved.code, 0, approved.stderr);
    assert.match(approved.stdout, new RegExp(`${code}: approved telegram:newbie`));
    await waitFor(() => outbound.find((o) => o.conversation === "c-newbie" && /approved/.test(o.text)), 10_000, "approval notice");
    const again = await send("telegram", { kind: "dm", id: "newbie" }, "hi again", { sender: "newbie" });
    await finish(await runOf(again.runId));
    const unknown = await runCli(["pairing", "deny", "NOPE2345"], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no pending pairing code NOPE2345/);
  });

  it("group context: messages not addressed to the bot reach it, once, ahead of the next one that is", async () => {
    const chatter = await send("discord", { kind: "group", id: "d-ctx" }, "anyone up for lunch?", { sender: "ann" });
    await send("discord", { kind: "group", id: "d-ctx" }, "pizza at noon", { sender: "ben" });
    await noRun(chatter.runId, 300);
    const asked = await send("discord", { kind: "group", id: "d-ctx" }, "@bot book a table", { sender: "ann", mentioned: true });
    const req = await runOf(asked.runId);
    assert.equal(req.inputs[0]!.text, [
      "[Chat messages since your last reply, for context]", "ann: anyone up for lunch?", "ben: pizza at noon", "", "[Current message, to you]", "@bot book a table",
    ].join("\n"));
    await finish(req);
    const next = await send("discord", { kind: "group", id: "d-ctx" }, "@bot thanks", { sender: "ben", mentioned: true });
    const nextReq = await runOf(next.runId);
    assert.equal(nextReq.inputs[0]!.text, "@bot thanks", "the context was handed over once");
    await finish(nextReq);
  });

  it("pairing: the owners are told in their last DM and answer with /pair there", async () => {
    // the owner wrote to the bot from a Telegram DM before (the session's last origin)
    await bus.call("sessions", "ensure", {
      sessionKey: "agent:main:main", agentId: "main", sessionType: "main",
      origin: { channel: "telegram", conversation: "c-boss", peer: { kind: "dm", id: "boss" }, sender: { id: "boss", name: "Boss" }, messageIds: [] },
    });
    const hello = await send("telegram", { kind: "dm", id: "stranger" }, "hello?", { sender: "stranger" });
    const code = /pairing code: ([A-Z2-9]{8})/.exec((await noticeFor(hello.id)).text)?.[1];
    assert.ok(code);
    const told = await waitFor(() => outbound.find((o) => o.conversation === "c-boss" && o.text.includes(code!)), 10_000, "the owner's notice");
    assert.equal(told.text, `New pairing request: (telegram:stranger) wants to talk to the bot.\nCode ${code}, valid 60 min. Answer /pair approve ${code} or /pair deny ${code}.`);
    const list = await send("telegram", { kind: "dm", id: "boss" }, "/pair list", { sender: "boss" });
    assert.match((await noticeFor(list.id)).text, new RegExp(`^Pending pairing requests:\n  ${code} — \\(telegram:stranger\\)`));
    const intruder = await web("g-pair", `/pair approve ${code}`, "nobody");
    assert.match((await noticeFor(intruder.id)).text, /^\/pair is for the owner only/);
    const approve = await send("telegram", { kind: "dm", id: "boss" }, `/pair approve ${code}`, { sender: "boss" });
    assert.equal((await noticeFor(approve.id)).text, `${code}: approved telegram:stranger.`);
    await waitFor(() => outbound.find((o) => o.conversation === "c-stranger" && /You are approved/.test(o.text)), 10_000, "the sender told");
    const again = await send("telegram", { kind: "dm", id: "stranger" }, "hello again", { sender: "stranger" });
    await finish(await runOf(again.runId, "the approved sender's run"));
    const unknown = await send("telegram", { kind: "dm", id: "boss" }, "/pair deny NOPE2345", { sender: "boss" });
    assert.match((await noticeFor(unknown.id)).text, /^Could not deny NOPE2345: no pending pairing code NOPE2345/);
  });

  it("mention gating: a discord group message runs only when the bot is mentioned", async () => {
    const quiet = await send("discord", { kind: "group", id: "d1" }, "chatter", { sender: "u9" });
    await noRun(quiet.runId);
    const mentioned = await send("discord", { kind: "group", id: "d1" }, "@bot help", { sender: "u9", mentioned: true });
    await finish(await runOf(mentioned.runId));
  });

  it("/approve from chat decides an approval for an owner only; /subagents answers without a subagents actor", async () => {
    const tools = await nats.connect("tools");
    const ask = (n: number) => new BusClient(tools).call("approvals", "request", {
      toolCallId: `call-${n}-${randomUUID()}`, tool: "exec", argsHash: "a".repeat(64), command: "rm -rf build", sessionKey: "agent:main:main", agentId: "main",
    });
    const { approval } = await ask(1);
    const denied = await send("web", { kind: "dm", id: "someone" }, `/approve ${approval.approvalId}`, { sender: "someone" });
    assert.match((await noticeFor(denied.id)).text, /owner only/);
    assert.equal((await bus.call("approvals", "get", { approvalId: approval.approvalId })).approval.status, "pending");
    const ok = await send("telegram", { kind: "dm", id: "boss" }, `/approve ${approval.approvalId}`, { sender: "boss" });
    assert.match((await noticeFor(ok.id)).text, new RegExp(`${approval.approvalId}: approved`));
    const record = (await bus.call("approvals", "get", { approvalId: approval.approvalId })).approval;
    assert.equal(record.status, "approved");
    assert.equal(record.decidedBy, "telegram:boss");
    const sub = await send("telegram", { kind: "dm", id: "boss" }, "/subagents", { sender: "boss" });
    assert.match((await noticeFor(sub.id)).text, /Subagents are not available/);
    await tools.close();
  });

  it("broadcast (sequential): every agent answers in its own session, the second after the first ended", async () => {
    const m = await web("bcast", "status report please");
    const mainRun = await runOf(broadcastRunId("web", m.id, "main"));
    assert.equal(mainRun.sessionKey, "agent:main:web:group:bcast");
    await noRun(broadcastRunId("web", m.id, "helper"));
    await finish(mainRun);
    const helperRun = await runOf(broadcastRunId("web", m.id, "helper"));
    assert.equal(helperRun.sessionKey, "agent:helper:web:group:bcast");
    assert.equal(helperRun.agentId, "helper");
    await finish(helperRun);
  });
});

describe("router with the whole system (real agent-runner, fake LLM)", () => {
  let system: TestSystem;
  let client: CliClient;
  before(async () => {
    system = await TestSystem.start();
    client = await CliClient.connect(system.nats, "router-e2e");
  });
  after(async () => {
    await client?.close();
    await system?.stop();
  });

  it("a NO_REPLY answer delivers nothing; the next message is answered", async () => {
    const delivered: OutboundMessage[] = [];
    client.nc.subscribe(s.outboundChannel("cli"), { callback: (_e, m) => void delivered.push(outboundMessageSchema.parse(safeParseJson(m.data))) });
    system.fake.enqueue({ kind: "text", text: "NO_REPLY" });
    const silent = await client.publish("nothing to say", { sessionName: "quiet" });
    const done = await waitFor(async () => {
      const { status } = await new BusClient(client.nc).call("sessions", "run", { sessionKey: "agent:main:cli:dm:quiet", runId: silent.runId });
      return status === "done";
    }, 20_000, "silent run done");
    assert.ok(done);
    await sleep(500);
    assert.equal(delivered.some((d) => d.replyTo.includes(silent.id)), false);
    const reply = await client.send("hello", { sessionName: "quiet" });
    assert.equal(reply.text, "echo: hello");
  });

  it("chat commands through the terminal channel: /status, /think for the session, /new", async () => {
    const status = await client.send("/status", { sessionName: "cmds" });
    assert.equal(status.kind, "notice");
    assert.match(status.text, /Session agent:main:cli:dm:cmds \(dm\)/);
    const think = await client.send("/think:low", { sessionName: "cmds" });
    assert.match(think.text, /thinking: low/);
    assert.equal((await client.send("hi there", { sessionName: "cmds" })).text, "echo: hi there");
    const fresh = await client.send("/new start again", { sessionName: "cmds" });
    assert.match(fresh.text, /Fresh session started/);
    const history = await new BusClient(client.nc).call("sessions", "history", { sessionKey: "agent:main:cli:dm:cmds" });
    await waitFor(async () => (await new BusClient(client.nc).call("sessions", "history", { sessionKey: "agent:main:cli:dm:cmds" })).records.some((r) => r.kind === "run_marker" && r.runStatus === "done"), 20_000, "run after /new");
    assert.ok(history.session);
  });
});
