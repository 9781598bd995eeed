/**
 * Steering, follow-ups and turn hooks of the agent loop. The loop runs in-process with a
 * scripted provider (a Provider that answers from a list and records what it was sent) and
 * publishes its events through the real RunEvents on a real nats-server; one end-to-end test
 * sends the control over the bus to a real agent-runner process. Inputs the loop can no longer
 * answer (its iteration limit, a hook's stop, an error) are never taken, and every exit closes
 * the mailbox.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  runControlReplySchema, runEventSchema, subjects, type AssistantMessage, type LlmMessage, type RunEvent, type ToolDefinition, type ToolResultMessage, type TranscriptRecord,
} from "../shared/contract/index.js";
import { createLogger } from "../shared/runtime/logger.js";
import { RunEvents } from "../services/agent-runner/events.js";
import { tokenBudgetHook } from "../services/agent-runner/hooks.js";
import { runLoop, type LoopDeps, type TurnHooks } from "../services/agent-runner/loop.js";
import { RunMailbox, type MailboxInput } from "../services/agent-runner/mailbox.js";
import type { Provider, ProviderRequest, ProviderStreamEvent } from "../services/agent-runner/providers/types.js";
import { mailboxInputRecords, recordsToMessages, resumeState } from "../services/agent-runner/transcript.js";
import { SKIPPED_TEXT } from "../services/agent-runner/turn-tools.js";
import { jetstream } from "@nats-io/jetstream";

import { BusClient } from "../shared/runtime/client.js";
import { FakeOpenAIServer, messageText } from "./fakes/openai-server.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { startToolResponder, textResult } from "./harness/tool-responder.js";

const S = subjects();
const log = createLogger("steering-test", "silent");

const tool = (name: string, parallelSafe: boolean): ToolDefinition => ({
  name, description: name, parameters: { type: "object", properties: {} }, actor: "tools",
  sideEffects: !parallelSafe, parallelSafe, groups: [], needsApproval: false,
});
const NOTE = tool("note", false);
const LOOK = tool("look", true);

type Script = (req: ProviderRequest, call: number) => AssistantMessage | Promise<AssistantMessage>;

/** A Provider that answers from a script and keeps a copy of every request's messages. */
class ScriptedProvider implements Provider {
  readonly name = "scripted";
  readonly seen: LlmMessage[][] = [];
  constructor(private readonly script: Script) {}
  async *stream(req: ProviderRequest): AsyncIterable<ProviderStreamEvent> {
    this.seen.push(structuredClone(req.messages));
    const message = await this.script(req, this.seen.length);
    yield { type: "done", message };
  }
}

const usage = { input: 100, output: 50, cacheRead: 0, cacheWrite: 0, total: 150 };
const answer = (text: string): AssistantMessage => ({ role: "assistant", content: [{ type: "text", text }], stopReason: "end_turn", usage, model: "m", provider: "scripted" });
const calls = (...c: { id: string; name: string }[]): AssistantMessage => ({
  role: "assistant", content: c.map((x) => ({ type: "tool_call" as const, id: x.id, name: x.name, args: {} })), stopReason: "tool_use", usage, model: "m", provider: "scripted",
});
const userText = (m: LlmMessage | undefined) => (m?.role === "user" ? m.content.map((b) => (b.type === "text" ? b.text : "")).join("") : "");
const input = (id: string, action: "steer" | "followup", text: string): MailboxInput => ({ id, action, input: { kind: "user", text, attachments: [] } });

