/**
 * Images a tool returns (a `read` of a screenshot, say), on each provider's wire through the real
 * SDKs against the fake servers: OpenAI's `tool` messages take only text, so the image goes in
 * one user message right after the turn's tool messages (the fake refuses a user message between
 * them, as the API does); Anthropic keeps it inside its `tool_result` block; Ollama on the tool
 * message's `images`. A model without vision gets the note (with the OCR text) instead.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { LlmMessage } from "../shared/contract/index.js";
import { AnthropicProvider } from "../services/agent-runner/providers/anthropic.js";
import { OllamaProvider } from "../services/agent-runner/providers/ollama.js";
import { OpenAIProvider } from "../services/agent-runner/providers/openai.js";
import type { Provider, ProviderRequest } from "../services/agent-runner/providers/types.js";
import { imageInputFor } from "../services/agent-runner/vision-input.js";
import { FakeAnthropicServer } from "./fakes/anthropic-server.js";
import { FakeOllamaServer } from "./fakes/ollama-server.js";
import { FakeOpenAIServer } from "./fakes/openai-server.js";

// a 1x1 PNG
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const turn = (ocrText?: string): LlmMessage[] => [
  { role: "user", content: [{ type: "text", text: "what do the screenshots say?" }] },
  { role: "assistant", content: [
    { type: "tool_call", id: "call_1", name: "read", args: { path: "a.png" } },
    { type: "tool_call", id: "call_2", name: "read", args: { path: "notes.txt" } },
  ], provider: "openai", model: "gpt-4o", stopReason: "tool_use" },
  { role: "tool_result", toolCallId: "call_1", toolName: "read", isError: false, content: [
    { type: "text", text: "a.png: image/png image, 70 bytes" },
    { type: "image", mime: "image/png", dataBase64: PNG, ...(ocrText !== undefined ? { ocrText } : {}) },
  ] },
  { role: "tool_result", toolCallId: "call_2", toolName: "read", isError: false, content: [{ type: "text", text: "1\tplain notes" }] },
];

async function drain(provider: Provider, req: Omit<ProviderRequest, "signal" | "system" | "tools">): Promise<void> {
  let last;
  for await (const ev of provider.stream({ system: "s", tools: [], ...req, signal: new AbortController().signal })) last = ev;
  assert.equal(last?.type, "done", JSON.stringify(last));
}

describe("images a tool returns, on each provider's wire", () => {
  let openai: FakeOpenAIServer;
  let anthropic: FakeAnthropicServer;
  let ollama: FakeOllamaServer;
  before(async () => {
    [openai, anthropic, ollama] = await Promise.all([FakeOpenAIServer.start(), FakeAnthropicServer.start(), FakeOllamaServer.start({ models: ["llava-test"] })]);
  });
  after(async () => {
    await Promise.all([openai?.close(), anthropic?.close(), ollama?.close()]);
  });

  it("OpenAI: named in its tool message, sent in one user message after the turn's last tool message", async () => {
    const provider = new OpenAIProvider({ baseUrl: openai.baseUrl, apiKey: "sk-test-0123456789", timeoutMs: 5_000 });
    await drain(provider, { model: "gpt-4o", messages: turn() });
    const sent = openai.requests.at(-1)!.body.messages;
    assert.deepEqual(sent.map((m) => m.role), ["system", "user", "assistant", "tool", "tool", "user"]);
    assert.equal(sent[3]!.content, "a.png: image/png image, 70 bytes\n[image image/png: in the user message after the tool results]");
    assert.equal(sent[4]!.content, "1\tplain notes");
    assert.deepEqual(sent[5]!.content, [
      { type: "text", text: "[the image the read call call_1 returned:]" },
      { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
    ]);
  });

  it("OpenAI, a model without vision: the OCR note in the tool message and no image message", async () => {
    const provider = new OpenAIProvider({ baseUrl: openai.baseUrl, apiKey: "sk-test-0123456789", timeoutMs: 5_000 });
    await drain(provider, { model: "gpt-3.5-turbo", messages: imageInputFor(turn("Disk quota exceeded"), false) });
    const sent = openai.requests.at(-1)!.body.messages;
    assert.deepEqual(sent.map((m) => m.role), ["system", "user", "assistant", "tool", "tool"]);
    assert.match(String(sent[3]!.content), /the text OCR recognized in it \(it may contain errors\):\]\nDisk quota exceeded$/);
  });

  it("the fake refuses what the API refuses: a user message before every call has its tool message", async () => {
    const provider = new OpenAIProvider({ baseUrl: openai.baseUrl, apiKey: "sk-test-0123456789", timeoutMs: 5_000 });
    const [user, calls, first, second] = turn();
    const events = [];
    for await (const ev of provider.stream({ system: "s", tools: [], model: "gpt-4o", messages: [user!, calls!, first!, { role: "user", content: [{ type: "text", text: "in between" }] }, second!], signal: new AbortController().signal })) events.push(ev);
    const last = events.at(-1);
    assert.ok(last?.type === "error" && /call_2/.test(last.error.message), JSON.stringify(last));
  });

  it("Anthropic: inside the tool_result block", async () => {
    anthropic.enqueue({ kind: "text", text: "ok" });
    const provider = new AnthropicProvider({ baseUrl: anthropic.baseUrl, apiKey: "sk-ant-test", timeoutMs: 5_000 });
    await drain(provider, { model: "claude-test", messages: turn() });
    const sent = anthropic.requests.at(-1)!.body.messages as Array<{ role: string; content: Array<{ type: string; content?: Array<{ type: string; source?: { data: string } }> }> }>;
    const results = sent.at(-1)!.content.filter((b) => b.type === "tool_result");
    assert.equal(results.length, 2);
    assert.deepEqual(results[0]!.content!.map((b) => b.type), ["text", "image"]);
    assert.equal(results[0]!.content![1]!.source!.data, PNG);
  });

  it("Ollama: on the tool message's images", async () => {
    ollama.enqueue({ kind: "text", text: "ok" });
    const provider = new OllamaProvider({ host: ollama.url, timeoutMs: 5_000 });
    await drain(provider, { model: "llava-test", messages: turn() });
    const sent = ollama.requests.at(-1)!.body.messages as Array<{ role: string; images?: string[] }>;
    assert.deepEqual(sent.filter((m) => m.role === "tool").map((m) => m.images ?? []), [[PNG], []]);
  });
});
