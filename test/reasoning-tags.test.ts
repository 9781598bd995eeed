/**
 * Inline reasoning tags (`<think>…</think>` in the text): the streaming splitter, then the
 * OpenAI, Ollama and Anthropic providers through their real SDKs against the fake servers
 * (each character its own chunk, so every tag is split across chunks), the replay of a
 * MiniMax model's thinking inside its text, and the Reasoning Format prompt section.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { AssistantMessage, LlmMessage, RunRequest } from "../shared/contract/index.js";
import { parseConfig } from "../shared/runtime/config.js";
import { lookupModel } from "../shared/runtime/models.js";
import { promptExtras } from "../services/agent-runner/prompt-inputs.js";
import { AnthropicProvider } from "../services/agent-runner/providers/anthropic.js";
import { OllamaProvider } from "../services/agent-runner/providers/ollama.js";
import { OpenAIProvider } from "../services/agent-runner/providers/openai.js";
import { ThinkTagSplitter, type TagPiece } from "../services/agent-runner/providers/think-tags.js";
import type { Provider, ProviderRequest, ProviderStreamEvent } from "../services/agent-runner/providers/types.js";
import { buildSystemPrompt } from "../services/agent-runner/system-prompt.js";
import { blocksOf, FakeAnthropicServer } from "./fakes/anthropic-server.js";
import { FakeOllamaServer } from "./fakes/ollama-server.js";
import { FakeOpenAIServer, messageText } from "./fakes/openai-server.js";

const user = (text: string): LlmMessage => ({ role: "user", content: [{ type: "text", text }] });

async function collect(provider: Provider, req: Partial<ProviderRequest>): Promise<{ events: ProviderStreamEvent[]; message: AssistantMessage }> {
  const events: ProviderStreamEvent[] = [];
  const full: ProviderRequest = { model: "tag-model", system: "sys", messages: [user("hi")], tools: [], signal: new AbortController().signal, ...req };
  for await (const ev of provider.stream(full)) events.push(ev);
  const last = events[events.length - 1]!;
  assert.equal(last.type, "done", JSON.stringify(last));
  return { events, message: (last as Extract<ProviderStreamEvent, { type: "done" }>).message };
}
const texts = (events: ProviderStreamEvent[]) => events.flatMap((e) => (e.type === "text_delta" ? [e.text] : []));
const thoughts = (events: ProviderStreamEvent[]) => events.flatMap((e) => (e.type === "thinking_delta" ? [e.text] : []));

/** feeds the text one character at a time; returns the joined pieces and the splitter */
function feed(mode: "on" | "auto", text: string): { text: string; thinking: string; splitter: ThinkTagSplitter } {
  const s = new ThinkTagSplitter(mode);
  const pieces: TagPiece[] = [];
  for (const ch of text) pieces.push(...s.push(ch));
  pieces.push(...s.end());
  const join = (type: TagPiece["type"]) => pieces.filter((p) => p.type === type).map((p) => p.text).join("");
  return { text: join("text"), thinking: join("thinking"), splitter: s };
}

describe("think tag splitter", () => {
  it("splits a leading block streamed one character at a time; text after it is the answer", () => {
    const r = feed("on", "<think>\nplan: greet</think>\n\nHello!");
    assert.deepEqual([r.thinking, r.text], ["plan: greet", "Hello!"]);
    assert.deepEqual([r.splitter.thinking, r.splitter.text], ["plan: greet", "Hello!"]);
  });

  it("keeps text before and after a block in the middle, and takes <thinking> tags too", () => {
    const r = feed("on", "Sure. <thinking>check the date</thinking>It is Monday.");
    assert.deepEqual([r.thinking, r.text], ["check the date", "Sure. It is Monday."]);
  });

  it("an unterminated block at the end is thinking (also a partial closing tag)", () => {
    assert.deepEqual(Object.values(feed("on", "<think>still thinking about it")).slice(0, 2), ["", "still thinking about it"]);
    const cut = feed("on", "<think>almost done</thi");
    assert.deepEqual([cut.text, cut.thinking], ["", "almost done</thi"]);
  });

  it("leaves a lone '<' and non-tags in the text", () => {
    const r = feed("on", "a < b and <b>bold</b> <thinker>");
    assert.deepEqual([r.text, r.thinking], ["a < b and <b>bold</b> <thinker>", ""]);
  });

  it("a closing tag without an opening one (the template opened it) makes what came before thinking in the final message", () => {
    const r = feed("on", "reasoning first</think>\n\nThe answer.");
    assert.deepEqual([r.splitter.thinking, r.splitter.text], ["reasoning first", "The answer."]);
  });

  it("auto: splits only when the message begins with a block", () => {
    const lead = feed("auto", "  \n<think>hmm</think>Answer");
    assert.deepEqual([lead.thinking, lead.text], ["hmm", "Answer"]);
    const later = feed("auto", "Use <think>…</think> tags like this.");
    assert.deepEqual([later.thinking, later.text], ["", "Use <think>…</think> tags like this."]);
    assert.deepEqual(Object.values(feed("auto", "<thi")).slice(0, 2), ["<thi", ""], "an undecided start at the end stays text");
  });
});