describe("agent loop: steering, follow-ups, hooks", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let runCounter = 0;

  before(async () => {
    nats = await TestNats.start();
    nc = await nats.connect("admin");
  });
  after(async () => {
    await nc?.close();
    await nats?.stop();
  });

  /** A loop over the real event publisher, with tools that record their runs and a mailbox. */
  function setup(provider: Provider, opts: { hooks?: TurnHooks[]; onTool?: (name: string, id: string) => Promise<void> | void; onCheckpoint?: (result: ToolResultMessage) => Promise<void> } = {}) {
    const runId = `run-steer-${++runCounter}`;
    const events: RunEvent[] = [];
    const sub = nc.subscribe(S.runEvents(runId), { callback: (_e, msg) => void events.push(runEventSchema.parse(msg.json())) });
    const executed: string[] = [];
    const checkpoints: ToolResultMessage[] = [];
    const recorded: TranscriptRecord[] = [];
    const mailbox = new RunMailbox();
    const deps: LoopDeps = {
      provider, providerName: "scripted", model: "m", system: "sys", tools: [NOTE, LOOK], log,
      events: new RunEvents(nc, S, runId, "agent:main:main", "req-1", log),
      signal: new AbortController().signal, llmTimeoutMs: 10_000, maxIterations: 10,
      execute: async (call) => {
        executed.push(call.id);
        await opts.onTool?.(call.name, call.id);
        return { role: "tool_result", toolCallId: call.id, toolName: call.name, isError: false, content: [{ type: "text", text: `ran ${call.id}` }] };
      },
      checkpoint: async (_turn, result) => {
        await opts.onCheckpoint?.(result);
        checkpoints.push(result);
      },
      checkpointAssistant: async () => undefined,
      mailbox,
      recordInputs: async (turn, inputs) => {
        const records = mailboxInputRecords(runId, turn, inputs);
        recorded.push(...records);
        return recordsToMessages(records);
      },
      hooks: opts.hooks ?? [],
    };
    const flush = async () => {
      await nc.flush();
      await new Promise((r) => setTimeout(r, 50));
      sub.unsubscribe();
    };
    return { runId, deps, mailbox, events, executed, checkpoints, recorded, flush };
  }

  const fresh = { turn: 0, usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }, context: [{ role: "user" as const, content: [{ type: "text" as const, text: "start" }] }], after: [] };

  it("steering skips the tool calls not yet started and becomes the next turn's user message", async () => {
    const provider = new ScriptedProvider((_req, n) => (n === 1 ? calls({ id: "c1", name: "note" }, { id: "c2", name: "note" }, { id: "c3", name: "note" }) : answer("done after steering")));
    const t = setup(provider, {
      // the steering message arrives while the first call runs
      onTool: (_name, id) => { if (id === "c1") t.mailbox.push(input("ctl-1", "steer", "stop, do something else")); },
    });
    const result = await runLoop(t.deps, fresh);
    await t.flush();
    assert.deepEqual(t.executed, ["c1"], "c2 and c3 were never started");
    assert.equal(result.text, "done after steering");
    const second = provider.seen[1]!;
    const results = second.filter((m): m is ToolResultMessage => m.role === "tool_result");
    assert.deepEqual(results.map((r) => r.toolCallId), ["c1", "c2", "c3"], "every call keeps a result, in call order");
    assert.ok(results.slice(1).every((r) => r.isError && r.content[0]?.type === "text" && r.content[0].text === SKIPPED_TEXT));
    assert.equal(userText(second.at(-1)), "stop, do something else", "the steering text follows the results");
    assert.deepEqual(t.checkpoints.map((c) => c.toolCallId), ["c1", "c2", "c3"], "skipped results are checkpointed too");
    assert.deepEqual(t.recorded.map((r) => r.id), [`${t.runId}:u:ctl-1`]);
    const steer = t.events.find((e) => e.event.kind === "steer");
    assert.ok(steer && steer.event.kind === "steer");
    assert.deepEqual(steer.event.skippedToolCalls, ["c2", "c3"]);
  });

  it("a follow-up starts a new turn when the loop would end; both answers are delivered", async () => {
    const provider = new ScriptedProvider((_req, n) => (n === 1 ? calls({ id: "f1", name: "note" }) : n === 2 ? answer("first answer") : answer("second answer")));
    const t = setup(provider, { onTool: () => void t.mailbox.push(input("ctl-f", "followup", "and one more thing")) });
    const result = await runLoop(t.deps, fresh);
    await t.flush();
    assert.equal(provider.seen.length, 3, "the follow-up got its own model call");
    assert.equal(userText(provider.seen[2]!.at(-1)), "and one more thing");
    assert.equal(result.text, "first answer\n\nsecond answer");
    assert.equal(result.turns, 3);
    assert.equal(t.events.filter((e) => e.event.kind === "steer").length, 0, "a follow-up is not steering");
    // after the loop's last look the mailbox is closed: a late input is refused, not lost in a finished run
    assert.equal(t.mailbox.push(input("ctl-late", "followup", "too late")), false);
  });

  it("inputs a run accepted and can no longer answer are never taken: at its iteration limit, a hook's stop, an error; every exit closes the mailbox", async () => {
    // the iteration limit: steering that came during the last allowed turn's tool call is left
    const atLimit = new ScriptedProvider(() => calls({ id: `l${atLimit.seen.length}`, name: "note" }));
    const t = setup(atLimit, { onTool: () => void t.mailbox.push(input("ctl-limit", "steer", "one more thing")) });
    const limited = await runLoop({ ...t.deps, maxIterations: 1 }, fresh);
    await t.flush();
    assert.equal(limited.stoppedAtLimit, true);
    assert.equal(atLimit.seen.length, 1);
    assert.deepEqual(t.recorded, [], "not recorded: the router runs it on its own");
    assert.equal(t.mailbox.push(input("ctl-late-1", "followup", "too late")), false, "closed at the limit");

    // a follow-up waiting when the last allowed turn answers: the answer is the run's, the follow-up is left
    const lastAnswer = new ScriptedProvider((_req, n) => (n === 1 ? calls({ id: "a1", name: "note" }) : answer("the answer")));
    const t2 = setup(lastAnswer, { onTool: () => void t2.mailbox.push(input("ctl-last", "followup", "and this")) });
    const answered = await runLoop({ ...t2.deps, maxIterations: 2 }, fresh);
    await t2.flush();
    assert.deepEqual([answered.text, answered.stoppedAtLimit, lastAnswer.seen.length], ["the answer", false, 2]);
    assert.deepEqual(t2.recorded, []);

    // a hook's stop: the steering that came meanwhile is left
    const stopper: TurnHooks = { onTurnEnd: () => "enough" };
    const hooked = new ScriptedProvider(() => calls({ id: "h1", name: "note" }));
    const t3 = setup(hooked, { hooks: [stopper], onTool: () => void t3.mailbox.push(input("ctl-hook", "steer", "wait")) });
    assert.equal((await runLoop(t3.deps, fresh)).stoppedByHook, "enough");
    await t3.flush();
    assert.deepEqual(t3.recorded, []);
    assert.equal(t3.mailbox.push(input("ctl-late-3", "steer", "too late")), false);

    // a provider error after a follow-up was accepted: the loop fails, the follow-up was never taken
    const failing = new ScriptedProvider((_req, n) => { if (n === 2) throw new Error("provider down"); return calls({ id: "e1", name: "note" }); });
    const t4 = setup(failing, { onTool: () => void t4.mailbox.push(input("ctl-err", "followup", "are you there?")) });
    await assert.rejects(runLoop(t4.deps, fresh), /provider down/);
    await t4.flush();
    assert.deepEqual(t4.recorded, []);
    assert.equal(t4.mailbox.push(input("ctl-late-4", "followup", "hello?")), false, "closed on an error");
  });

  it("a command run's mailbox is closed from the start", () => {
    const mailbox = new RunMailbox({ closed: true });
    assert.equal(mailbox.push(input("ctl-cmd", "followup", "during /compact")), false);
    assert.deepEqual(mailbox.takeAllOrClose(), []);
  });

  it("a repeated control message is taken once", async () => {
    const provider = new ScriptedProvider((_req, n) => (n === 1 ? calls({ id: "r1", name: "look" }) : answer(`answer ${n}`)));
    const t = setup(provider, {
      onTool: () => {
        t.mailbox.push(input("ctl-dup", "followup", "once"));
        t.mailbox.push(input("ctl-dup", "followup", "once"));
      },
    });
    await runLoop(t.deps, fresh);
    await t.flush();
    assert.equal(provider.seen.length, 3);
    assert.equal(provider.seen[2]!.filter((m) => userText(m) === "once").length, 1);
  });

  it("turn hooks see every message and turn; onTurnEnd can stop the loop; onError sees failures", async () => {
    const seen: string[] = [];
    const observer: TurnHooks = {
      onMessage: ({ turn }) => void seen.push(`message ${turn}`),
      onTurnEnd: ({ turn, toolCalls }) => void seen.push(`end ${turn}:${toolCalls}`),
      onError: ({ error }) => void seen.push(`error ${error.code}`),
    };
    // each turn costs 150 tokens: a budget of 300 stops after the second tool turn
    const provider = new ScriptedProvider((_req, n) => calls({ id: `h${n}`, name: "look" }));
    const t = setup(provider, { hooks: [observer, tokenBudgetHook(300)] });
    const result = await runLoop(t.deps, fresh);
    await t.flush();
    assert.equal(provider.seen.length, 2);
    assert.match(result.stoppedByHook ?? "", /300 tokens, over its budget of 300/);
    assert.deepEqual(seen, ["message 1", "end 1:1", "message 2", "end 2:1"]);

    // a throwing hook is ignored; a provider failure reaches onError and still fails the loop
    const failing = new ScriptedProvider(() => { throw new Error("boom"); });
    const broken: TurnHooks = { onMessage: () => { throw new Error("hook bug"); } };
    const t2 = setup(failing, { hooks: [broken, observer] });
    await assert.rejects(runLoop(t2.deps, fresh));
    await t2.flush();
    assert.equal(seen.at(-1), "error INTERNAL");
  });

  it("stores a tool result while the next model call runs, and goes on only once it is stored", async () => {
    const order: string[] = [];
    let release!: () => void;
    const slowStore = new Promise<void>((r) => (release = r));
    const provider = new ScriptedProvider(async (_req, n) => {
      order.push(`model ${n} called`);
      if (n === 2) setTimeout(() => { order.push("store released"); release(); }, 50);
      return n === 1 ? calls({ id: "s1", name: "note" }) : answer("after the tool");
    });
    const t = setup(provider, { onCheckpoint: async () => { order.push("store started"); await slowStore; order.push("stored"); } });
    const result = await runLoop(t.deps, fresh);
    await t.flush();
    assert.equal(result.text, "after the tool");
    assert.deepEqual(order, ["model 1 called", "store started", "model 2 called", "store released", "stored"], "the second call did not wait for the store; the loop ended after it");
    assert.equal(t.events.at(-1)?.event.kind, "turn_end");

    // a failed store fails the loop (the run is then redelivered and resumes) even though the model answered
    const failing = new ScriptedProvider((_req, n) => (n === 1 ? calls({ id: "s2", name: "look" }) : answer("never delivered")));
    const t2 = setup(failing, { onCheckpoint: async () => { throw new Error("sessions unavailable"); } });
    await assert.rejects(runLoop(t2.deps, fresh), /sessions unavailable/);
    await t2.flush();
    assert.equal(failing.seen.length, 2, "the model call ran while the store was pending");
  });

  it("a resumed run puts inputs taken after its last answer back after it and goes on", () => {
    const runId = "run-resume-mailbox";
    const rec = (id: string, message: LlmMessage, turn?: number): TranscriptRecord => ({ id, ts: 1, runId, kind: "message", message, ...(turn ? { meta: { turn } } : {}) });
    const mine: TranscriptRecord[] = [
      rec(`${runId}:in:0`, { role: "user", content: [{ type: "text", text: "hi" }] }),
      rec(`${runId}:a:1`, answer("first answer"), 1),
      ...mailboxInputRecords(runId, 1, [input("ctl-x", "followup", "more please")]),
    ];
    const state = resumeState(runId, [], mine);
    assert.equal(state.finished, undefined, "an answer followed by a follow-up is not the end");
    assert.equal(state.turn, 1);
    assert.equal(userText(state.after[0]), "more please");
    assert.equal(state.context.at(-1)?.role, "assistant");

    // steering taken during a tool turn: the results stay with their calls, the input after them
    const withTools: TranscriptRecord[] = [
      rec(`${runId}:in:0`, { role: "user", content: [{ type: "text", text: "hi" }] }),
      rec(`${runId}:a:1`, calls({ id: "k1", name: "note" }, { id: "k2", name: "note" }), 1),
      rec(`${runId}:t:k1`, { role: "tool_result", toolCallId: "k1", toolName: "note", isError: false, content: [{ type: "text", text: "ok" }] }),
      rec(`${runId}:t:k2`, { role: "tool_result", toolCallId: "k2", toolName: "note", isError: true, content: [{ type: "text", text: SKIPPED_TEXT }] }),
      ...mailboxInputRecords(runId, 1, [input("ctl-y", "steer", "change of plan")]),
    ];
    const pending = resumeState(runId, [], withTools);
    assert.deepEqual([...pending.pending!.results.keys()], ["k1", "k2"]);
    assert.equal(userText(pending.after[0]), "change of plan");
    assert.ok(!pending.context.some((m) => userText(m) === "change of plan"), "not put before the pending call");
  });

});

