/**
 * Temperature (run > agent > model entry > not sent; left out for models that refuse one, and by
 * Anthropic while thinking is on) through the three providers' real SDKs against the fake
 * servers; the MiniMax rows of the model registry; and a MiniMax model through the anthropic
 * provider with a base URL, end to end over the bus (unsigned thinking, a tool call, the
 * agent's and then the run's temperature); named provider instances (`providers.minimax` with
 * `api: "anthropic"` beside `anthropic`), each with its endpoint, keys and cooldowns.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { outboundMessageSchema, STREAMS, subjects, type LlmMessage, type RunRequest, type ToolDefinition } from "../shared/contract/index.js";
import { parseConfig } from "../shared/runtime/config.js";
import { createLogger } from "../shared/runtime/logger.js";
import { lookupModel, resolveModelRef } from "../shared/runtime/models.js";
import { AuthStateStore } from "../services/agent-runner/auth-profiles.js";
import { ModelChain } from "../services/agent-runner/failover.js";
import { AnthropicProvider } from "../services/agent-runner/providers/anthropic.js";
import { OllamaProvider } from "../services/agent-runner/providers/ollama.js";
import { OpenAIProvider } from "../services/agent-runner/providers/openai.js";
import { ProviderRegistry } from "../services/agent-runner/providers/registry.js";
import type { Provider, ProviderRequest } from "../services/agent-runner/providers/types.js";
import { blocksOf, FakeAnthropicServer, textOf } from "./fakes/anthropic-server.js";
import { FakeOllamaServer } from "./fakes/ollama-server.js";
import { FakeOpenAIServer } from "./fakes/openai-server.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { startToolResponder, textResult } from "./harness/tool-responder.js";

const log = createLogger("temperature-test", "silent");
const user = (text: string): LlmMessage => ({ role: "user", content: [{ type: "text", text }] });
const READ: ToolDefinition = {
  name: "read", description: "Read a file.", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  actor: "tools", sideEffects: false, parallelSafe: true, groups: [], needsApproval: false,
};

async function drain(provider: Provider, req: Partial<ProviderRequest>): Promise<void> {
  const full: ProviderRequest = { model: "m", system: "sys", messages: [user("hi")], tools: [], signal: new AbortController().signal, ...req };
  for await (const ev of provider.stream(full)) if (ev.type === "error") throw ev.error;
}

describe("temperature: precedence and refusing models", () => {
  const config = parseConfig({
    model: "openai/gpt-4o",
    models: { entries: { "openai/gpt-4o": { temperature: 0.9 }, "openai/o3": { temperature: 0.5 }, "openai/my-reasoner": { temperature: 0.5, fixedTemperature: true } } },
  }, { OPENAI_API_KEY: "sk-temp-0000" }, "/tmp/lurk-temperature-unit");
  const registry = new ProviderRegistry(config);
  const options = (ref: string, temperature?: number) => {
    const chain = new ModelChain({ registry, config, refs: [ref], sessionKey: "s-temp", log, ...(temperature !== undefined ? { temperature } : {}) });
    return chain.requestOptions(chain.next(new Set())!);
  };

  it("the run's or agent's temperature wins over the model's default; unset anywhere: none is sent", () => {
    assert.equal(options("openai/gpt-4o").temperature, 0.9, "the model entry's default");
    assert.equal(options("openai/gpt-4o", 0.2).temperature, 0.2, "the agent's / run's wins");
    assert.equal(options("openai/gpt-4o", 0).temperature, 0, "0 is a temperature");
    assert.ok(!("temperature" in options("openai/gpt-4o-mini")), "nothing configured: not sent");
  });

  it("is left out for models that refuse one (OpenAI reasoning models, fixedTemperature)", () => {
    assert.ok(!("temperature" in options("openai/o3")), "o3's entry default is not sent");
    assert.ok(!("temperature" in options("openai/gpt-5-mini", 0.3)));
    assert.ok(!("temperature" in options("openai/my-reasoner", 0.3)));
    assert.equal(lookupModel("openai/gpt-5", config).fixedTemperature, true);
    assert.equal(lookupModel("openai/gpt-4.1", config).fixedTemperature, undefined);
  });

  it("reaches the request bodies of all three SDKs (Anthropic: not while thinking)", async () => {
    const openai = await FakeOpenAIServer.start();
    const ollama = await FakeOllamaServer.start();
    const anthropic = await FakeAnthropicServer.start();
    try {
      await drain(new OpenAIProvider({ apiKey: "k", baseUrl: openai.baseUrl, timeoutMs: 5_000 }), { temperature: 0.3 });
      await drain(new OpenAIProvider({ apiKey: "k", baseUrl: openai.baseUrl, timeoutMs: 5_000 }), {});
      assert.equal(openai.requests[0]!.body.temperature, 0.3);
      assert.ok(!("temperature" in openai.requests[1]!.body));
      await drain(new OllamaProvider({ host: ollama.url, timeoutMs: 5_000 }), { temperature: 0.6, maxTokens: 100 });
      assert.deepEqual(ollama.requests[0]!.body.options, { num_predict: 100, temperature: 0.6 });
      const claude = new AnthropicProvider({ apiKey: "k", baseUrl: anthropic.baseUrl, timeoutMs: 5_000 });
      await drain(claude, { model: "claude-sonnet-4-6", temperature: 0.7 });
      await drain(claude, { model: "claude-sonnet-4-6", temperature: 0.7, thinking: "low", maxTokens: 64_000 });
      assert.equal(anthropic.requests[0]!.body.temperature, 0.7);
      assert.ok(anthropic.requests[1]!.body.thinking, "thinking is on");
      assert.ok(!("temperature" in anthropic.requests[1]!.body), "the API refuses a temperature with thinking");
    } finally {
      await Promise.all([openai.close(), ollama.close(), anthropic.close()]);
    }
  });
});

describe("temperature: each provider API's range", () => {
  it("1.5 reaches Anthropic (and an Anthropic-API instance) as 1, OpenAI as 1.5 and Ollama as given; the chain logs the clamp once", async () => {
    const openai = await FakeOpenAIServer.start();
    const ollama = await FakeOllamaServer.start();
    const anthropic = await FakeAnthropicServer.start();
    try {
      const config = parseConfig({
        model: "anthropic/claude-sonnet-4-6",
        providers: {
          anthropic: { apiKey: "sk-ant-temp-0000", baseUrl: anthropic.baseUrl },
          openai: { apiKey: "sk-temp-0000", baseUrl: openai.baseUrl },
          ollama: { host: ollama.url },
          minimax: { api: "anthropic", baseUrl: anthropic.baseUrl, apiKey: "mm-temp-0000" },
        },
      }, {}, "/tmp/lurk-temperature-range");
      const registry = new ProviderRegistry(config);
      const lines: Array<Record<string, unknown>> = [];
      const debugLog = createLogger("temperature-range", "debug", { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) } as unknown as NodeJS.WritableStream);
      const sent = async (ref: string) => {
        const chain = new ModelChain({ registry, config, refs: [ref], sessionKey: "s-range", log: debugLog, temperature: 1.5 });
        const c = chain.next(new Set())!;
        const opts = chain.requestOptions(c);
        assert.deepEqual(chain.requestOptions(c), opts, "the same each call");
        await drain(c.provider, { model: c.model, ...opts });
        return opts.temperature;
      };
      assert.equal(await sent("anthropic/claude-sonnet-4-6"), 1);
      assert.equal(await sent("minimax/MiniMax-M2.5"), 1, "a named instance of the Anthropic API");
      assert.equal(await sent("openai/gpt-4o"), 1.5);
      assert.equal(await sent("ollama/llama3"), 1.5);
      assert.deepEqual(anthropic.requests.map((r) => r.body.temperature), [1, 1]);
      assert.equal(openai.requests[0]!.body.temperature, 1.5);
      assert.equal(ollama.requests[0]!.body.options?.temperature, 1.5);
      const clamps = lines.filter((l) => l.msg === "temperature outside the provider API's range; clamped");
      assert.deepEqual(clamps.map((l) => [l.model, l.temperature, l.sent]), [["anthropic/claude-sonnet-4-6", 1.5, 1], ["minimax/MiniMax-M2.5", 1.5, 1]], "logged once per model, only where clamped");
      // the providers themselves never send what their API refuses
      await drain(new AnthropicProvider({ apiKey: "sk-ant-temp-0000", baseUrl: anthropic.baseUrl, timeoutMs: 5_000 }), { model: "claude-sonnet-4-6", temperature: 1.7 });
      await drain(new OpenAIProvider({ apiKey: "sk-temp-0000", baseUrl: openai.baseUrl, timeoutMs: 5_000 }), { temperature: 2.5 });
      assert.equal(anthropic.requests.at(-1)!.body.temperature, 1);
      assert.equal(openai.requests.at(-1)!.body.temperature, 2);
    } finally {
      await Promise.all([openai.close(), ollama.close(), anthropic.close()]);
    }
  });
});

describe("MiniMax in the model registry", () => {
  const config = parseConfig({}, {}, "/tmp/lurk-minimax-unit");

  it("knows MiniMax-M2.5, -M2.5-highspeed, -M2.1 and -M2 under the provider that serves them", () => {
    const m25 = lookupModel("anthropic/MiniMax-M2.5", config);
    assert.deepEqual([m25.known, m25.contextWindow, m25.maxOutput, m25.capabilities, m25.cost?.inputPerMTok, m25.cost?.outputPerMTok],
      [true, 204_800, 32_768, { tools: true, vision: false, thinking: true, pdf: false }, 0.3, 1.2]);
    assert.equal(m25.reasoningTags, "auto", "the Anthropic-compatible API returns thinking blocks");
    assert.equal(lookupModel("anthropic/MiniMax-M2.5-highspeed", config).cost?.outputPerMTok, 2.4);
    const viaOpenAI = lookupModel("openai/MiniMax-M2.1", config);
    assert.deepEqual([viaOpenAI.known, viaOpenAI.reasoningTags, viaOpenAI.reasoningReplay], [true, "on", true], "the OpenAI-compatible API inlines <think>");
    assert.equal(lookupModel("openai/MiniMax-M2", config).cost?.cacheWritePerMTok, 0.375);
    assert.equal(lookupModel("anthropic/MiniMax-M2.1-highspeed", config).contextWindow, 204_800, "a suffixed name takes the longest row");
    assert.equal(resolveModelRef("MiniMax-M2.5", config, "anthropic"), "anthropic/MiniMax-M2.5", "a bare name keeps the configured provider");
  });
});

describe("named provider instances", () => {
  let minimax: FakeAnthropicServer;
  let claude: FakeAnthropicServer;
  before(async () => {
    [minimax, claude] = await Promise.all([FakeAnthropicServer.start({ apiKey: "mm-key-0000000000" }), FakeAnthropicServer.start({ apiKey: "sk-ant-key-000000" })]);
  });
  after(async () => Promise.all([minimax?.close(), claude?.close()]));
  const home = mkdtempSync(join(tmpdir(), "lurk-instances-"));
  const configFor = () => parseConfig({
    model: "minimax/MiniMax-M2.5",
    providers: {
      anthropic: { baseUrl: claude.baseUrl, apiKey: "sk-ant-key-000000" },
      minimax: { api: "anthropic", baseUrl: minimax.baseUrl, apiKey: "mm-key-0000000000", profiles: [{ id: "spare", apiKey: "mm-spare-000000" }] },
    },
    agents: [{ id: "main", default: true, fallbacks: ["anthropic/claude-sonnet-4-6"] }],
  }, {}, home);

  it("validates instance names and APIs", () => {
    assert.throws(() => parseConfig({ providers: { "Mini_Max": { api: "anthropic" } } }, {}, home), /providers\.Mini_Max.*lowercase/);
    assert.throws(() => parseConfig({ providers: { minimax: { api: "gemini" } } }, {}, home), /providers\.minimax\.api/);
    const registry = new ProviderRegistry(configFor());
    assert.throws(() => registry.parse("nope/x"), /unknown model provider "nope".*minimax/);
  });

  it("each instance has its endpoint, keys and name; models are looked up by the instance's API", async () => {
    const config = configFor();
    const registry = new ProviderRegistry(config);
    assert.deepEqual(registry.profiles("minimax").map((p) => [p.provider, p.id, p.baseUrl]), [["minimax", "default", minimax.baseUrl], ["minimax", "spare", minimax.baseUrl]]);
    const mm = registry.resolve("minimax/MiniMax-M2.5");
    const an = registry.resolve("anthropic/claude-sonnet-4-6");
    assert.deepEqual([mm.provider.name, mm.model, an.provider.name], ["minimax", "MiniMax-M2.5", "anthropic"]);
    let done: unknown;
    for await (const ev of mm.provider.stream({ model: mm.model, system: "s", messages: [user("hi")], tools: [], signal: new AbortController().signal })) if (ev.type === "done") done = ev.message;
    await drain(an.provider, { model: an.model });
    assert.equal((done as { provider: string }).provider, "minimax", "the transcript names the instance (thinking goes back only to it)");
    assert.deepEqual([minimax.requests.length, minimax.requests[0]?.body.model, claude.requests.length], [1, "MiniMax-M2.5", 1]);
    const info = lookupModel("minimax/MiniMax-M2.5", config);
    assert.deepEqual([info.known, info.contextWindow, info.reasoningTags], [true, 204_800, "auto"], "the MiniMax row, as served by the Anthropic API");
    const azure = parseConfig({ providers: { azure: { api: "openai", baseUrl: "http://127.0.0.1:9/v1", apiKey: "k-azure-000" } } }, {}, home);
    assert.equal(lookupModel("azure/gpt-4o", azure).contextWindow, 128_000, "another model of an instance takes its API's row");
  });

  it("cooldowns are per instance: a rate-limited MiniMax key rotates within minimax, then fails over to anthropic", async () => {
    const config = configFor();
    const registry = new ProviderRegistry(config);
    const store = new AuthStateStore(mkdtempSync(join(tmpdir(), "lurk-instances-auth-")));
    try {
      const chain = new ModelChain({ registry, config, refs: ["minimax/MiniMax-M2.5", ...config.agents[0]!.fallbacks], sessionKey: "s-inst", store, log });
      const tried = new Set<string>();
      const first = chain.next(tried)!;
      assert.equal(first.ref, "minimax/MiniMax-M2.5");
      await chain.failure(first, "rate_limit");
      tried.add(first.key);
      const second = chain.next(tried)!;
      assert.deepEqual([second.ref, second.profile.provider], ["minimax/MiniMax-M2.5", "minimax"]);
      assert.notEqual(second.profile.id, first.profile.id, "the instance's other profile");
      await chain.failure(second, "rate_limit");
      tried.add(second.key);
      const third = chain.next(tried)!;
      assert.deepEqual([third.ref, third.profile.provider, third.profile.id], ["anthropic/claude-sonnet-4-6", "anthropic", "default"]);
      assert.equal(store.availability(third.profile, third.model).usable, true, "anthropic's key is untouched by minimax's cooldowns");
    } finally {
      await store.close();
    }
  });
});

describe("MiniMax through the anthropic provider end to end over the bus", () => {
  const S = subjects();
  const KEY = "mm-test-key-0123456789";
  let nats: TestNats;
  let fake: FakeAnthropicServer;
  let sessions: ActorProcess | undefined;
  let runner: ActorProcess | undefined;
  let router: NatsConnection;
  let admin: NatsConnection;
  let tools: NatsConnection;
  before(async () => {
    nats = await TestNats.start();
    fake = await FakeAnthropicServer.start({ apiKey: KEY });
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({ agents: [{ id: "main", default: true, temperature: 0.4 }] }));
    tools = await startToolResponder(nats, [{ definition: READ, run: (req) => textResult(req, `contents of ${String(req.args.path)}`, 1) }]);
    const [s, r] = await Promise.allSettled([
      startActorProcess("sessions", nats),
      startActorProcess("agent-runner", nats, { LURKBOT_MODEL: "anthropic/MiniMax-M2.5", ANTHROPIC_BASE_URL: fake.baseUrl, ANTHROPIC_API_KEY: KEY }),
    ]);
    sessions = s.status === "fulfilled" ? s.value : undefined;
    runner = r.status === "fulfilled" ? r.value : undefined;
    if (!sessions || !runner) throw new Error(`an actor did not start: ${[s, r].map((x) => (x.status === "rejected" ? String(x.reason) : "")).join(" ")}`);
    router = await nats.connect("router");
    admin = await nats.connect("admin");
  });
  after(async () => {
    await Promise.all([router?.close(), admin?.close(), tools?.close()]);
    await Promise.all([runner?.stop(), sessions?.stop()]);
    await fake?.close();
    await nats?.stop();
  });
  beforeEach(() => fake.reset());

  async function run(conversation: string, text: string, options: RunRequest["options"]): Promise<string> {
    const runId = `run-minimax-${conversation}-${Date.now().toString(36)}`;
    const req = {
      type: "lurk.run.request.v1", id: `req-${runId}`, ts: Date.now(), runId, sessionKey: `agent:main:cli:dm:${conversation}`, agentId: "main", sessionType: "dm",
      trigger: "message", inputs: [{ kind: "user", text, attachments: [] }],
      origin: { channel: "cli", conversation, messageIds: [`msg-${runId}`] }, deliver: true, options,
    } as RunRequest;
    await jetstream(router).publish(S.runRequest("main"), JSON.stringify(req), { msgID: runId });
    const jsm = await jetstreamManager(admin);
    const subject = S.outbound("cli", conversation);
    const out = await waitFor(async () => {
      const info = await jsm.streams.info(STREAMS.outbound, { subjects_filter: subject });
      if (!info.state.subjects?.[subject]) return undefined;
      return outboundMessageSchema.parse((await jsm.streams.getMessage(STREAMS.outbound, { last_by_subj: subject }))!.json());
    }, 20_000, "the reply in OUTBOUND");
    return out.text;
  }

  it("thinking without a signature and a tool call; the thinking goes back unsigned; the agent's temperature is sent", async () => {
    fake.enqueue({ kind: "tool_use", thinking: { text: "I should read notes.md." }, calls: [{ id: "call_mm1", name: "read", input: { path: "notes.md" }, fragments: 4 }] });
    assert.equal(await run("mm-tools", "what is in notes.md?", {}), "tool said: contents of notes.md");
    assert.equal(fake.requests.length, 2);
    const [first, second] = fake.requests.map((r) => r.body);
    assert.deepEqual([first!.model, first!.max_tokens, first!.temperature], ["MiniMax-M2.5", 32_768, 0.4]);
    assert.deepEqual(first!.tools?.map((t) => t.name), ["read"]);
    assert.doesNotMatch(textOf(first!.system), /Reasoning Format/, "thinking comes in blocks here: no tag instructions");
    const replayed = blocksOf(second!.messages[1]);
    assert.deepEqual(replayed.map((b) => b.type), ["thinking", "tool_use"]);
    assert.deepEqual(replayed[0], { type: "thinking", thinking: "I should read notes.md." }, "sent back as it came: no signature");
    assert.deepEqual(replayed[1]!.input, { path: "notes.md" });
    assert.ok(!runner!.output().includes(KEY), "the API key is never logged");
  });

  it("a run's temperature wins over the agent's; with thinking on none is sent", async () => {
    assert.equal(await run("mm-temp", "hello", { temperature: 0.2 }), "echo: hello");
    assert.equal(fake.requests[0]!.body.temperature, 0.2);
    assert.equal(await run("mm-think", "think hard", { temperature: 0.2, thinking: "high" }), "echo: think hard");
    assert.ok(fake.requests[1]!.body.thinking, "thinking was asked for");
    assert.ok(!("temperature" in fake.requests[1]!.body));
  });
});
