/**
 * A run request whose every delivery was interrupted (its agent-runner killed while running it,
 * `bus.maxDeliver` 2) is given up on the next delivery: an error reply, an `error` end marker and
 * terminal event, `run_given_up`, no further model call; the session's next run goes normally.
 * Real nats-server, the sessions and agent-runner processes (the runner SIGKILLed mid-run), a
 * fake OpenAI server whose answer hangs, a stand-in tools responder.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { CONSUMERS, outboundMessageSchema, runEventSchema, STREAMS, subjects, type RunEvent, type RunRequest } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { runHandler, type RunnerDeps } from "../services/agent-runner/run.js";
import { FakeOpenAIServer, messageText } from "./fakes/openai-server.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { READ_STAND_IN, startToolResponder } from "./harness/tool-responder.js";

const S = subjects();

describe("agent-runner: a run interrupted on every delivery", () => {
  let nats: TestNats;
  let fake: FakeOpenAIServer;
  let sessions: ActorProcess;
  let runner: ActorProcess;
  let router: NatsConnection;
  let admin: NatsConnection;
  let toolsNc: NatsConnection;
  const runnerEnv = () => ({
    LURKBOT_MODEL: "openai/test-model", OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test-interrupted-0123456789",
    // a killed runner's request comes back quickly
    LURKBOT_ACK_WAIT_MS: "1500",
  });

  before(async () => {
    nats = await TestNats.start();
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({ bus: { maxDeliver: 2 } }));
    fake = await FakeOpenAIServer.start();
    toolsNc = await startToolResponder(nats, [READ_STAND_IN]);
    sessions = await startActorProcess("sessions", nats);
    runner = await startActorProcess("agent-runner", nats, runnerEnv());
    router = await nats.connect("router");
    admin = await nats.connect("admin");
  });
  after(async () => {
    await Promise.all([router?.close(), admin?.close(), toolsNc?.close()]);
    await Promise.all([runner?.stop(), sessions?.stop()]);
    await fake?.close();
    await nats?.stop();
  });

  async function publishRun(n: number, text: string): Promise<{ req: RunRequest; events: RunEvent[] }> {
    const req = {
      type: "lurk.run.request.v1", id: `req-int-${n}`, ts: Date.now(), runId: `run-int-${n}-${Date.now().toString(36)}`,
      sessionKey: "agent:main:cli:dm:interrupted", agentId: "main", sessionType: "dm", trigger: "message",
      inputs: [{ kind: "user", text, attachments: [] }],
      origin: { channel: "cli", conversation: `int-${n}`, messageIds: [`msg-int-${n}`] }, deliver: true, options: {},
    } as RunRequest;
    const events: RunEvent[] = [];
    admin.subscribe(S.runEvents(req.runId), { callback: (_e, m) => void events.push(runEventSchema.parse(m.json())) });
    await admin.flush();
    await jetstream(router).publish(S.runRequest("main"), JSON.stringify(req), { msgID: req.runId });
    return { req, events };
  }

  const callsWith = (text: string) => fake.requests.filter((r) => r.body.messages.some((m) => m.role === "user" && messageText(m).includes(text))).length;

  it("is answered with an error on the delivery after maxDeliver, without running it again; the next run works", async () => {
    const givenUp: Record<string, unknown>[] = [];
    admin.subscribe(S.event("agent-runner", "run_given_up"), { callback: (_e, m) => void givenUp.push(m.json()) });
    fake.enqueue({ kind: "hang", text: "thinking" }, { kind: "hang", text: "thinking" });
    const run = await publishRun(1, "the poison message");
    for (const delivery of [1, 2]) {
      await waitFor(() => callsWith("the poison message") === delivery, 15_000, `model call of delivery ${delivery}`);
      await runner.kill();
      runner = await startActorProcess("agent-runner", nats, runnerEnv());
    }
    const terminal = await waitFor(() => run.events.find((e) => e.event.kind === "done" || e.event.kind === "error"), 15_000, "terminal event");
    assert.ok(terminal.event.kind === "error" && terminal.event.code === "INTERNAL", `an error end: ${JSON.stringify(terminal.event)}`);
    assert.equal(callsWith("the poison message"), 2, "the third delivery made no model call");
    const bus = new BusClient(router);
    const status = await waitFor(async () => {
      const s = (await bus.call("sessions", "run", { sessionKey: run.req.sessionKey, runId: run.req.runId, statusOnly: true })).status;
      return s === "error" ? s : undefined;
    }, 10_000, "the run's error end marker");
    assert.equal(status, "error");
    const jsm = await jetstreamManager(admin);
    const reply = outboundMessageSchema.parse((await waitFor(() => jsm.streams.getMessage(STREAMS.outbound, { last_by_subj: S.outbound("cli", "int-1") }).catch(() => null), 10_000, "the error reply")).json());
    assert.equal(reply.kind, "error");
    assert.match(reply.text, /started 2 times .* given up; send the message again/);
    assert.deepEqual(reply.replyTo, ["msg-int-1"]);
    await waitFor(() => givenUp.length === 1, 5_000, "run_given_up event");
    assert.deepEqual([givenUp[0]!.level, (givenUp[0]!.data as { runId?: string }).runId], ["error", run.req.runId]);

    // the session goes on: its next run is answered by the model
    const next = await publishRun(2, "a normal message");
    const done = await waitFor(() => next.events.find((e) => e.event.kind === "done" || e.event.kind === "error"), 15_000, "the next run's end");
    assert.ok(done.event.kind === "done" && done.event.text === "echo: a normal message", JSON.stringify(done.event));
  });

  it("a clean stop (SIGTERM) hands the run back to be resumed; one on its last delivery gives it up with an answer, not a dead letter", async () => {
    const givenUp: Record<string, unknown>[] = [];
    const deadLetters: unknown[] = [];
    admin.subscribe(S.event("agent-runner", "run_given_up"), { callback: (_e, m) => void givenUp.push(m.json()) });
    admin.subscribe(S.deadLetter(STREAMS.runs, CONSUMERS.agentRunner), { callback: (_e, m) => void deadLetters.push(m.json()) });
    fake.enqueue({ kind: "hang", text: "thinking" }, { kind: "hang", text: "thinking" });
    const run = await publishRun(3, "a long task");
    for (const delivery of [1, 2]) {
      await waitFor(() => callsWith("a long task") === delivery, 15_000, `model call of delivery ${delivery} (resumed after a clean stop)`);
      await runner.stop();
      runner = await startActorProcess("agent-runner", nats, runnerEnv());
    }
    const terminal = await waitFor(() => run.events.find((e) => e.event.kind === "done" || e.event.kind === "error"), 15_000, "terminal event");
    assert.ok(terminal.event.kind === "error" && terminal.event.code === "INTERNAL", `an error end: ${JSON.stringify(terminal.event)}`);
    const jsm = await jetstreamManager(admin);
    const reply = outboundMessageSchema.parse((await waitFor(() => jsm.streams.getMessage(STREAMS.outbound, { last_by_subj: S.outbound("cli", "int-3") }).catch(() => null), 10_000, "the error reply")).json());
    assert.equal(reply.kind, "error");
    assert.match(reply.text, /started 2 times .* given up; send the message again/);
    await waitFor(() => givenUp.length === 1, 5_000, "run_given_up event");
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(deadLetters, [], "not dead-lettered");
    assert.equal(callsWith("a long task"), 2, "no third model call");
  });
});

describe("agent-runner: a consolidate command interrupted on every delivery", () => {
  it("is given up (logged, run_given_up) without consolidating again", async () => {
    const emitted: [string, Record<string, unknown>][] = [];
    const log = { child: () => log, error() {}, warn() {}, info() {}, debug() {} };
    // touching anything but the config, the logger and emit (the registry, the bus) throws
    const rt = { config: { bus: { maxDeliver: 2 }, memory: { enabled: true } }, log, emit: (event: string, data: Record<string, unknown>) => void emitted.push([event, data]) };
    const deps = { rt, controls: { exclusive: (_id: string, fn: () => Promise<void>) => fn() } } as unknown as RunnerDeps;
    const req = {
      type: "lurk.run.request.v1", id: "req-cons", ts: Date.now(), runId: "run-cons", sessionKey: "agent:main:cli:dm:cons", agentId: "main", sessionType: "dm",
      trigger: "command", inputs: [], deliver: false, options: { command: "consolidate", previousSessionId: "s-old" },
    } as unknown as RunRequest;
    await runHandler(deps)(req, { subject: "x", streamSeq: 1, deliveryCount: 3, redelivered: true, headers: {}, ackNow() {} });
    assert.deepEqual(emitted, [["run_given_up", { runId: "run-cons", sessionKey: "agent:main:cli:dm:cons", deliveries: 2 }]]);
  });
});