describe("steering over the bus (agent-runner process)", () => {
  let nats: TestNats;
  let fake: FakeOpenAIServer;
  let sessions: ActorProcess | undefined;
  let runner: ActorProcess | undefined;
  let tools: NatsConnection;
  let client: NatsConnection;
  const executed: string[] = [];

  before(async () => {
    nats = await TestNats.start();
    fake = await FakeOpenAIServer.start();
    tools = await startToolResponder(nats, [{
      definition: NOTE,
      run: async (req) => {
        executed.push(req.toolCallId);
        await new Promise((r) => setTimeout(r, 400));
        return textResult(req, "noted", 400);
      },
    }]);
    sessions = await startActorProcess("sessions", nats);
    runner = await startActorProcess("agent-runner", nats, { LURKBOT_MODEL: "openai/test-model", OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test-steering-0123456789" });
    client = await nats.connect("router");
  });
  after(async () => {
    await client?.close();
    await tools?.close();
    await Promise.all([runner?.stop(), sessions?.stop()]);
    await fake?.close();
    await nats?.stop();
  });

  it("the runner holding the run accepts a steer request, skips the rest of the turn and answers the new message", async () => {
    fake.enqueue(
      { kind: "tool_calls", calls: [{ id: "n1", name: "note", arguments: {} }, { id: "n2", name: "note", arguments: {} }] },
      { kind: "text", text: "steered answer" },
    );
    const runId = `run-bus-steer-${Date.now().toString(36)}`;
    const sessionKey = "agent:main:cli:dm:steer";
    const events: RunEvent[] = [];
    const eventsNc = await nats.connect("admin");
    eventsNc.subscribe(S.runEvents(runId), { callback: (_e, msg) => void events.push(runEventSchema.parse(msg.json())) });
    const replies: Array<{ text: string; replyTo: string[] }> = [];
    eventsNc.subscribe(S.outbound("cli", "steer-conv"), { callback: (_e, msg) => void replies.push(msg.json()) });
    await eventsNc.flush();
    const js = jetstream(client);
    await js.publish(S.runRequest("main"), JSON.stringify({
      type: "lurk.run.request.v1", id: `req-${runId}`, ts: Date.now(), runId, sessionKey, agentId: "main", sessionType: "dm",
      trigger: "message", inputs: [{ kind: "user", text: "note twice", attachments: [], sourceId: "m-first" }], deliver: true, options: {},
      origin: { channel: "cli", conversation: "steer-conv", messageIds: ["m-first"] },
    }), { msgID: runId });
    await waitFor(() => executed.includes("n1"), 15_000, "first tool call running");
    const control = (id: string) => JSON.stringify({ type: "lurk.run.control.v1", id, ts: Date.now(), runId, action: "steer", input: { kind: "user", text: "actually, stop noting", attachments: [], sourceId: "m-steered" } });
    const reply = runControlReplySchema.parse((await client.request(S.runControl(runId), control("ctl-steer-1"), { timeout: 5_000 })).json());
    assert.deepEqual(reply, { runId, action: "steer", accepted: true });
    const done = await waitFor(() => events.find((e) => e.event.kind === "done"), 15_000, "done");
    assert.ok(done.event.kind === "done" && done.event.text === "steered answer");
    assert.ok(!executed.includes("n2"), "the second call was skipped");
    const delivered = await waitFor(() => replies.find((r) => r.text === "steered answer"), 10_000, "the reply");
    assert.deepEqual(delivered.replyTo, ["m-first", "m-steered"], "the reply answers the steered message too");
    const second = fake.requests[1]!.body.messages;
    assert.equal(messageText(second.at(-1)), "actually, stop noting");
    // the steering message is in the session's transcript, after the tool results
    const bus = new BusClient(client);
    const history = await bus.call("sessions", "history", { sessionKey, limit: 50 });
    const ids = history.records.map((r) => r.id);
    assert.ok(ids.indexOf(`${runId}:u:ctl-steer-1`) > ids.indexOf(`${runId}:t:n2`));
    // the run is over: nobody answers a control for it any more
    await assert.rejects(client.request(S.runControl(runId), control("ctl-steer-2"), { timeout: 500 }));
    await eventsNc.close();
  });
});
