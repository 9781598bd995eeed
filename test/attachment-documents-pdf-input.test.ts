/**
 * Scanned PDFs (no text layer) sent to models that read PDFs as the PDF itself, with the whole
 * system as processes (real nats-server, media store, document worker, agent-runner) and the fake
 * Anthropic and OpenAI servers behind the real SDKs. Covered: an Anthropic model gets a `document`
 * block with the PDF's bytes and the session keeps only its ref; an OpenAI model with the `pdf`
 * capability (config) gets a `file` part; a model configured without it gets the "no extractable
 * text" note, and the session's next turn on a model with it gets the stored PDF; a PDF past the
 * page cap stays a note; a text PDF still goes as text; a failover to a model without PDF input
 * in the middle of a call sends that model the note.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { BusClient } from "../shared/runtime/client.js";
import { formatBytes, MediaStore } from "../shared/runtime/media.js";
import { blocksOf, FakeAnthropicServer, type WireBlock } from "./fakes/anthropic-server.js";
import { messageText } from "./fakes/openai-server.js";
import { makePdf } from "./fixtures/documents.js";
import { flatImage } from "./harness/images.js";
import { CliClient, TestSystem } from "./harness/system.js";
import { startFileRig, stopFileRig } from "./harness/file-rig.js";

const NO_TEXT = "(no extractable text: its pages are probably scanned images, and OCR is not available)";
const CONFIG = {
  agents: [{ id: "main", default: true, fallbacks: ["openai/test-model"] }],
  models: { entries: {
    "openai/pdf-reader": { capabilities: { pdf: true } },
    "anthropic/claude-haiku-4-5": { capabilities: { pdf: false } },
  } },
  // the note without OCR (test/ocr.test.ts covers a scan read by OCR)
  media: { ocr: { enabled: false } },
};

describe("scanned PDFs as the PDF itself for models with PDF input", () => {
  let anthropic: FakeAnthropicServer;
  let system: TestSystem;
  let channelNc: NatsConnection;
  let runnerNc: NatsConnection;
  let media: MediaStore;
  let cli: CliClient;
  const scanned = makePdf([[], []]);
  let scanRef: string;

  before(async () => {
    anthropic = await FakeAnthropicServer.start();
    ({ system, channelNc, runnerNc, media, cli } = await startFileRig({ config: CONFIG, env: { ANTHROPIC_BASE_URL: anthropic.baseUrl, ANTHROPIC_API_KEY: "sk-ant-test-0123456789" } }));
    scanRef = (await media.put(scanned, { mime: "application/pdf", name: "scan.pdf" })).ref;
  });
  after(async () => {
    await stopFileRig({ system, channelNc, runnerNc, media, cli });
    await anthropic?.close();
  });
  beforeEach(() => {
    system.fake.reset();
    anthropic.reset();
  });

  const scanAttachment = () => ({ kind: "file" as const, mime: "application/pdf", name: "scan.pdf", size: scanned.length, ref: scanRef });
  const history = async (session: string) => JSON.stringify((await new BusClient(runnerNc).call("sessions", "history", { sessionKey: `agent:main:cli:dm:${session}`, limit: 20 })).records);
  const lastAnthropicBlocks = (): WireBlock[] => blocksOf(anthropic.requests.at(-1)!.body.messages.at(-1));
  const fallbackNote = (ref: string) => `[attachment scan.pdf (application/pdf, ${formatBytes(scanned.length)}), media ref ${ref}; its extracted text:]\n${NO_TEXT}`;

  it("an Anthropic model gets a scanned PDF as a document block with its exact bytes; the session keeps only the ref", async () => {
    anthropic.enqueue({ kind: "text", text: "Total: 12.50 EUR" });
    const reply = await cli.send("/model anthropic/claude-sonnet-4-5 what does this receipt say?", { sessionName: "pdf-anthropic", attachments: [scanAttachment()] });
    assert.equal(reply.text, "Total: 12.50 EUR");
    assert.equal(system.fake.requests.length, 0, "the OpenAI fallback was not asked");
    const blocks = lastAnthropicBlocks();
    const documents = blocks.filter((b) => b.type === "document");
    assert.equal(documents.length, 1, JSON.stringify(blocks).slice(0, 500));
    const doc = documents[0]!;
    assert.deepEqual(doc.source, { type: "base64", media_type: "application/pdf", data: scanned.toString("base64") });
    assert.equal(doc.title, "scan.pdf");
    const before = blocks[blocks.indexOf(doc) - 1]!;
    assert.equal(before.text, `[attachment scan.pdf (application/pdf, ${formatBytes(scanned.length)}), media ref ${scanRef}; it has no text layer (scanned pages), so it is attached as the PDF itself:]`);
    assert.ok(!JSON.stringify(blocks).includes("no extractable text"));
    const kept = await history("pdf-anthropic");
    assert.ok(kept.includes(`"type":"document"`) && kept.includes(scanRef), "the session keeps the document block by ref");
    assert.ok(!kept.includes(scanned.toString("base64")), "the session does not keep the bytes");
  });

  it("an OpenAI model with the pdf capability gets a scanned PDF as a file part with a data URL", async () => {
    system.fake.enqueue({ kind: "text", text: "a receipt" });
    await cli.send("/model openai/pdf-reader what is it?", { sessionName: "pdf-openai", attachments: [scanAttachment()] });
    const request = system.fake.requests.at(-1)!;
    assert.equal(request.body.model, "pdf-reader");
    const content = request.body.messages.at(-1)!.content;
    assert.ok(Array.isArray(content), "the user message has parts");
    const files = content.filter((p) => p.type === "file");
    assert.equal(files.length, 1);
    assert.deepEqual(files[0]!.file, { filename: "scan.pdf", file_data: `data:application/pdf;base64,${scanned.toString("base64")}` });
    assert.ok(messageText(request.body.messages.at(-1)).includes("so it is attached as the PDF itself:]"));
  });

  it("a model configured without PDF input gets the note that there is no extractable text; a model with it gets the same transcript's PDF", async () => {
    anthropic.enqueue({ kind: "text", text: "cannot read it" }, { kind: "text", text: "now I can" });
    await cli.send("/model anthropic/claude-haiku-4-5 what is it?", { sessionName: "pdf-off", attachments: [scanAttachment()] });
    const off = lastAnthropicBlocks();
    assert.equal(anthropic.requests.at(-1)!.body.model, "claude-haiku-4-5");
    assert.ok(!off.some((b) => b.type === "document"), "no document block");
    assert.ok(off.some((b) => b.text === fallbackNote(scanRef)), JSON.stringify(off));
    // the next turn of the session on a model with PDF input: the stored block is the PDF there
    const reply = await cli.send("/model anthropic/claude-sonnet-4-5 and now?", { sessionName: "pdf-off" });
    assert.equal(reply.text, "now I can");
    const body = anthropic.requests.at(-1)!.body;
    assert.equal(body.model, "claude-sonnet-4-5");
    const earlier = body.messages.flatMap((m) => blocksOf(m)).filter((b) => b.type === "document");
    assert.equal(earlier.length, 1, "the earlier turn's PDF");
    assert.equal(earlier[0]!.source?.data, scanned.toString("base64"));
  });

  it("a scanned PDF past the page cap (100 pages) stays a note; a text PDF still goes as text; only the scan within the cap is a document", async () => {
    const long = makePdf(Array.from({ length: 101 }, () => []));
    const text = makePdf([["Invoice 42", "Total 99 EUR"]]);
    const [longRef, textRef] = await Promise.all([
      media.put(long, { mime: "application/pdf", name: "long.pdf" }).then((r) => r.ref),
      media.put(text, { mime: "application/pdf", name: "invoice.pdf" }).then((r) => r.ref),
    ]);
    anthropic.enqueue({ kind: "text", text: "ok" });
    await cli.send("/model anthropic/claude-sonnet-4-5 read these", { sessionName: "pdf-caps", attachments: [
      { kind: "file", mime: "application/pdf", name: "long.pdf", size: long.length, ref: longRef },
      { kind: "file", mime: "application/pdf", name: "invoice.pdf", size: text.length, ref: textRef },
      scanAttachment(),
    ] });
    const blocks = lastAnthropicBlocks();
    const documents = blocks.filter((b) => b.type === "document");
    assert.deepEqual(documents.map((b) => b.title), ["scan.pdf"], "only the scan within the cap");
    const all = blocks.map((b) => b.text ?? "").join("\n");
    assert.ok(all.includes(`media ref ${longRef}; its extracted text:]\n${NO_TEXT}`), all);
    assert.ok(all.includes(`media ref ${textRef}; its extracted text:]\nInvoice 42\nTotal 99 EUR`), all);
  });

  it("a failover in the middle of a call to a model without PDF input sends that model the note", async () => {
    // a model no other test uses: its cooldown after the overload stays here
    anthropic.enqueue({ kind: "error", status: 529 });
    system.fake.enqueue({ kind: "text", text: "from the fallback" });
    const reply = await cli.send("/model anthropic/claude-opus-4-5 what is it?", { sessionName: "pdf-failover", attachments: [scanAttachment()] });
    assert.equal(reply.text, "from the fallback");
    assert.equal(anthropic.requests.length, 1);
    assert.ok(blocksOf(anthropic.requests[0]!.body.messages.at(-1)).some((b) => b.type === "document"), "the PDF model got the document");
    const text = messageText(system.fake.requests.at(-1)!.body.messages.at(-1));
    assert.ok(text.endsWith(fallbackNote(scanRef)), text);
    assert.ok(!JSON.stringify(system.fake.requests.at(-1)!.body).includes(`"file"`), "no file part for the fallback");
  });

  it("images: a model known to lack vision gets a note instead of the image (the call is not refused); an unknown model gets the image", async () => {
    const png = await flatImage(40, 30).png().toBuffer();
    const { ref } = await media.put(png, { mime: "image/png", name: "cat.png" });
    const photo = { kind: "image" as const, mime: "image/png", name: "cat.png", size: png.length, ref };
    system.fake.enqueue({ kind: "text", text: "no eyes" }, { kind: "text", text: "a cat" });
    assert.equal((await cli.send("/model openai/gpt-3.5-turbo what is this?", { sessionName: "vision-off", attachments: [photo] })).text, "no eyes");
    const textOnly = JSON.stringify(system.fake.requests.at(-1)!.body.messages);
    assert.ok(!textOnly.includes("image_url"), "no image part for a text-only model");
    assert.ok(textOnly.includes("this model does not take images"), textOnly.slice(0, 800));
    assert.equal((await cli.send("what is this?", { sessionName: "vision-unknown", attachments: [photo] })).text, "a cat");
    const last = system.fake.requests.at(-1)!.body;
    assert.equal(last.model, "test-model");
    assert.ok(JSON.stringify(last.messages).includes(`"image_url"`), "the unknown model gets the image");
  });
});
