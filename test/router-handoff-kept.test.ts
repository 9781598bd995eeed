/**
 * A message handed to a running run (queue modes followup, steer) is never lost. End to end: a
 * nats-server, the sessions, router and agent-runner processes, a fake OpenAI server whose calls
 * the tests hold until the hand-off happened, and a tools stand-in (runs.maxIterations 2). The
 * router acks a handed message only once the run that accepted it ended with it in its
 * transcript; a run that accepted it and never took it (a provider error, an abort from outside,
 * its iteration limit, a /compact run, which takes no inputs at all) leaves it to a run of its
 * own, which answers it. A hand-off the run took is answered once, in that run's reply; a message
 * dropped by /stop stays dropped.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  envelope, outboundMessageSchema, runControlReplySchema, runIdFor, safeParseJson, subjects, type OutboundMessage, type ToolDefinition,
} from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { FakeOpenAIServer, messageText, type ChatRequestBody, type FakeReply } from "./fakes/openai-server.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { collectActorEvents, type SeenActorEvent } from "./harness/events.js";
import { TestNats } from "./harness/nats.js";
import { CliClient } from "./harness/system.js";
import { startToolResponder, textResult } from "./harness/tool-responder.js";

const s = subjects();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const CONVERSATION = "handoff";

const LOOK: ToolDefinition = {
  name: "look", description: "Look something up.", parameters: { type: "object", properties: {} },
  actor: "tools", sideEffects: false, parallelSafe: true, groups: [], needsApproval: false,
};

/** A model call held until the test opens it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

describe("a message handed to a running run is never lost", () => {
  let nats: TestNats;
  let fake: FakeOpenAIServer;
  const actors: ActorProcess[] = [];
  let tools: NatsConnection;
  let admin: NatsConnection;
  let bus: BusClient;
  let client: CliClient;
  let routerEvents: SeenActorEvent[];
  const outbound: OutboundMessage[] = [];
  const ws = mkdtempSync(join(tmpdir(), "lurk-handoff-ws-"));

  before(async () => {
    nats = await TestNats.start();
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({ runs: { maxIterations: 2 }, routing: { queue: { controlTimeoutMs: 2000 } } }));
    fake = await FakeOpenAIServer.start();
    tools = await startToolResponder(nats, [{ definition: LOOK, run: async (req) => textResult(req, "looked: all fine", 20) }]);
    admin = await nats.connect("admin");
    bus = new BusClient(admin);
    routerEvents = await collectActorEvents(admin, "router");
    admin.subscribe(s.outbound("cli", CONVERSATION), { callback: (_e, m) => void outbound.push(outboundMessageSchema.parse(safeParseJson(m.data))) });
    await admin.flush();
    actors.push(await startActorProcess("sessions", nats), await startActorProcess("router", nats), await startActorProcess("agent-runner", nats, {
      LURKBOT_MODEL: "openai/test-model", OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test-handoff-0123456789", LURKBOT_WORKSPACE: ws,
    }));
    client = await CliClient.connect(nats, CONVERSATION);
  });
  after(async () => {
    await Promise.all([client?.close(), admin?.close(), tools?.close()]);
    for (const a of actors.reverse()) await a.stop();
    await fake?.close();
    await nats?.stop();
    rmSync(ws, { recursive: true, force: true });
  });

  const sessionKey = (name: string) => `agent:main:cli:dm:${name}`;
  const publish = async (text: string, sessionName: string) => {
    const id = randomUUID();
    await client.publish(text, { id, sessionName });
    return { id, runId: runIdFor("cli", id) };
  };
  const status = async (name: string, runId: string) => (await bus.call("sessions", "run", { sessionKey: sessionKey(name), runId, statusOnly: true })).status;
  const answers = (id: string) => outbound.filter((o) => o.replyTo.includes(id) && o.kind === "reply");
  const answerTo = (id: string, what: string) => waitFor(() => answers(id)[0], 30_000, what);
  const handed = (runId: string, action: "steer" | "followup") =>
    waitFor(() => routerEvents.find((e) => e.event === "handed" && e.data.runId === runId && e.data.action === action), 15_000, `${action} handed to ${runId}`);
  const text = (body: ChatRequestBody) => body.messages.map((m) => messageText(m)).join("\n");
  /** a session in queue mode `mode` */
  const session = async (name: string, mode: string) => assert.match((await client.send(`/queue ${mode}`, { sessionName: name })).text, new RegExp(`queue: ${mode}`));
  /** the model's answers: `script` for the calls of the run of the message marked `marker` (before the hand-off's own text is in them), else auto */
  const answering = (marker: string, handedMarker: string, script: (call: number) => Promise<FakeReply | undefined>) => {
    let calls = 0;
    fake.responder = async (body) => {
      const all = text(body);
      return all.includes(marker) && !all.includes(handedMarker) ? script(++calls) : undefined;
    };
    return { calls: () => calls };
  };
  /**
   * A followup session `name` whose run of A (`question [<tag>-A]`) is held in its model call
   * while B (`bText`) is handed to it; once `open()`ed, A's call answers `reply`.
   */
  const handedDuringCall = async (name: string, tag: string, reply: FakeReply, bText = `and also [${tag}-B]`) => {
    await session(name, "followup");
    const held = gate();
    const a1 = answering(`[${tag}-A]`, `[${tag}-B]`, async () => {
      await held.opened;
      return reply;
    });
    const a = await publish(`question [${tag}-A]`, name);
    await waitFor(() => a1.calls() > 0 || undefined, 15_000, "A's model call");
    const b = await publish(bText, name);
    await handed(a.runId, "followup");
    return { a, b, open: held.open };
  };

  it("followup: a message handed to a run that then fails (a provider error) gets a run of its own and is answered", { timeout: 60_000 }, async () => {
    // not retried, no cooldown
    const { a, b, open } = await handedDuringCall("hk-fail", "fail", { kind: "error", status: 400, message: "the request was refused (test)" });
    open();
    const answer = await answerTo(b.id, "B's answer");
    assert.equal(answer.text, "echo: and also [fail-B]");
    assert.deepEqual(answer.replyTo, [b.id], "from a run of its own");
    assert.deepEqual([await status("hk-fail", a.runId), await status("hk-fail", b.runId)], ["error", "done"]);
    const failed = outbound.find((o) => o.replyTo.includes(a.id) && o.kind === "error");
    assert.ok(failed, "A got its error reply");
    assert.equal(failed.replyTo.includes(b.id), false, "the failed run never took B");
    await sleep(500);
    assert.equal(answers(b.id).length, 1);
  });

  it("followup: a message handed to a run that is aborted from outside (not /stop) gets a run of its own", { timeout: 60_000 }, async () => {
    const { a, b, open } = await handedDuringCall("hk-abort", "abort", { kind: "text", text: "never seen" });
    // an abort another actor sends (e.g. a subagents stop): the router's queue drops nothing
    admin.publish(s.runControl(a.runId), JSON.stringify(envelope("lurk.run.control.v1", { runId: a.runId, action: "abort" as const, reason: "test" })));
    await waitFor(async () => (await status("hk-abort", a.runId)) === "aborted" || undefined, 15_000, "A aborted");
    open();
    const answer = await answerTo(b.id, "B's answer");
    assert.equal(answer.text, "echo: and also [abort-B]");
    assert.equal(await status("hk-abort", b.runId), "done");
  });

  it("steer: a message steered into a run that ends at its iteration limit gets a run of its own and is answered", { timeout: 60_000 }, async () => {
    await session("hk-limit", "steer");
    const held = gate();
    const a1 = answering("[limit-A]", "[limit-B]", async (call) => {
      if (call === 2) await held.opened; // the last allowed call: B is steered in meanwhile
      return { kind: "tool_calls", calls: [{ id: `look_${call}`, name: "look", arguments: {} }] };
    });
    const a = await publish("look twice [limit-A]", "hk-limit");
    await waitFor(() => a1.calls() > 1 || undefined, 15_000, "A's second model call");
    const b = await publish("then tell me [limit-B]", "hk-limit");
    await handed(a.runId, "steer");
    held.open();
    const limited = await answerTo(a.id, "A's answer");
    assert.match(limited.text, /I stopped after 2 model calls/);
    assert.deepEqual(limited.replyTo, [a.id], "the run at its limit did not take B");
    const answer = await answerTo(b.id, "B's answer");
    assert.equal(answer.text, "echo: then tell me [limit-B]");
    assert.deepEqual(answer.replyTo, [b.id]);
    assert.equal(await status("hk-limit", b.runId), "done");
    assert.equal(a1.calls(), 2, "A's run made no call past its limit");
  });

  it("followup: a hand-off the run takes is answered once, in that run's reply: no run of its own", { timeout: 60_000 }, async () => {
    const { a, b, open } = await handedDuringCall("hk-ok", "ok", { kind: "text", text: "the answer to A" }, "and B [ok-B]");
    open();
    const answer = await answerTo(b.id, "the run's reply");
    assert.equal(answer.text, "the answer to A\n\necho: and B [ok-B]");
    assert.deepEqual(answer.replyTo, [a.id, b.id]);
    await waitFor(async () => (await bus.call("router", "lanes", { sessionKey: sessionKey("hk-ok") })).lanes.length === 0 || undefined, 10_000, "the lane is free");
    await sleep(1000);
    assert.equal(await status("hk-ok", b.runId), "unknown", "no run of its own");
    assert.equal(answers(b.id).length, 1, "answered once");
    assert.equal(fake.requests.filter((r) => text(r.body).includes("[ok-B]")).length, 1, "one model call saw B");
  });

  it("/stop: a message handed to the stopped run stays dropped", { timeout: 60_000 }, async () => {
    const { a, b, open } = await handedDuringCall("hk-stop", "stop", { kind: "text", text: "never seen" });
    const stop = await client.send("/stop", { sessionName: "hk-stop" });
    assert.equal(stop.text, `Stopped the active run (${a.runId}). Dropped 1 queued message.`);
    await waitFor(async () => (await status("hk-stop", a.runId)) === "aborted" || undefined, 15_000, "A aborted");
    open();
    await waitFor(async () => (await bus.call("router", "lanes", { sessionKey: sessionKey("hk-stop") })).lanes.length === 0 || undefined, 10_000, "the lane is free");
    await sleep(1000);
    assert.equal(await status("hk-stop", b.runId), "unknown", "no run of its own");
    assert.equal(fake.requests.some((r) => text(r.body).includes("[stop-B]")), false, "no model call saw it");
    assert.equal(outbound.some((o) => o.replyTo.includes(b.id)), false, "no answer");
  });

  it("followup during a /compact run: the run takes no inputs (refused at once), so the message runs after it", { timeout: 60_000 }, async () => {
    const name = "hk-compact";
    for (const t of ["first [cmp-1]", "second [cmp-2]", "third [cmp-3]"]) await client.send(t, { sessionName: name });
    await session(name, "followup");
    const held = gate();
    let compacting = 0;
    fake.responder = async (body) => {
      if (!text(body).includes("[hold-compact]")) return undefined;
      compacting++;
      await held.opened;
      return { kind: "text", text: "summary: two messages" };
    };
    assert.match((await client.send("/compact [hold-compact]", { sessionName: name })).text, /^Compaction of agent:main:cli:dm:hk-compact queued/);
    await waitFor(() => compacting > 0 || undefined, 15_000, "the compaction's model call");
    const compactRun = (await bus.call("router", "lanes", { sessionKey: sessionKey(name) })).lanes[0]?.activeRunId;
    assert.ok(compactRun);
    // the runner holding the command run answers a hand-off, and refuses it
    const ask = envelope("lurk.run.control.v1", { runId: compactRun, action: "followup" as const, input: { kind: "user" as const, text: "probe", attachments: [] } });
    const reply = runControlReplySchema.parse(safeParseJson((await admin.request(s.runControl(compactRun), JSON.stringify(ask), { timeout: 5_000 })).data));
    assert.deepEqual(reply, { runId: compactRun, action: "followup", accepted: false });
    const b = await publish("after the compaction [cmp-B]", name);
    await waitFor(() => routerEvents.find((e) => e.event === "hand_refused" && e.data.runId === compactRun), 15_000, "the hand-off refused");
    held.open();
    const answer = await answerTo(b.id, "B's answer");
    assert.equal(answer.text, "echo: after the compaction [cmp-B]");
    assert.deepEqual(answer.replyTo, [b.id]);
    assert.equal(await status(name, compactRun), "done");
  });
});