describe("reasoning tags in the openai provider", () => {
  let fake: FakeOpenAIServer;
  let provider: OpenAIProvider;
  before(async () => {
    fake = await FakeOpenAIServer.start();
    provider = new OpenAIProvider({ apiKey: "sk-test", baseUrl: fake.baseUrl, timeoutMs: 5_000 });
  });
  after(async () => fake?.close());
  beforeEach(() => fake.reset());

  const THOUGHT = "<think>\nThe user greets me; answer briefly.\n</think>\n\nHi there!";

  it("a <think> block streamed in pieces becomes thinking deltas and a thinking block, never reply text", async () => {
    fake.enqueue({ kind: "text", text: THOUGHT, chunks: THOUGHT.length });
    const { events, message } = await collect(provider, { reasoningTags: "on" });
    assert.ok(texts(events).length >= 5 && thoughts(events).length >= 5, "streamed in many pieces");
    assert.equal(texts(events).join(""), "Hi there!");
    assert.ok(!texts(events).some((t) => /[<>]/.test(t)), "no part of a tag reaches the text");
    assert.equal(thoughts(events).join(""), "The user greets me; answer briefly.\n");
    assert.deepEqual(message.content, [{ type: "thinking", text: "The user greets me; answer briefly.\n" }, { type: "text", text: "Hi there!" }]);
  });

  it("auto (the default) detects a leading block; an unterminated one is all thinking", async () => {
    fake.enqueue({ kind: "text", text: THOUGHT, chunks: 7 }, { kind: "text", text: "<think>cut off mid-thought", chunks: 5, finishReason: "length" });
    assert.equal(texts((await collect(provider, {})).events).join(""), "Hi there!");
    const { events, message } = await collect(provider, {});
    assert.deepEqual(texts(events), []);
    assert.deepEqual(message.content, [{ type: "thinking", text: "cut off mid-thought" }]);
    assert.equal(message.stopReason, "max_tokens");
  });

  it("a model with reasoningTags off keeps the text as it is", async () => {
    fake.enqueue({ kind: "text", text: THOUGHT, chunks: 9 });
    const { events, message } = await collect(provider, { reasoningTags: "off" });
    assert.equal(texts(events).join(""), THOUGHT);
    assert.deepEqual(thoughts(events), []);
    assert.deepEqual(message.content, [{ type: "text", text: THOUGHT }]);
  });

  it("reasoning_content and inline tags together: both are thinking", async () => {
    fake.enqueue({ kind: "text", text: "<think>more</think>Done.", reasoning: "field reasoning", chunks: 4 });
    const { message } = await collect(provider, { reasoningTags: "on" });
    assert.deepEqual(message.content, [{ type: "thinking", text: "field reasoning\nmore" }, { type: "text", text: "Done." }]);
  });

  it("thinking goes back inside the text only to a model that wants it (reasoningReplay), and only its own", async () => {
    const previous: AssistantMessage = {
      role: "assistant", provider: "openai", model: "MiniMax-M2", stopReason: "end_turn",
      content: [{ type: "thinking", text: "earlier plan" }, { type: "text", text: "Earlier answer." }],
    };
    const history = [user("first"), previous, user("second")];
    await collect(provider, { model: "MiniMax-M2", messages: history, reasoningReplay: true });
    await collect(provider, { model: "MiniMax-M2", messages: history });
    await collect(provider, { model: "other-model", messages: history, reasoningReplay: true });
    const assistantText = (i: number) => messageText(fake.requests[i]!.body.messages.find((m) => m.role === "assistant"));
    assert.equal(assistantText(0), "<think>\nearlier plan\n</think>\n\nEarlier answer.");
    assert.equal(assistantText(1), "Earlier answer.");
    assert.equal(assistantText(2), "Earlier answer.", "another model's thinking is not replayed");
  });
});

