/**
 * OCR of scanned PDFs (media.ocr; shared/runtime/documents/ocr.ts, services/agent-runner/
 * document-text.ts) with the system's real pdftoppm and tesseract in bubblewrap: scanned PDFs
 * built from rendered pages (test/fixtures/documents.ts makeScannedPdf), read in process, then
 * through the whole system: a model without PDF input gets the recognized text under the file's
 * note, and with OCR off the "no extractable text" note; an image sent to, or returned by a tool
 * to, a model without vision reaches it as its recognized text. Needs poppler-utils and tesseract-ocr
 * (.ci/run and deploy/setup.sh install them); without them the suite says so and is skipped.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { BusClient } from "../shared/runtime/client.js";
import { ocrPdf, probeOcr, type OcrProbe } from "../shared/runtime/documents/ocr.js";
import { MediaStore } from "../shared/runtime/media.js";
import { OCR_HEADER } from "../services/agent-runner/document-text.js";
import { messageText } from "./fakes/openai-server.js";
import { makePdf, makeScannedPdf, renderPages } from "./fixtures/documents.js";
import { ocrImage } from "../shared/runtime/documents/ocr.js";
import { CliClient, TestSystem } from "./harness/system.js";
import { startFileRig, stopFileRig } from "./harness/file-rig.js";

const BWRAP = "/usr/bin/bwrap";
const PAGES = [["INVOICE 4711 from Lurk Corp", "Total due: 128 EUR by March 3"], ["Second page: delivery note 99"]];
const OPTS = { languages: "eng", maxPages: 20, dpi: 200, timeoutMs: 60_000 };
const probe = await probeOcr(BWRAP);
const skip = probe.available ? false : `OCR is not installed here (${probe.reason})`;

describe("OCR of scanned PDFs", { skip }, () => {
  let scanned: Buffer;
  before(async () => {
    scanned = await makeScannedPdf(PAGES);
  });

  it("reads every page's text in order, in the bubblewrap sandbox", async () => {
    assert.equal(probe.sandboxed, true, probe.reason);
    const read = await ocrPdf(scanned, probe, BWRAP, OPTS);
    assert.match(read.text, /INVOICE 4711 from Lurk Corp/);
    assert.match(read.text, /Total due: 128 EUR by March 3/);
    assert.match(read.text, /delivery note 99/);
    assert.ok(read.text.indexOf("INVOICE") < read.text.indexOf("delivery"), "pages in order");
    assert.equal(read.pagesRead, 2);
    assert.equal(read.pageEnds.length, 2);
    assert.equal(read.complete, true);
  });

  it("stops at maxPages and says the reading is incomplete", async () => {
    const read = await ocrPdf(scanned, probe, BWRAP, { ...OPTS, maxPages: 1 });
    assert.equal(read.pagesRead, 1);
    assert.doesNotMatch(read.text, /delivery note/);
  });

  it("refuses what is not a PDF, and stops at once when aborted", async () => {
    await assert.rejects(ocrPdf(Buffer.from("not a pdf at all"), probe, BWRAP, OPTS), (e: Error & { code?: string }) => e.code === "VALIDATION_FAILED" && /cannot be rendered/.test(e.message));
    const abort = new AbortController();
    abort.abort();
    await assert.rejects(ocrPdf(scanned, probe, BWRAP, { ...OPTS, signal: abort.signal }), (e: Error & { code?: string }) => e.code === "ABORTED");
  });

  it("reads an image's text", async () => {
    const [png] = await renderPages([["Error 503: upstream timed out"]]);
    assert.match(await ocrImage(png!, probe, BWRAP, OPTS), /Error 503: upstream timed out/);
    await assert.rejects(ocrImage(Buffer.from("no image"), probe, BWRAP, OPTS), (e: Error & { code?: string }) => e.code === "VALIDATION_FAILED");
  });

  it("says what is missing when a language's data is not installed", async () => {
    const missing: OcrProbe = await probeOcr(BWRAP, "eng+zzz");
    assert.equal(missing.available, false);
    assert.match(missing.reason ?? "", /lacks the language data zzz \(Debian: sudo apt-get install tesseract-ocr-zzz\)/);
  });
});

describe("a scanned PDF sent to a model without PDF input", { skip }, () => {
  let system: TestSystem;
  let media: MediaStore;
  let cli: CliClient;
  let channelNc: Awaited<ReturnType<TestSystem["nats"]["connect"]>>;
  let runnerNc: Awaited<ReturnType<TestSystem["nats"]["connect"]>>;
  before(async () => {
    ({ system, channelNc, runnerNc, media, cli } = await startFileRig({}));
  });
  after(() => stopFileRig({ system, channelNc, runnerNc, media, cli }));

  it("reaches the model as the text OCR read from its pages, under the file's note", async () => {
    const { ref } = await media.put(await makeScannedPdf(PAGES), { mime: "application/pdf", name: "scan.pdf" });
    system.fake.enqueue({ kind: "text", text: "read it" });
    await cli.send("what is due?", { sessionName: "ocr", attachments: [{ kind: "file", mime: "application/pdf", name: "scan.pdf", ref }], timeoutMs: 60_000 });
    const text = messageText(system.fake.requests.at(-1)!.body.messages.at(-1));
    assert.match(text, new RegExp(`media ref ${ref}; its extracted text:\\]\\n${OCR_HEADER.replace(/[[\].;]/g, "\\$&")}\\n`));
    assert.match(text, /INVOICE 4711 from Lurk Corp/);
    assert.match(text, /delivery note 99/);
    // the session keeps the PDF itself with the OCR text: a model with PDF input later gets the PDF
    const history = await new BusClient(runnerNc).call("sessions", "history", { sessionKey: "agent:main:cli:dm:ocr", limit: 10 });
    const blocks = history.records.flatMap((r) => (r.message?.role === "user" ? r.message.content : []));
    const doc = blocks.find((b) => b.type === "document");
    assert.ok(doc && doc.type === "document" && doc.ref === ref && doc.ocrText?.includes("INVOICE 4711"), JSON.stringify(blocks).slice(0, 500));
  });

  it("a scan with no text on it says OCR found none", async () => {
    const { ref } = await media.put(makePdf([[], []]), { mime: "application/pdf", name: "blank.pdf" });
    system.fake.enqueue({ kind: "text", text: "empty" });
    await cli.send("", { sessionName: "ocr-blank", attachments: [{ kind: "file", mime: "application/pdf", name: "blank.pdf", ref }], timeoutMs: 60_000 });
    const text = messageText(system.fake.requests.at(-1)!.body.messages.at(-1));
    assert.ok(text.endsWith(`media ref ${ref}; its extracted text:]\n(no extractable text: its 2 pages are probably scanned images, and OCR found no text on them)`), text);
  });

  it("a PDF with a text layer is read as before, without OCR", async () => {
    const { ref } = await media.put(makePdf([["plain text layer here"]]), { mime: "application/pdf", name: "plain.pdf" });
    system.fake.enqueue({ kind: "text", text: "ok" });
    await cli.send("and this?", { sessionName: "ocr-plain", attachments: [{ kind: "file", mime: "application/pdf", name: "plain.pdf", ref }] });
    const text = messageText(system.fake.requests.at(-1)!.body.messages.at(-1));
    assert.match(text, /plain text layer here/);
    assert.ok(!text.includes(OCR_HEADER));
  });
});

describe("an image sent to a model without vision", { skip }, () => {
  let rig: Awaited<ReturnType<typeof startFileRig>>;
  before(async () => {
    // gpt-3.5-turbo: the registry knows it has no vision
    rig = await startFileRig({ env: { LURKBOT_MODEL: "openai/gpt-3.5-turbo" } });
  });
  after(() => stopFileRig(rig));

  it("reaches the model as the text OCR read in it; the session keeps the image", async () => {
    const [png] = await renderPages([["Error 503: upstream timed out"]]);
    const { ref } = await rig.media.put(png!, { mime: "image/png", name: "screenshot.png" });
    rig.system.fake.enqueue({ kind: "text", text: "seen" });
    await rig.cli.send("what does it say?", { sessionName: "ocr-image", attachments: [{ kind: "image", mime: "image/png", name: "screenshot.png", ref }], timeoutMs: 60_000 });
    const text = messageText(rig.system.fake.requests.at(-1)!.body.messages.at(-1));
    assert.match(text, /\[an image is here, but this model does not take images; the text OCR recognized in it \(it may contain errors\):\]\nError 503: upstream timed out/);
    const history = await new BusClient(rig.runnerNc).call("sessions", "history", { sessionKey: "agent:main:cli:dm:ocr-image", limit: 10 });
    const image = history.records.flatMap((r) => (r.message?.role === "user" ? r.message.content : [])).find((b) => b.type === "image");
    assert.ok(image && image.type === "image" && image.ref === ref && /Error 503/.test(image.ocrText ?? ""), "the image stays, with its text, for a model with vision later");
  });

  it("a model with vision gets the image itself and no OCR runs", async () => {
    const [png] = await renderPages([["Vision sees this"]]);
    const { ref } = await rig.media.put(png!, { mime: "image/png", name: "shot.png" });
    rig.system.fake.enqueue({ kind: "text", text: "seen" });
    await rig.cli.send("/model openai/gpt-4o look", { sessionName: "ocr-vision", attachments: [{ kind: "image", mime: "image/png", name: "shot.png", ref }], timeoutMs: 60_000 });
    const last = rig.system.fake.requests.at(-1)!.body.messages.at(-1)!;
    assert.ok(JSON.stringify(last.content).includes("image_url"), "the image goes as an image");
    assert.ok(!messageText(last).includes("OCR"), "no OCR note");
  });

  it("an image a tool returns reaches the model as the text OCR read in it; the checkpoint keeps both", async () => {
    const [png] = await renderPages([["Disk quota exceeded on /var"]]);
    writeFileSync(join(rig.system.workspace, "alert.png"), png!);
    // the fake's auto mode answers "read X" with a read call, then a tool result with text
    await rig.cli.send("read alert.png", { sessionName: "ocr-tool-image", timeoutMs: 60_000 });
    const sent = rig.system.fake.requests.at(-1)!.body.messages.map((m) => messageText(m)).join("\n");
    assert.match(sent, /\[an image is here, but this model does not take images; the text OCR recognized in it \(it may contain errors\):\]\nDisk quota exceeded on \/var/);
    const history = await new BusClient(rig.runnerNc).call("sessions", "history", { sessionKey: "agent:main:cli:dm:ocr-tool-image", limit: 10 });
    const image = history.records.flatMap((r) => (r.message?.role === "tool_result" ? r.message.content : [])).find((b) => b.type === "image");
    assert.ok(image && image.type === "image" && /Disk quota/.test(image.ocrText ?? "") && (image.dataBase64 || image.ref), "the tool result keeps the image with its text");
  });

  it("a model with vision gets a tool's image itself, without OCR", async () => {
    const [png] = await renderPages([["Only vision reads this"]]);
    writeFileSync(join(rig.system.workspace, "seen.png"), png!);
    await rig.cli.send("/model openai/gpt-4o read seen.png", { sessionName: "ocr-tool-vision", timeoutMs: 60_000 });
    const messages = rig.system.fake.requests.at(-1)!.body.messages;
    assert.ok(JSON.stringify(messages).includes("image_url"), `the image goes as an image: ${JSON.stringify(messages).slice(-1500)}`);
    assert.ok(!messages.map((m) => messageText(m)).join("\n").includes("OCR"), "no OCR note");
  });
});
