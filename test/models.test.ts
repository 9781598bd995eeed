/**
 * The model registry (shared/runtime/models.ts) and thinking levels on the wire: the real
 * OpenAI, Anthropic and Ollama SDKs against the fake servers, asserting the request bodies.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import { configSecrets, parseConfig } from "../shared/runtime/config.js";
import { createLogger } from "../shared/runtime/logger.js";
import { ModelChain } from "../services/agent-runner/failover.js";
import { lookupModel, usageCostUsd } from "../shared/runtime/models.js";
import { takesImages } from "../services/agent-runner/vision-input.js";
import { AnthropicProvider } from "../services/agent-runner/providers/anthropic.js";
import { OllamaProvider } from "../services/agent-runner/providers/ollama.js";
import { OpenAIProvider } from "../services/agent-runner/providers/openai.js";
import { ProviderRegistry } from "../services/agent-runner/providers/registry.js";
import { anthropicThinking, ollamaThink, openaiReasoningEffort } from "../services/agent-runner/providers/thinking.js";
import type { Provider, ProviderRequest, ProviderStreamEvent } from "../services/agent-runner/providers/types.js";
import type { LlmMessage } from "../shared/contract/index.js";
import { FakeAnthropicServer } from "./fakes/anthropic-server.js";
import { FakeOllamaServer } from "./fakes/ollama-server.js";
import { FakeOpenAIServer } from "./fakes/openai-server.js";

const HOME = "/tmp/lurkbot-models-test";
const config = (file: Record<string, unknown> = {}, env: Record<string, string> = {}) => parseConfig(file, env, HOME);
const log = createLogger("models-test", "silent");
const user = (text: string): LlmMessage => ({ role: "user", content: [{ type: "text", text }] });

async function drain(provider: Provider, req: Omit<ProviderRequest, "signal">): Promise<ProviderStreamEvent[]> {
  const out: ProviderStreamEvent[] = [];
  for await (const ev of provider.stream({ ...req, signal: new AbortController().signal })) out.push(ev);
  const last = out[out.length - 1];
  assert.equal(last?.type, "done", `the call succeeded: ${JSON.stringify(last)}`);
  return out;
}

describe("model registry", () => {
  it("knows common models by exact name, dated and tagged variants, and aliases", () => {
    const cfg = config();
    const gpt = lookupModel("openai/gpt-4o-mini", cfg);
    assert.deepEqual([gpt.provider, gpt.model, gpt.contextWindow, gpt.maxOutput, gpt.capabilities.thinking, gpt.known], ["openai", "gpt-4o-mini", 128_000, 16_384, false, true]);
    assert.equal(lookupModel("openai/gpt-4o-2024-08-06", cfg).cost?.inputPerMTok, 2.5, "a dated gpt-4o is gpt-4o, not gpt-4o-mini");
    assert.equal(lookupModel("openai/gpt-4o-mini-2024-07-18", cfg).cost?.inputPerMTok, 0.15, "the longest matching prefix wins");
    assert.equal(lookupModel("openai/o3-mini", cfg).capabilities.vision, false);
    assert.equal(lookupModel("anthropic/claude-sonnet-4-5-20250929", cfg).maxOutput, 64_000);
    assert.equal(lookupModel("ollama/qwen3:8b", cfg).capabilities.thinking, true, "an Ollama tag matches its family");
    assert.equal(lookupModel("ollama/qwen3:8b", cfg).cost?.inputPerMTok, 0, "local models cost nothing");
    const sonnet = lookupModel("sonnet", cfg);
    assert.deepEqual([sonnet.ref, sonnet.capabilities.thinking], ["anthropic/claude-sonnet-4-6", true]);
    assert.equal(lookupModel("gpt4o", cfg).ref, "openai/gpt-4o");
    assert.equal(lookupModel("opus", cfg).provider, "anthropic");
    assert.equal(lookupModel("gpt-4.1", cfg).ref, "openai/gpt-4.1", "a bare known name finds its provider");
    assert.equal(lookupModel("openai/gpt-4odd", cfg).known, false, "a prefix only matches on a name boundary");
  });

  it("images go to every model but one known to lack vision; vision variants of text-only families have rows of their own", () => {
    const cfg = config();
    const takes = (ref: string, c = cfg) => takesImages(lookupModel(ref, c));
    for (const ref of ["openai/gpt-4o", "anthropic/claude-haiku-4-5", "ollama/gemma3:4b", "ollama/llama3.2-vision:11b", "ollama/qwen3-vl:8b", "ollama/mistral-small3.1:24b", "ollama/llava:7b", "openai/my-vllm-model"]) {
      assert.equal(takes(ref), true, ref);
    }
    for (const ref of ["openai/gpt-3.5-turbo", "openai/o3-mini", "ollama/llama3.2:3b", "ollama/qwen3:8b", "ollama/mistral:7b"]) assert.equal(takes(ref), false, ref);
    assert.equal(lookupModel("ollama/llama3.2-vision:11b", cfg).capabilities.tools, false, "no tools for a model Ollama serves without them");
    assert.equal(takes("openai/my-vllm-model", config({ models: { entries: { "openai/my-vllm-model": { capabilities: { vision: false } } } } })), false, "configured text-only");
  });

  it("knows which models take PDFs as documents (pdf), and a config entry turns it on or off", () => {
    const pdf = (ref: string, cfg = config()) => lookupModel(ref, cfg).capabilities.pdf;
    for (const ref of ["anthropic/claude-sonnet-4-5-20250929", "anthropic/claude-3-5-haiku", "haiku", "openai/gpt-4o", "openai/gpt-4.1-mini", "openai/gpt-5", "openai/o3", "openai/o4-mini"]) {
      assert.equal(pdf(ref), true, ref);
    }
    for (const ref of ["openai/o3-mini", "openai/gpt-3.5-turbo", "openai/my-vllm-model", "ollama/gemma3", "anthropic/claude-test"]) assert.equal(pdf(ref), false, ref);
    const cfg = config({ models: { entries: { "openai/my-vllm-model": { capabilities: { pdf: true } }, "openai/gpt-4o": { capabilities: { pdf: false } } } } });
    assert.equal(pdf("openai/my-vllm-model", cfg), true);
    assert.equal(pdf("openai/gpt-4o", cfg), false);
    assert.equal(lookupModel("openai/gpt-4o", cfg).capabilities.vision, true, "the other capabilities stay");
  });

  it("gives unknown models conservative defaults and applies config entries and aliases", () => {
    const unknown = lookupModel("openai/my-finetune-7b", config());
    assert.deepEqual([unknown.contextWindow, unknown.maxOutput, unknown.capabilities, unknown.cost, unknown.known],
      [32_000, 4_096, { tools: true, vision: false, thinking: false, pdf: false }, undefined, false]);
    const cfg = config({
      model: "openai/gpt-4o",
      models: {
        entries: {
          "openai/MiniMax-M2": { contextWindow: 200_000, maxOutput: 8_000, capabilities: { thinking: true }, cost: { inputPerMTok: 0.3, outputPerMTok: 1.2 } },
          "anthropic/claude-sonnet-4-5": { contextWindow: 1_000_000 },
        },
        aliases: { fast: "openai/gpt-4o-mini", sonnet: "anthropic/claude-sonnet-4" },
      },
    });
    const mm = lookupModel("openai/MiniMax-M2", cfg);
    assert.deepEqual([mm.contextWindow, mm.maxOutput, mm.capabilities, mm.cost?.outputPerMTok, mm.known], [200_000, 8_000, { tools: true, vision: false, thinking: true, pdf: false }, 1.2, true]);
    const big = lookupModel("anthropic/claude-sonnet-4-5", cfg);
    assert.deepEqual([big.contextWindow, big.maxOutput, big.cost?.inputPerMTok], [1_000_000, 64_000, 3], "an override changes only its fields");
    assert.equal(lookupModel("fast", cfg).ref, "openai/gpt-4o-mini");
    assert.equal(lookupModel("sonnet", cfg).ref, "anthropic/claude-sonnet-4", "a config alias wins over the built-in one");
    assert.equal(lookupModel("my-local", cfg).ref, "openai/my-local", "a bare unknown name takes the configured model's provider");
    assert.throws(() => config({ models: { aliases: { fast: "no-provider" } } }), /models\.aliases\.fast.*provider\/model/);
    assert.throws(() => config({ models: { entries: { "openai/x": { contextWindow: -1 } } } }), /models\.entries/);
  });

  it("prices usage per million tokens, cache reads and writes at their own rates", () => {
    const sonnet = lookupModel("anthropic/claude-sonnet-4-5", config());
    const usd = usageCostUsd({ input: 1_000_000, output: 100_000, cacheRead: 2_000_000, cacheWrite: 100_000, total: 3_200_000 }, sonnet)!;
    assert.ok(Math.abs(usd - (3 + 1.5 + 0.6 + 0.375)) < 1e-9, `cost ${usd}`);
    assert.equal(usageCostUsd({ input: 10, output: 10, cacheRead: 0, cacheWrite: 0, total: 20 }, lookupModel("openai/unknown-x", config())), undefined);
  });

  it("expands aliases when picking a run's model and lists auth profiles, default first; their keys are secrets", () => {
    const cfg = config({
      model: "openai/gpt-4o",
      providers: { openai: { profiles: [{ id: "team", apiKey: "sk-team-profile-0001", baseUrl: "http://127.0.0.1:1/v1" }, { id: "spare", apiKey: "sk-spare-profile-0002" }] } },
    }, { OPENAI_API_KEY: "sk-env-default-key-0000", OPENAI_BASE_URL: "http://127.0.0.1:2/v1" });
    const registry = new ProviderRegistry(cfg);
    assert.equal(registry.pick("sonnet", undefined), "anthropic/claude-sonnet-4-6");
    assert.equal(registry.pick(undefined, "haiku"), "anthropic/claude-haiku-4-5");
    assert.equal(registry.pick("gpt-4.1", undefined), "openai/gpt-4.1");
    const profiles = registry.profiles("openai");
    assert.deepEqual(profiles.map((p) => [p.id, p.baseUrl]), [["default", "http://127.0.0.1:2/v1"], ["team", "http://127.0.0.1:1/v1"], ["spare", "http://127.0.0.1:2/v1"]]);
    assert.equal(new Set(profiles.map((p) => p.fingerprint)).size, 3);
    assert.ok(profiles.every((p) => !p.fingerprint.includes("sk-")));
    const secrets = configSecrets(cfg);
    for (const key of ["sk-team-profile-0001", "sk-spare-profile-0002", "sk-env-default-key-0000"]) assert.ok(secrets.includes(key), `${key} is redacted`);
    assert.throws(() => config({ providers: { openai: { profiles: [{ id: "a" }, { id: "a" }] } } }), /unique/);
    assert.deepEqual(registry.profiles("anthropic"), [], "no key, no profile");
    assert.throws(() => new ModelChain({ registry, config: cfg, refs: ["anthropic/claude-sonnet-4-5"], sessionKey: "agent:main:main", log }), /ANTHROPIC_API_KEY/);
  });

  it("sends thinking and max output only to models that support them", () => {
    const cfg = config({ model: "openai/gpt-4o" }, { OPENAI_API_KEY: "sk-x-0123456789" });
    const registry = new ProviderRegistry(cfg);
    const chain = (ref: string) => new ModelChain({ registry, config: cfg, refs: [ref], sessionKey: "agent:main:main", thinking: "high", log });
    const options = (ref: string) => {
      const c = chain(ref);
      return c.requestOptions(c.next(new Set())!);
    };
    assert.deepEqual(options("openai/gpt-4o"), { maxTokens: 16_384 }, "gpt-4o does not think");
    assert.deepEqual(options("openai/o3"), { maxTokens: 100_000, thinking: "high" });
    assert.deepEqual(options("openai/some-unknown"), {}, "an unknown model gets neither");
  });
});

describe("thinking levels on the wire", () => {
  let openai: FakeOpenAIServer;
  let anthropic: FakeAnthropicServer;
  let ollama: FakeOllamaServer;
  before(async () => {
    [openai, anthropic, ollama] = await Promise.all([FakeOpenAIServer.start(), FakeAnthropicServer.start(), FakeOllamaServer.start()]);
  });
  after(async () => {
    await Promise.all([openai?.close(), anthropic?.close(), ollama?.close()]);
  });
  beforeEach(() => {
    openai.reset();
    anthropic.requests.length = 0;
    ollama.requests.length = 0;
  });

  it("maps levels to budgets and efforts", () => {
    assert.deepEqual(anthropicThinking("medium", 64_000, 64_000), { thinking: { type: "enabled", budget_tokens: 8_192 }, maxTokens: 64_000 });
    assert.deepEqual(anthropicThinking("high", 4_096), { thinking: { type: "enabled", budget_tokens: 24_576 }, maxTokens: 24_576 + 4_096 }, "max_tokens is raised above the budget");
    assert.deepEqual(anthropicThinking("high", 8_192, 8_192), { thinking: { type: "enabled", budget_tokens: 7_168 }, maxTokens: 8_192 }, "the budget shrinks under a small max output");
    assert.deepEqual(anthropicThinking("off", 4_096), { maxTokens: 4_096 });
    assert.deepEqual(["off", "low", "medium", "high"].map((l) => openaiReasoningEffort(l as "off", "gpt-5-mini")), ["minimal", "low", "medium", "high"]);
    assert.equal(openaiReasoningEffort("off", "o3"), "low", "o-series cannot turn reasoning off");
    assert.deepEqual([ollamaThink("off", "qwen3:8b"), ollamaThink("high", "qwen3:8b"), ollamaThink("medium", "gpt-oss:20b")], [false, true, "medium"]);
  });

  it("Anthropic: thinking {type: enabled, budget_tokens} with max_tokens above it; none when off", async () => {
    const provider = new AnthropicProvider({ baseUrl: anthropic.url, apiKey: "sk-ant-test-000000", timeoutMs: 5_000 });
    await drain(provider, { model: "claude-sonnet-4-6", system: "s", messages: [user("think")], tools: [], maxTokens: 64_000, thinking: "medium" });
    await drain(provider, { model: "claude-sonnet-4-6", system: "s", messages: [user("quick")], tools: [], maxTokens: 64_000, thinking: "off" });
    await drain(provider, { model: "claude-sonnet-4-6", system: "s", messages: [user("default")], tools: [] });
    const [think, off, plain] = anthropic.requests.map((r) => r.body);
    assert.deepEqual(think!.thinking, { type: "enabled", budget_tokens: 8_192 });
    assert.equal(think!.max_tokens, 64_000);
    assert.equal(off!.thinking, undefined);
    assert.equal(plain!.thinking, undefined);
    assert.equal(plain!.max_tokens, 4_096, "the provider's default max_tokens without a registry value");
  });

  it("Anthropic: no thinking while answering tool calls another provider made (no signed block to send back)", async () => {
    const provider = new AnthropicProvider({ baseUrl: anthropic.url, apiKey: "sk-ant-test-000000", timeoutMs: 5_000 });
    const history: LlmMessage[] = [
      user("read a.txt"),
      { role: "assistant", provider: "openai", model: "gpt-4o", stopReason: "tool_use", content: [{ type: "thinking", text: "openai reasoning" }, { type: "tool_call", id: "call_1", name: "read", args: { path: "a.txt" } }] },
      { role: "tool_result", toolCallId: "call_1", toolName: "read", isError: false, content: [{ type: "text", text: "A" }] },
    ];
    await drain(provider, { model: "claude-sonnet-4-6", system: "s", messages: history, tools: [], maxTokens: 64_000, thinking: "high" });
    const ownTurn: LlmMessage[] = [...history.slice(0, 1),
      { role: "assistant", provider: "anthropic", model: "claude-sonnet-4-6", stopReason: "tool_use", content: [{ type: "thinking", text: "mine", signature: "sig-1" }, { type: "tool_call", id: "toolu_1", name: "read", args: { path: "a.txt" } }] },
      { role: "tool_result", toolCallId: "toolu_1", toolName: "read", isError: false, content: [{ type: "text", text: "A" }] }];
    await drain(provider, { model: "claude-sonnet-4-6", system: "s", messages: ownTurn, tools: [], maxTokens: 64_000, thinking: "high" });
    const sameProviderOtherModel = ownTurn.map((m) => (m.role === "assistant" ? { ...m, model: "claude-opus-4-1" } : m));
    await drain(provider, { model: "claude-sonnet-4-6", system: "s", messages: sameProviderOtherModel, tools: [], maxTokens: 64_000, thinking: "high" });
    const [foreign, own, otherModel] = anthropic.requests.map((r) => r.body);
    assert.equal(foreign!.thinking, undefined, "thinking off for this request");
    const foreignAssistant = foreign!.messages[1]!.content as Array<{ type: string }>;
    assert.deepEqual(foreignAssistant.map((b) => b.type), ["tool_use"], "the other provider's thinking is dropped, the tool call kept");
    assert.deepEqual(own!.thinking, { type: "enabled", budget_tokens: 24_576 });
    assert.deepEqual((own!.messages[1]!.content as Array<{ type: string }>).map((b) => b.type), ["thinking", "tool_use"]);
    assert.equal(otherModel!.thinking, undefined, "another model's signature is not sent back");
    assert.deepEqual((otherModel!.messages[1]!.content as Array<{ type: string }>).map((b) => b.type), ["tool_use"]);
  });

  it("OpenAI: reasoning_effort for reasoning models, nothing otherwise", async () => {
    const provider = new OpenAIProvider({ baseUrl: openai.baseUrl, apiKey: "sk-test-0123456789", timeoutMs: 5_000 });
    await drain(provider, { model: "gpt-5-mini", system: "s", messages: [user("a")], tools: [], thinking: "off" });
    await drain(provider, { model: "o3", system: "s", messages: [user("b")], tools: [], thinking: "high", maxTokens: 100_000 });
    await drain(provider, { model: "gpt-4o", system: "s", messages: [user("c")], tools: [] });
    const [gpt5, o3, gpt4o] = openai.requests.map((r) => r.body);
    assert.equal(gpt5!.reasoning_effort, "minimal");
    assert.equal(o3!.reasoning_effort, "high");
    assert.equal(o3!.max_tokens, 100_000, "max output goes to a compatible server as max_tokens");
    assert.equal(gpt4o!.reasoning_effort, undefined);
    assert.equal(gpt4o!.max_tokens, undefined);
  });

  it("Ollama: think true/false, or the level for gpt-oss", async () => {
    const provider = new OllamaProvider({ host: ollama.url, timeoutMs: 5_000 });
    await drain(provider, { model: "qwen3:8b", system: "s", messages: [user("a")], tools: [], thinking: "high" });
    await drain(provider, { model: "qwen3:8b", system: "s", messages: [user("b")], tools: [], thinking: "off" });
    await drain(provider, { model: "gpt-oss:20b", system: "s", messages: [user("c")], tools: [], thinking: "low", maxTokens: 16_384 });
    await drain(provider, { model: "llama3.1", system: "s", messages: [user("d")], tools: [] });
    const bodies = ollama.requests.map((r) => r.body as unknown as { think?: unknown; options?: { num_predict?: number } });
    assert.deepEqual(bodies.map((b) => b.think), [true, false, "low", undefined]);
    assert.equal(bodies[2]!.options?.num_predict, 16_384);
  });
});
