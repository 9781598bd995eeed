/**
 * A scanned PDF's document block on the wire of each provider, through the real SDKs against the
 * fake servers: OpenAI a `file` part (name and PDF data URL), Ollama (no PDF input) the "no
 * extractable text" note; a block whose bytes were not loaded is that note everywhere. The fakes
 * refuse what the real APIs refuse: a document that is not a base64 PDF, a file part without one.
 * pdfInputFor: the per-model choice the agent-runner makes before each call.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { LlmMessage } from "../shared/contract/index.js";
import { pdfInputFor } from "../services/agent-runner/pdf-input.js";
import { OllamaProvider } from "../services/agent-runner/providers/ollama.js";
import { OpenAIProvider } from "../services/agent-runner/providers/openai.js";
import type { Provider, ProviderRequest } from "../services/agent-runner/providers/types.js";
import { FakeAnthropicServer } from "./fakes/anthropic-server.js";
import { FakeOllamaServer } from "./fakes/ollama-server.js";
import { FakeOpenAIServer } from "./fakes/openai-server.js";
import { makePdf } from "./fixtures/documents.js";

const REF = "a".repeat(64);
const PDF = makePdf([[]]).toString("base64");
const NOTE = `[attachment scan.pdf (application/pdf, 1.0 KB), media ref ${REF}; its extracted text:]\n(no extractable text: its pages are probably scanned images, and OCR is not available)`;
const withPdf = (loaded: boolean): LlmMessage[] => [{ role: "user", content: [
  { type: "text", text: "what is it?" },
  { type: "document", mime: "application/pdf", ref: REF, name: "scan.pdf", size: 1024, pages: 1, ...(loaded ? { dataBase64: PDF } : {}) },
] }];

async function drain(provider: Provider, req: Omit<ProviderRequest, "signal" | "system" | "tools">): Promise<void> {
  let last;
  for await (const ev of provider.stream({ system: "s", tools: [], ...req, signal: new AbortController().signal })) last = ev;
  assert.equal(last?.type, "done", JSON.stringify(last));
}

describe("PDF input on the wire", () => {
  let openai: FakeOpenAIServer;
  let ollama: FakeOllamaServer;
  let anthropic: FakeAnthropicServer;
  before(async () => {
    [openai, ollama, anthropic] = await Promise.all([FakeOpenAIServer.start(), FakeOllamaServer.start({ models: ["llama-test"] }), FakeAnthropicServer.start()]);
  });
  after(async () => {
    await Promise.all([openai?.close(), ollama?.close(), anthropic?.close()]);
  });

  it("pdfInputFor: a model with PDF input gets a note and the PDF, one without (or an unloaded block) the no-text note", () => {
    const [forPdf] = pdfInputFor(withPdf(true), true) as [Extract<LlmMessage, { role: "user" }>];
    assert.deepEqual(forPdf.content.map((b) => b.type), ["text", "text", "document"]);
    assert.match((forPdf.content[1] as { text: string }).text, /; it has no text layer \(scanned pages\), so it is attached as the PDF itself:\]$/);
    for (const [messages, pdf] of [[withPdf(true), false], [withPdf(false), true]] as const) {
      const [m] = pdfInputFor(messages, pdf) as [Extract<LlmMessage, { role: "user" }>];
      assert.deepEqual(m.content, [{ type: "text", text: "what is it?" }, { type: "text", text: NOTE }]);
    }
    const plain: LlmMessage[] = [{ role: "user", content: [{ type: "text", text: "hi" }] }];
    assert.equal(pdfInputFor(plain, true), plain, "nothing to change: the same array");
  });

  it("OpenAI: a file part with the file name and a PDF data URL; an unloaded block is the note", async () => {
    const provider = new OpenAIProvider({ baseUrl: openai.baseUrl, apiKey: "sk-test-0123456789", timeoutMs: 5_000 });
    await drain(provider, { model: "gpt-4o", messages: withPdf(true) });
    await drain(provider, { model: "gpt-4o", messages: withPdf(false) });
    const [loaded, unloaded] = openai.requests.map((r) => r.body.messages.at(-1)!);
    assert.deepEqual(loaded!.content, [{ type: "text", text: "what is it?" }, { type: "file", file: { filename: "scan.pdf", file_data: `data:application/pdf;base64,${PDF}` } }]);
    assert.equal(unloaded!.content, `what is it?\n${NOTE}`);
  });

  it("Ollama: no PDF input, the note in the text and no images", async () => {
    const provider = new OllamaProvider({ host: ollama.url, timeoutMs: 5_000 });
    await drain(provider, { model: "llama-test", messages: withPdf(true) });
    assert.deepEqual(ollama.requests[0]!.body.messages.at(-1), { role: "user", content: `what is it?\n${NOTE}` });
  });

  it("the fakes refuse what the real APIs refuse: a document that is not a base64 PDF, a file part without a PDF data URL", async () => {
    const anthropicStatus = async (source: Record<string, string>) => (await fetch(`${anthropic.url}/v1/messages`, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-test", max_tokens: 10, stream: true, messages: [{ role: "user", content: [{ type: "document", source }] }] }),
    })).status;
    assert.equal(await anthropicStatus({ type: "base64", media_type: "image/png", data: PDF }), 400);
    assert.equal(await anthropicStatus({ type: "base64", media_type: "application/pdf", data: "not base64!" }), 400);
    assert.equal(await anthropicStatus({ type: "base64", media_type: "application/pdf", data: PDF }), 200);
    const openaiStatus = async (file: Record<string, string>) => (await fetch(`${openai.baseUrl}/chat/completions`, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: [{ type: "file", file }] }] }),
    })).status;
    assert.equal(await openaiStatus({ filename: "a.pdf", file_data: PDF }), 400, "not a data URL");
    assert.equal(await openaiStatus({ filename: "a.pdf", file_data: `data:application/pdf;base64,${PDF}` }), 200);
  });
});
