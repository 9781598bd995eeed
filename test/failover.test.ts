/**
 * Auth profiles and failover (services/agent-runner/{auth-profiles,failover,llm-call}.ts):
 * the cooldown formula on a controllable clock, LRU pick and session pinning, the LMDB state
 * surviving a reopen; then over a real nats-server with the sessions and agent-runner actors
 * as child processes: a primary whose two keys answer 429 hands the run over to the fallback
 * model with its full history (asserted on what the fallback's fake server received), an auth
 * failure on one key moves to the next key, and the state survives an agent-runner restart.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  runEventSchema, subjects, type RunEvent, type RunRequest, type ToolDefinition,
} from "../shared/contract/index.js";
import { parseConfig } from "../shared/runtime/config.js";
import { createLogger } from "../shared/runtime/logger.js";
import { AuthStateStore, cooldownMs, disableMs } from "../services/agent-runner/auth-profiles.js";
import { ModelChain } from "../services/agent-runner/failover.js";
import { ProviderRegistry } from "../services/agent-runner/providers/registry.js";
import { blocksOf, FakeAnthropicServer, textOf, type WireBlock } from "./fakes/anthropic-server.js";
import { FakeOpenAIServer, messageText } from "./fakes/openai-server.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { READ_STAND_IN, startToolResponder } from "./harness/tool-responder.js";

const S = subjects();
const MIN = 60_000;
const HOUR = 3_600_000;
const log = createLogger("failover-test", "silent");

describe("auth profile state", () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), "lurk-auth-state-"));
    dirs.push(d);
    return d;
  };
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("cools down min(1 h, 60 s × 5^(n-1)) after the n-th failure; billing/auth disable min(24 h, 5 h × 2^(n-1))", () => {
    assert.deepEqual([1, 2, 3, 4, 5, 10].map(cooldownMs), [MIN, 5 * MIN, 25 * MIN, HOUR, HOUR, HOUR]);
    assert.deepEqual([1, 2, 3, 4].map(disableMs), [5 * HOUR, 10 * HOUR, 20 * HOUR, 24 * HOUR]);
  });

  it("puts a profile on cooldown for one model, counts reasons, and a success clears it (controllable clock)", async () => {
    let now = 1_000_000;
    const store = new AuthStateStore(tempDir(), () => now);
    const a = { provider: "openai", id: "a", fingerprint: "fp-a" };
    const expectCooling = (model: string, until: number) => assert.deepEqual(store.availability(a, model), { usable: false, until, reason: store.cooldown(a, model)!.lastReason, disabled: false });
    const t0 = now;
    await store.markFailure(a, "gpt-4o", "rate_limit");
    expectCooling("gpt-4o", t0 + MIN);
    assert.deepEqual(store.availability(a, "gpt-4o-mini"), { usable: true }, "another model of the same key is not affected");
    now = t0 + MIN - 1;
    assert.equal(store.availability(a, "gpt-4o").usable, false);
    now = t0 + MIN;
    assert.equal(store.availability(a, "gpt-4o").usable, true, "usable again when the cooldown ends");
    // consecutive failures grow the cooldown: 5 min, 25 min, 1 h, 1 h
    for (const [reason, expected] of [["overloaded", 5 * MIN], ["timeout", 25 * MIN], ["rate_limit", HOUR], ["other", HOUR]] as const) {
      const at = now;
      const { cooldown } = await store.markFailure(a, "gpt-4o", reason);
      assert.equal(cooldown.cooldownUntil - at, expected, `${reason}: cooldown ${expected}`);
      now += 1;
    }
    assert.deepEqual(store.cooldown(a, "gpt-4o")!.failureCounts, { rate_limit: 2, overloaded: 1, timeout: 1, other: 1 });
    assert.equal(store.cooldown(a, "gpt-4o")!.errorCount, 5);
    await store.markSuccess(a, "gpt-4o");
    assert.equal(store.cooldown(a, "gpt-4o"), undefined);
    assert.deepEqual(store.availability(a, "gpt-4o"), { usable: true });
    const { cooldown } = await store.markFailure(a, "gpt-4o", "rate_limit");
    assert.equal(cooldown.cooldownUntil - now, MIN, "the streak starts over after a success");
    await store.close();
  });

  it("disables a key for every model after billing/auth failures; a replaced key starts clean", async () => {
    let now = 5_000_000;
    const store = new AuthStateStore(tempDir(), () => now);
    const a = { provider: "anthropic", id: "a", fingerprint: "fp-old" };
    await store.markFailure(a, "claude-sonnet-4-6", "billing");
    const availability = store.availability(a, "claude-haiku-4-5");
    assert.deepEqual(availability, { usable: false, until: now + 5 * HOUR, reason: "billing", disabled: true }, "every model of the key");
    now += 5 * HOUR;
    const second = await store.markFailure(a, "claude-sonnet-4-6", "auth");
    assert.equal(second.profile.disabledUntil! - now, 10 * HOUR, "the second in a row: 10 h");
    assert.deepEqual(store.availability({ ...a, fingerprint: "fp-new" }, "claude-sonnet-4-6"), { usable: true }, "a new key is not held to the old one's failures");
    await store.markSuccess(a, "claude-sonnet-4-6");
    assert.deepEqual(store.availability(a, "claude-sonnet-4-6"), { usable: true });
    assert.equal(store.profile(a)!.disableCount, 0);
    await store.close();
  });

  it("picks the least recently used profile, pins it to the session, moves the pin when it cools down; the state survives a reopen", async () => {
    const dir = tempDir();
    let now = 10_000_000;
    let store = new AuthStateStore(dir, () => now);
    const config = parseConfig({
      model: "openai/gpt-4o",
      providers: { openai: { baseUrl: "http://127.0.0.1:9/v1", profiles: [{ id: "b", apiKey: "sk-profile-b-000" }, { id: "c", apiKey: "sk-profile-c-000" }] } },
      agents: [{ id: "main", default: true, fallbacks: ["anthropic/claude-haiku-4-5"] }],
    }, { OPENAI_API_KEY: "sk-profile-a-000", ANTHROPIC_API_KEY: "sk-ant-0000000000" }, "/tmp/lurk-failover-unit");
    const registry = new ProviderRegistry(config);
    const chainFor = (sessionKey: string) => new ModelChain({ registry, config, refs: ["openai/gpt-4o", "anthropic/claude-haiku-4-5"], sessionKey, store, log });
    const pick = async (sessionKey: string, tried = new Set<string>()) => {
      now += 1;
      const chain = chainFor(sessionKey);
      const c = chain.next(tried)!;
      await chain.use(c);
      return `${c.ref}#${c.profile.id}`;
    };
    assert.equal(await pick("s1"), "openai/gpt-4o#default", "all unused: config order");
    assert.equal(await pick("s2"), "openai/gpt-4o#b");
    assert.equal(await pick("s3"), "openai/gpt-4o#c");
    assert.equal(await pick("s4"), "openai/gpt-4o#default", "the least recently used again");
    assert.equal(await pick("s2"), "openai/gpt-4o#b", "a session keeps its pinned profile");
    assert.equal(await pick("s2"), "openai/gpt-4o#b");
    // b cools down for gpt-4o: s2 moves to the least recently used usable one (c) and is pinned there
    const b = registry.profiles("openai").find((p) => p.id === "b")!;
    await store.markFailure(b, "gpt-4o", "rate_limit");
    assert.equal(await pick("s2"), "openai/gpt-4o#c");
    assert.equal(store.pinned("s2", "openai"), "c");
    // every openai key cooling: the fallback model
    for (const p of registry.profiles("openai")) await store.markFailure(p, "gpt-4o", "overloaded");
    assert.equal(await pick("s5"), "anthropic/claude-haiku-4-5#default");
    const probe = chainFor("s6").probe(new Set());
    assert.equal(probe?.ref, "anthropic/claude-haiku-4-5", "probe: the candidate that is free first");

    // reopen: cooldowns, pins and the LRU order are still there
    const before = { pin: store.pinned("s2", "openai"), cooldown: store.cooldown(b, "gpt-4o"), lastUsed: store.lastUsed(b) };
    await store.close();
    store = new AuthStateStore(dir, () => now);
    assert.deepEqual({ pin: store.pinned("s2", "openai"), cooldown: store.cooldown(b, "gpt-4o"), lastUsed: store.lastUsed(b) }, before);
    assert.equal(store.availability(b, "gpt-4o").usable, false);
    assert.equal(await pick("s7"), "anthropic/claude-haiku-4-5#default");
    now += HOUR;
    assert.equal(await pick("s8"), "openai/gpt-4o#b", "after the cooldowns the primary again, on its least recently used key");
    await store.close();
  });
  it("a run keeps the profile its last call succeeded with; a failure there sends it back to the store's choice", async () => {
    const now = 70_000_000;
    const store = new AuthStateStore(tempDir(), () => now);
    const config = parseConfig({
      model: "openai/gpt-4o",
      providers: { openai: { baseUrl: "http://127.0.0.1:9/v1", profiles: [{ id: "b", apiKey: "sk-profile-b-000" }] } },
    }, { OPENAI_API_KEY: "sk-profile-a-000" }, "/tmp/lurk-failover-unit");
    const registry = new ProviderRegistry(config);
    const chain = new ModelChain({ registry, config, refs: ["openai/gpt-4o"], sessionKey: "s-sticky", store, log });
    const first = chain.next(new Set())!;
    await chain.use(first);
    await chain.success(first);
    // another run puts the profile on cooldown: this run's next call still takes it, without a read
    await store.markFailure(first.profile, "gpt-4o", "rate_limit");
    assert.equal(chain.next(new Set()), first);
    assert.notEqual(new ModelChain({ registry, config, refs: ["openai/gpt-4o"], sessionKey: "s-other", store, log }).next(new Set())?.profile.id, first.profile.id, "a new run sees the cooldown");
    // its own call fails there: back to the store, which knows the cooldown
    await chain.failure(first, "rate_limit");
    const second = chain.next(new Set())!;
    assert.notEqual(second.profile.id, first.profile.id);
    await store.close();
  });
  it("a success through the chain clears the streak of a probed (cooling) profile", async () => {
    let now = 50_000_000;
    const store = new AuthStateStore(tempDir(), () => now);
    const config = parseConfig({ model: "openai/gpt-4o" }, { OPENAI_API_KEY: "sk-single-key-0000" }, "/tmp/lurk-failover-unit");
    const registry = new ProviderRegistry(config);
    const only = registry.profiles("openai")[0]!;
    await store.markFailure(only, "gpt-4o", "rate_limit");
    const chain = new ModelChain({ registry, config, refs: ["openai/gpt-4o"], sessionKey: "s-probe", store, log });
    assert.equal(chain.next(new Set()), undefined, "the only key is cooling down");
    const probe = chain.probe(new Set())!;
    assert.equal(probe.profile.id, "default", "a single-key setup is probed, not locked out");
    await chain.use(probe);
    await chain.success(probe);
    assert.equal(store.cooldown(only, "gpt-4o"), undefined, "the success cleared the cooldown");
    assert.deepEqual(store.availability(only, "gpt-4o"), { usable: true });
    await store.close();
  });
});

/** a tool the (stand-in) tools actor lists for openai/gpt-4.1-nano only */
const NANO_ONLY_TOOL: ToolDefinition = {
  name: "nano_only", description: "A tool for one model.", parameters: { type: "object", properties: {} },
  actor: "tools", sideEffects: false, parallelSafe: true, groups: [], needsApproval: false,
};

