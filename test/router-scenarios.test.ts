/**
 * Router scenarios on a real bus. First suite: the router, sessions and approvals as processes,
 * the webhook channel as a process (with `accountId` configured) and a scripted "agent-runner"
 * connection (reads RUNS, answers run controls, publishes terminal events). Covered: the
 * account binding tier through a real channel, a peer binding to a non-default agent, DM
 * allowlist and disabled, queue debounce, steer-backlog, the queue cap with each drop policy,
 * a parallel broadcast, /help and /deny from chat. Second suite: the whole system (real
 * agent-runner, fake LLM): /reset <text> and /compact through the router.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { actorEventSchema, safeParseJson, subjects } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { RouterRig } from "./harness/router-rig.js";
import { broadcastRunId } from "../services/router/broadcast.js";
import { COMMAND_HELP } from "../shared/contract/index.js";
import { sign } from "../services/channel-webhook/signature.js";
import { waitFor } from "./harness/actors.js";
import { freePort, TestNats } from "./harness/nats.js";
import { CliClient, TestSystem } from "./harness/system.js";

const s = subjects();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SECRET = "scenario-webhook-secret-0123456789";

describe("router scenarios (router, sessions, approvals, webhook channel as processes; scripted runner)", () => {
  const rig = new RouterRig();
  const { outbound, controls, send, web, runOf, noRun, noticeFor, finish } = rig;
  let nats: TestNats;
  let admin: NatsConnection;
  let runner: NatsConnection;
  let bus: BusClient;
  let webhookUrl: string;
  const routerEvents: Array<{ event: string; data: any }> = [];

  before(async () => {
    const port = await freePort();
    webhookUrl = `http://127.0.0.1:${port}/v1/messages`;
    await rig.start({
      agents: [{ id: "main", default: true }, { id: "helper" }],
      channels: { webhook: { enabled: true, port, secret: SECRET, accountId: "work-bot" } },
      routing: {
        bindings: [
          { agentId: "main", match: { channel: "webhook" } },
          { agentId: "helper", match: { channel: "webhook", accountId: "work-bot" } },
          { agentId: "helper", match: { peer: { kind: "group", id: "helper-room" } } },
        ],
        dm: { policy: "open", byChannel: { slack: { policy: "allowlist", allowFrom: ["slack:friend"] }, discord: { policy: "disabled" } } },
        broadcast: { strategy: "parallel", peers: { "web:bcast-par": ["main", "helper"] } },
        commands: { owners: ["telegram:boss", "web:owner"] },
        queue: { controlTimeoutMs: 300 },
      },
    }, ["sessions", "approvals", "router", "channel-webhook"]);
    ({ nats, admin, runner, bus } = rig);
    admin.subscribe(s.eventsOf("router"), {
      callback: (_e, m) => {
        const ev = actorEventSchema.parse(safeParseJson(m.data));
        routerEvents.push({ event: ev.event, data: ev.data });
      },
    });
    await admin.flush();
  });
  after(() => rig.stop());

  const refused = (reason: string, channel: string) => waitFor(() => routerEvents.find((e) => e.event === "refused" && e.data.reason === reason && e.data.channel === channel), 10_000, `refused ${reason}`);
  /** a busy session: its first message's run holds the lane until `finish` */
  const busy = async (group: string) => runOf((await web(group, "first")).runId);

  it("account binding: a message through a channel configured with accountId goes to the account-bound agent", async () => {
    const body = JSON.stringify({ id: "acct-1", text: "hello from the work bot", conversation: "ops", sender: { id: "u1" } });
    const ts = Math.floor(Date.now() / 1000);
    const res = await fetch(webhookUrl, { method: "POST", headers: { "content-type": "application/json", "x-lurkbot-timestamp": String(ts), "x-lurkbot-signature": sign(SECRET, ts, body) }, body });
    assert.equal(res.status, 202);
    const { runId } = (await res.json()) as { runId: string };
    const req = await runOf(runId);
    assert.equal(req.agentId, "helper", "the account binding beats the channel binding to main");
    assert.match(req.sessionKey, /^agent:helper:webhook:/);
    assert.equal(req.origin?.accountId, "work-bot");
    await finish(req);
  });

  it("peer binding: a group bound to a non-default agent runs in that agent's session", async () => {
    const m = await web("helper-room", "who answers here?");
    const req = await runOf(m.runId);
    assert.equal(req.agentId, "helper");
    assert.equal(req.sessionKey, "agent:helper:web:group:helper-room");
    await finish(req);
    const other = await web("plain-room", "and here?");
    const req2 = await runOf(other.runId);
    assert.equal(req2.agentId, "main");
    await finish(req2);
  });

  it("DM allowlist: a stranger is refused without a run or an answer; a listed sender runs", async () => {
    const stranger = await send("slack", { kind: "dm", id: "stranger" }, "hi", { sender: "stranger" });
    await refused("dm-not-allowed", "slack");
    await noRun(stranger.runId);
    assert.equal(outbound.some((o) => o.replyTo.includes(stranger.id)), false, "no pairing code or notice under allowlist");
    const friend = await send("slack", { kind: "dm", id: "friend" }, "hi", { sender: "friend" });
    await finish(await runOf(friend.runId));
  });

  it("DM disabled: no direct message of that channel runs", async () => {
    const m = await send("discord", { kind: "dm", id: "someone" }, "hello", { sender: "someone" });
    await refused("dm-disabled", "discord");
    await noRun(m.runId);
    assert.equal(outbound.some((o) => o.replyTo.includes(m.id)), false);
  });

  it("queue debounce: a waiting run starts only after its inputs were quiet for queue.debounceMs", async () => {
    // 2 s of quiet: b must reach the router within 1.3 s of being posted (slow CI machines)
    await web("g-qdeb", "/queue collect debounce:2s");
    const r1 = await busy("g-qdeb");
    const a = await web("g-qdeb", "a", "u2");
    await sleep(300);
    await finish(r1);
    await sleep(400); // the lane is granted to a's run, which waits for quiet
    const b = await web("g-qdeb", "b", "u3");
    await noRun(a.runId, 1_200); // b arrived 1.2 s ago: a's run still waits
    const batch = await runOf(a.runId, "debounced run");
    assert.deepEqual(batch.inputs.map((i) => i.text), ["a", "b"]);
    await noRun(b.runId, 200);
    await finish(batch);
  });

  it("steer-backlog: the message is steered into the active run and also runs on its own afterwards", async () => {
    await web("g-sb", "/queue steer-backlog");
    const r1 = await busy("g-sb");
    rig.acceptControls = true;
    try {
      const second = await web("g-sb", "also this", "u2");
      const ctl = await waitFor(() => controls.find((c) => c.runId === r1.runId && c.action === "steer"), 10_000, "steer control");
      assert.equal(ctl.input?.text, "also this");
      await noRun(second.runId, 400);
      await finish(r1);
      const r2 = await runOf(second.runId, "backlog run");
      assert.equal(r2.inputs[0]!.text, "also this");
      await finish(r2);
    } finally {
      rig.acceptControls = false;
    }
  });

  it("queue cap 1: drop new keeps the waiting one, drop old keeps the newest, summarize prepends a digest", async () => {
    const scenario = async (group: string, drop: string) => {
      await web(group, `/queue queue cap:1 drop:${drop}`);
      const r1 = await busy(group);
      const a = await web(group, "older message", "u2");
      await sleep(300);
      const b = await web(group, "newer message", "u3");
      await sleep(300);
      await finish(r1);
      return { a, b };
    };
    const dropNew = await scenario("g-cap-new", "new");
    await finish(await runOf(dropNew.a.runId));
    await noRun(dropNew.b.runId);

    const dropOld = await scenario("g-cap-old", "old");
    await finish(await runOf(dropOld.b.runId));
    await noRun(dropOld.a.runId);

    const sum = await scenario("g-cap-sum", "summarize");
    const kept = await runOf(sum.b.runId);
    assert.equal(kept.inputs[0]!.kind, "system_event");
    assert.match(kept.inputs[0]!.text, /1 earlier message was dropped while you were busy: "older message"/);
    assert.equal(kept.inputs[1]!.text, "newer message");
    await finish(kept);
    await noRun(sum.a.runId, 300);
  });

  it("broadcast (parallel): both agents' runs are dispatched before either ends", async () => {
    const m = await web("bcast-par", "everyone, report");
    const [mainRun, helperRun] = await Promise.all([
      runOf(broadcastRunId("web", m.id, "main"), "main's run"),
      runOf(broadcastRunId("web", m.id, "helper"), "helper's run"),
    ]);
    assert.equal(mainRun.sessionKey, "agent:main:web:group:bcast-par");
    assert.equal(helperRun.sessionKey, "agent:helper:web:group:bcast-par");
    await finish(mainRun);
    await finish(helperRun);
  });

  it("/help lists every command", async () => {
    const m = await web("g-help", "/help");
    const notice = await noticeFor(m.id);
    assert.equal(notice.kind, "notice");
    assert.match(notice.text, /^Commands:/);
    for (const [command] of COMMAND_HELP) assert.ok(notice.text.includes(command), `${command} in /help`);
    for (const name of ["/new", "/reset", "/stop", "/status", "/model", "/think", "/verbose", "/reasoning", "/queue", "/compact", "/approve", "/deny", "/help"]) {
      assert.ok(notice.text.includes(name), `${name} in /help`);
    }
    await noRun(m.runId, 300);
  });

  it("/deny from chat: refused for a non-owner, denies the approval for an owner", async () => {
    const tools = await nats.connect("tools");
    const { approval } = await new BusClient(tools).call("approvals", "request", {
      toolCallId: `call-deny-${randomUUID()}`, tool: "exec", argsHash: "b".repeat(64), command: "rm -rf /tmp/x", sessionKey: "agent:main:main", agentId: "main",
    });
    const stranger = await send("web", { kind: "dm", id: "someone" }, `/deny ${approval.approvalId}`, { sender: "someone" });
    assert.match((await noticeFor(stranger.id)).text, /owner only/);
    assert.equal((await bus.call("approvals", "get", { approvalId: approval.approvalId })).approval.status, "pending");
    const boss = await send("telegram", { kind: "dm", id: "boss" }, `/deny ${approval.approvalId}`, { sender: "boss" });
    assert.match((await noticeFor(boss.id)).text, new RegExp(`${approval.approvalId}: denied`));
    const record = (await bus.call("approvals", "get", { approvalId: approval.approvalId })).approval;
    assert.equal(record.status, "denied");
    assert.equal(record.decidedBy, "telegram:boss");
    await tools.close();
  });
});