describe("reasoning tags in the ollama provider", () => {
  let fake: FakeOllamaServer;
  let provider: OllamaProvider;
  before(async () => {
    fake = await FakeOllamaServer.start();
    provider = new OllamaProvider({ host: fake.url, timeoutMs: 5_000 });
  });
  after(async () => fake?.close());

  it("splits a <think> block streamed one character at a time out of the content", async () => {
    const text = "<think>R1 reasons here</think>\n\nForty-two.";
    fake.enqueue({ kind: "text", text, chunks: text.length });
    const { events, message } = await collect(provider, { model: "deepseek-r1:8b", reasoningTags: "on" });
    assert.equal(texts(events).join(""), "Forty-two.");
    assert.equal(thoughts(events).join(""), "R1 reasons here");
    assert.deepEqual(message.content, [{ type: "thinking", text: "R1 reasons here" }, { type: "text", text: "Forty-two." }]);
  });

  it("off: the content is kept as it is", async () => {
    fake.enqueue({ kind: "text", text: "<think>x</think>y", chunks: 3 });
    const { message } = await collect(provider, { model: "llama3.1", reasoningTags: "off" });
    assert.deepEqual(message.content, [{ type: "text", text: "<think>x</think>y" }]);
  });
});

describe("reasoning tags in the anthropic provider (a compatible server inlining them)", () => {
  let fake: FakeAnthropicServer;
  before(async () => {
    fake = await FakeAnthropicServer.start();
  });
  after(async () => fake?.close());

  it("splits a text block's <think> into a thinking block before the text", async () => {
    const text = "<think>compat reasoning</think>The answer.";
    fake.enqueue({ kind: "text", text, chunks: text.length });
    const provider = new AnthropicProvider({ apiKey: "k", baseUrl: fake.baseUrl, timeoutMs: 5_000 });
    const { events, message } = await collect(provider, { reasoningTags: "on" });
    assert.equal(texts(events).join(""), "The answer.");
    assert.deepEqual(message.content, [{ type: "thinking", text: "compat reasoning" }, { type: "text", text: "The answer." }]);
    // unsigned thinking of this model goes back to a compatible endpoint without a signature
    await collect(provider, { messages: [user("q"), { ...message, model: "tag-model" }, user("again")] });
    assert.deepEqual(blocksOf(fake.requests[1]!.body.messages[1]), [{ type: "thinking", thinking: "compat reasoning" }, { type: "text", text: "The answer." }]);
  });

  it("Anthropic's own API never gets unsigned thinking back", async () => {
    const message: AssistantMessage = { role: "assistant", provider: "anthropic", model: "tag-model", stopReason: "end_turn", content: [{ type: "thinking", text: "unsigned" }, { type: "text", text: "A." }] };
    const { toAnthropicMessages } = await import("../services/agent-runner/providers/anthropic-convert.js");
    const official = toAnthropicMessages([user("q"), message, user("again")], "anthropic", "tag-model");
    assert.deepEqual(official[1]!.content, [{ type: "text", text: "A." }]);
  });
});

describe("the Reasoning Format prompt section", () => {
  const base = { agentId: "main", workspace: "/tmp/ws", sessionType: "dm", tools: [], now: new Date(0) };
  const home = mkdtempSync(join(tmpdir(), "lurk-reasoning-"));
  const config = parseConfig({ models: { entries: { "openai/my-r1": { reasoningTags: true }, "openai/MiniMax-M2.5": { reasoningTags: false } } } }, {}, home);
  const req = { runId: "r1", sessionKey: "agent:main:cli:dm:x", agentId: "main", sessionType: "dm", trigger: "message", inputs: [{ kind: "user", text: "hi", attachments: [] }], deliver: true, options: {} } as unknown as RunRequest;
  const agent = config.agents[0]!;

  it("is in the prompt only for models that reason in tags", async () => {
    const section = (model: string) => promptExtras(config, agent, req, [], model).then((extras) => buildSystemPrompt({ ...base, ...extras }));
    for (const model of ["ollama/deepseek-r1:8b", "openai/MiniMax-M2.1", "openai/my-r1", "ollama/qwq"]) {
      const p = await section(model);
      assert.match(p, /## Reasoning Format\nPut all of your internal reasoning inside <think>\.\.\.<\/think>/, model);
      assert.ok(p.indexOf("## Reasoning Format") > p.indexOf("## Runtime"), "after Runtime, as in the seed's order");
    }
    for (const model of ["openai/gpt-4o", "anthropic/claude-sonnet-4-6", "openai/some-unknown", "openai/MiniMax-M2.5", "anthropic/MiniMax-M2.5"]) {
      assert.doesNotMatch(await section(model), /Reasoning Format/, model);
    }
    assert.equal(lookupModel("openai/some-unknown", config).reasoningTags, "auto");
  });
});