const READ_TOOL: ToolDefinition = {
  name: "read",
  description: "Read a text file from the workspace.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  actor: "tools", sideEffects: false, parallelSafe: true, groups: ["fs"], needsApproval: false,
};

describe("failover over the bus", () => {
  let nats: TestNats;
  let openai: FakeOpenAIServer;
  let anthropic: FakeAnthropicServer;
  let sessions: ActorProcess;
  let runner: ActorProcess | undefined;
  let router: NatsConnection;
  let admin: NatsConnection;
  let toolsNc: NatsConnection;
  let js: JetStreamClient;
  let counter = 0;
  /** the model each `read` call ran under (the tool policy's model layer) */
  const readCalls: Array<{ model: string | undefined; runId: string }> = [];
  const KEY_A = "sk-failover-key-a-0123456789";
  const KEY_B = "sk-failover-key-b-0123456789";

  before(async () => {
    nats = await TestNats.start();
    [openai, anthropic] = await Promise.all([FakeOpenAIServer.start(), FakeAnthropicServer.start()]);
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({
      model: "openai/gpt-4o",
      providers: {
        openai: { baseUrl: openai.baseUrl, apiKey: KEY_A, profiles: [{ id: "b", apiKey: KEY_B }] },
        anthropic: { baseUrl: anthropic.url, apiKey: "sk-ant-failover-0123456789" },
      },
      agents: [{ id: "main", default: true, fallbacks: ["sonnet"] }, { id: "switcher", model: "openai/gpt-4.1-nano", fallbacks: ["sonnet"] }],
      log: { level: "info" },
    }));
    toolsNc = await startToolResponder(nats, [
      { definition: READ_TOOL, run: (req) => (readCalls.push({ model: req.model, runId: req.runId }), READ_STAND_IN.run(req)) },
      { definition: NANO_ONLY_TOOL, models: ["openai/gpt-4.1-nano"], run: (req) => READ_STAND_IN.run(req) },
    ]);
    sessions = await startActorProcess("sessions", nats);
    runner = await startActorProcess("agent-runner", nats);
    router = await nats.connect("router");
    admin = await nats.connect("admin");
    js = jetstream(router);
  });
  after(async () => {
    await Promise.all([router?.close(), admin?.close(), toolsNc?.close()]);
    await Promise.all([runner?.stop(), sessions?.stop()]);
    await Promise.all([openai?.close(), anthropic?.close()]);
    await nats?.stop();
  });

  async function run(text: string, opts: { sessionKey?: string; agentId?: string; options?: RunRequest["options"] } = {}) {
    const n = ++counter;
    const marker = `[f${n}]`;
    const req = {
      type: "lurk.run.request.v1", id: `req-f${n}-${Date.now()}`, ts: Date.now(), runId: `run-failover-${n}-${Date.now().toString(36)}`,
      sessionKey: opts.sessionKey ?? `agent:main:cli:dm:failover${n}`, agentId: opts.agentId ?? "main", sessionType: "dm", trigger: "message",
      inputs: [{ kind: "user", text: `${text} ${marker}`, attachments: [] }],
      origin: { channel: "cli", conversation: `fconv-${n}`, messageIds: [`fmsg-${n}`] }, deliver: true, options: opts.options ?? {},
    } as RunRequest;
    const events: RunEvent[] = [];
    const sub = admin.subscribe(S.runEvents(req.runId), { callback: (_e, msg) => void events.push(runEventSchema.parse(msg.json())) });
    await admin.flush();
    await js.publish(S.runRequest(req.agentId), JSON.stringify(req), { msgID: req.runId });
    const terminal = await waitFor(() => events.find((e) => e.event.kind === "done" || e.event.kind === "error"), 20_000, `terminal event of ${req.runId}`);
    await new Promise((r) => setTimeout(r, 50));
    sub.unsubscribe();
    const mine = (texts: string[]) => texts.some((t) => t.includes(marker));
    return {
      req, events, terminal: terminal.event,
      openai: () => openai.requests.filter((r) => mine(r.body.messages.map((m) => messageText(m)))),
      anthropic: () => anthropic.requests.filter((r) => mine(r.body.messages.map((m) => textOf(blocksOf(m))))),
    };
  }
  const bearer = (r: { headers: Record<string, unknown> }) => String(r.headers.authorization ?? "").replace("Bearer ", "");

  it("moves to the next key and then the fallback model on 429s; the fallback gets the whole history", async () => {
    openai.enqueue(
      { kind: "tool_calls", calls: [{ id: "call_first_turn", name: "read", arguments: { path: "notes.txt" } }] },
      { kind: "error", status: 429 },
      { kind: "error", status: 429 },
    );
    const sessionKey = "agent:main:cli:dm:failover-429";
    const r = await run("read notes.txt", { sessionKey, options: { thinking: "high" } });
    assert.equal(r.terminal.kind, "done", JSON.stringify(r.terminal));
    assert.equal(r.terminal.kind === "done" && r.terminal.text, "tool said: contents of notes.txt");
    const toOpenAI = r.openai();
    assert.deepEqual(toOpenAI.map(bearer), [KEY_A, KEY_A, KEY_B], "turn 1 on key a; turn 2: a (429), then b (429)");
    assert.ok(toOpenAI.every((q) => q.body.reasoning_effort === undefined), "gpt-4o gets no reasoning_effort");
    assert.equal(toOpenAI[0]!.body.max_tokens, 16_384, "the registry's max output");
    const switches = r.events.filter((e) => e.event.kind === "provider_switch").map((e) => e.event);
    assert.deepEqual(switches, [{ kind: "provider_switch", from: "openai/gpt-4o", to: "anthropic/claude-sonnet-4-6", reason: "rate_limit" }]);

    const [fallback, ...more] = r.anthropic();
    assert.equal(more.length, 0);
    assert.equal(fallback!.body.model, "claude-sonnet-4-6");
    assert.equal(fallback!.body.max_tokens, 64_000);
    assert.equal(fallback!.body.thinking, undefined, "no thinking while answering another provider's tool call");
    const wire = fallback!.body.messages.map((m) => [m.role, blocksOf(m).map((b: WireBlock) => b.type).join(",")]);
    assert.deepEqual(wire, [["user", "text"], ["assistant", "tool_use"], ["user", "tool_result"]], "the full history");
    const toolUse = blocksOf(fallback!.body.messages[1]).find((b) => b.type === "tool_use")!;
    assert.deepEqual([toolUse.id, toolUse.name, toolUse.input], ["call_first_turn", "read", { path: "notes.txt" }]);
    const result = blocksOf(fallback!.body.messages[2]).find((b) => b.type === "tool_result")!;
    assert.equal(result.tool_use_id, "call_first_turn");
    assert.equal(textOf(result.content), "contents of notes.txt");
    assert.match(textOf(blocksOf(fallback!.body.messages[0])), /read notes\.txt/);

    const usage = r.events.filter((e) => e.event.kind === "usage").map((e) => e.event as Extract<RunEvent["event"], { kind: "usage" }>);
    assert.deepEqual(usage.map((u) => [u.provider, u.model]), [["openai", "gpt-4o"], ["anthropic", "claude-sonnet-4-6"]]);
    assert.ok(usage.every((u) => (u.usage.costUsd ?? 0) > 0), "each usage report is priced");
    const done = r.terminal as Extract<RunEvent["event"], { kind: "done" }>;
    assert.ok(Math.abs(done.usage.costUsd! - usage.reduce((s, u) => s + u.usage.costUsd!, 0)) < 1e-12, "the run's cost is the sum");

    // the next message of the session: both keys still cool down, so straight to the fallback, now with thinking
    const next = await run("hello again", { sessionKey, options: { thinking: "high" } });
    assert.equal(next.terminal.kind, "done");
    assert.equal(next.openai().length, 0, "the cooling keys are not asked");
    assert.deepEqual(next.events.filter((e) => e.event.kind === "provider_switch").map((e) => e.event), [
      { kind: "provider_switch", from: "openai/gpt-4o", to: "anthropic/claude-sonnet-4-6", reason: "cooldown" },
    ]);
    assert.deepEqual(next.anthropic()[0]!.body.thinking, { type: "enabled", budget_tokens: 24_576 });
  });

  it("a switch of model mid-run takes the new model's tool list and a prompt built for it, and its tool calls run under that model's policy", async () => {
    // agent "switcher": openai/gpt-4.1-nano (which alone lists nano_only), falling back to sonnet
    openai.enqueue({ kind: "error", status: 429 }, { kind: "error", status: 429 });
    const r = await run("read notes.txt", { agentId: "switcher", sessionKey: "agent:switcher:cli:dm:tool-switch" });
    assert.equal(r.terminal.kind, "done", JSON.stringify(r.terminal));
    const toOpenAI = r.openai();
    assert.equal(toOpenAI.length, 2, "both keys were tried");
    for (const q of toOpenAI) {
      assert.deepEqual(q.body.tools?.map((t) => t.function.name).sort(), ["nano_only", "read"]);
      assert.match(messageText(q.body.messages.find((m) => m.role === "system")), /^- nano_only: /m, "the primary's prompt lists its tools");
    }
    const toAnthropic = r.anthropic();
    assert.ok(toAnthropic.length >= 2, "the fallback made the tool call and answered");
    for (const q of toAnthropic) {
      assert.deepEqual(q.body.tools?.map((t) => t.name), ["read"], "the fallback's own tool list");
      const system = typeof q.body.system === "string" ? q.body.system : textOf(q.body.system ?? []);
      assert.ok(/^- read: /m.test(system) && !system.includes("nano_only"), "a system prompt built for the fallback");
    }
    assert.deepEqual(readCalls.filter((c) => c.runId === r.req.runId).map((c) => c.model), ["anthropic/claude-sonnet-4-6"]);
  });

  it("an auth failure on key a moves to key b for the same model; no model switch", async () => {
    openai.enqueue({ kind: "error", status: 401 });
    const r = await run("hi", { options: { model: "gpt-4o-mini" } });
    assert.equal(r.terminal.kind, "done", JSON.stringify(r.terminal));
    assert.match(r.terminal.kind === "done" ? r.terminal.text : "", /^echo: hi/);
    assert.deepEqual(r.openai().map(bearer), [KEY_A, KEY_B], "gpt-4o-mini is not cooling (cooldowns are per model)");
    assert.deepEqual(r.openai().map((q) => q.body.model), ["gpt-4o-mini", "gpt-4o-mini"]);
    assert.equal(r.events.filter((e) => e.event.kind === "provider_switch").length, 0);
    assert.equal(r.anthropic().length, 0);
  });

  it("keeps the disabled key and cooldowns across an agent-runner restart", async () => {
    await runner!.stop();
    runner = undefined;
    runner = await startActorProcess("agent-runner", nats);
    const r = await run("after restart", { options: { model: "gpt-4o-mini" } });
    assert.equal(r.terminal.kind, "done", JSON.stringify(r.terminal));
    assert.deepEqual(r.openai().map(bearer), [KEY_B], "key a is still disabled (auth failure), so a new session starts on b");
    assert.ok(!runner.output().includes(KEY_A) && !runner.output().includes(KEY_B), "keys never reach the logs");
  });
});