describe("router scenarios with the whole system (real agent-runner, fake LLM)", () => {
  let system: TestSystem;
  let client: CliClient;
  before(async () => {
    system = await TestSystem.start();
    client = await CliClient.connect(system.nats, "scenarios");
  });
  after(async () => {
    await client?.close();
    await system?.stop();
  });
  const history = async (sessionKey: string) => (await new BusClient(client.nc).call("sessions", "history", { sessionKey })).records;
  const userTexts = (records: Awaited<ReturnType<typeof history>>) => records.filter((r) => r.kind === "message" && r.message?.role === "user")
    .map((r) => (r.message as { content: Array<{ type: string; text?: string }> }).content.map((b) => b.text ?? "").join(""));

  it("/reset <text>: a fresh session whose first message is the text", async () => {
    const key = "agent:main:cli:dm:resetme";
    assert.equal((await client.send("OLD-MESSAGE", { sessionName: "resetme" })).text, "echo: OLD-MESSAGE");
    const before = (await new BusClient(client.nc).call("sessions", "get", { sessionKey: key })).session!;
    const reset = await client.send("/reset FIRST-OF-NEW", { sessionName: "resetme" });
    assert.match(reset.text, /^Fresh session started/);
    const records = await waitFor(async () => {
      const r = await history(key);
      return r.some((x) => x.kind === "run_marker" && x.runStatus === "done") ? r : null;
    }, 20_000, "the run of the reset text");
    const after = (await new BusClient(client.nc).call("sessions", "get", { sessionKey: key })).session!;
    assert.notEqual(after.sessionId, before.sessionId);
    assert.deepEqual(userTexts(records), ["FIRST-OF-NEW"], "the new transcript starts with the text, without the old messages");
    assert.ok(system.fake.requests.some((r) => JSON.stringify(r.body.messages).includes("FIRST-OF-NEW") && !JSON.stringify(r.body.messages).includes("OLD-MESSAGE")));
  });

  it("/compact through the router reaches the runner and compacts the session", async () => {
    const key = "agent:main:cli:dm:compactme";
    for (const text of ["CMP-ONE first", "CMP-TWO second", "CMP-THREE third"]) await client.send(text, { sessionName: "compactme" });
    const notice = await client.send("/compact keep the names", { sessionName: "compactme" });
    assert.match(notice.text, /^Compaction of agent:main:cli:dm:compactme queued/);
    const records = await waitFor(async () => {
      const r = await history(key);
      return r.some((x) => x.kind === "compaction_summary") ? r : null;
    }, 20_000, "a compaction summary in the transcript");
    assert.equal(records.filter((r) => r.kind === "compaction_summary").length, 1);
    assert.ok(system.fake.requests.some((r) => JSON.stringify(r.body.messages).includes("keep the names")), "the instructions reach the summarizer");
  });
});
