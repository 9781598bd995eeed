/**
 * PDF and DOCX attachments the model reads as text (media.documentTextKb), with the whole system
 * as processes: documents built in memory (test/fixtures/documents.ts) are put in the media store,
 * the agent-runner's document worker (a real worker thread running unpdf and mammoth) extracts
 * their text, and the fake OpenAI server shows what the model received. Covered: a PDF's and a
 * DOCX's text under their notes and in the session; a long document cut at the cap with a marker;
 * a PDF past the page cap; a scanned PDF; damaged and password-protected PDFs staying refs while
 * the run answers; the budget shared with text files; `documentTextKb: 0`. In process: the worker
 * pool's per-document deadline (the worker is terminated) and its idle stop.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { DocumentPool } from "../services/agent-runner/document-pool.js";
import { BusClient } from "../shared/runtime/client.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { formatBytes, MediaStore } from "../shared/runtime/media.js";
import { messageText } from "./fakes/openai-server.js";
import { makeDocx, makePdf } from "./fixtures/documents.js";
import { CliClient, TestSystem } from "./harness/system.js";

const DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const CONFIG = { media: { documentTextKb: 4, inlineTextKb: 600 } };
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

describe("document text extraction", () => {
  let system: TestSystem;
  let channelNc: NatsConnection;
  let runnerNc: NatsConnection;
  let media: MediaStore;
  let cli: CliClient;

  before(async () => {
    system = await TestSystem.start({ config: CONFIG });
    channelNc = await system.nats.connect("channel-telegram");
    runnerNc = await system.nats.connect("agent-runner");
    media = new MediaStore(channelNc, { ...MEDIA_DEFAULTS });
    cli = await CliClient.connect(system.nats);
  });
  after(async () => {
    await cli?.close();
    await channelNc?.close();
    await runnerNc?.close();
    await system?.stop();
  });
  beforeEach(() => system.fake.reset());

  const lastUserText = (i = 0) => messageText(system.fake.requests[i]!.body.messages.at(-1));
  const history = async (session: string) => JSON.stringify((await new BusClient(runnerNc).call("sessions", "history", { sessionKey: `agent:main:cli:dm:${session}`, limit: 20 })).records);
  const refNote = (name: string, mime: string, ref: string) => new RegExp(`\\[attachment ${escape(name)} \\(${escape(mime)}[^)]*\\), media ref ${ref}: the media_save tool saves it into the workspace\\]`);
  const report = makePdf([["Quarterly report", "Revenue grew 12% (in EUR)"], ["Outlook: steady"]]);

  it("a PDF's text reaches the model under its note, and the session keeps it", async () => {
    const { ref } = await media.put(report, { mime: "application/pdf", name: "report.pdf" });
    system.fake.enqueue({ kind: "text", text: "Revenue grew." });
    const reply = await cli.send("summarize", { sessionName: "pdf", attachments: [{ kind: "file", mime: "application/pdf", name: "report.pdf", size: report.length, ref }] });
    assert.equal(reply.text, "Revenue grew.");
    const expected = `[attachment report.pdf (application/pdf, ${formatBytes(report.length)}), media ref ${ref}; its extracted text:]\nQuarterly report\nRevenue grew 12% (in EUR)\n\nOutlook: steady`;
    assert.ok(lastUserText().endsWith(expected), lastUserText());
    assert.ok((await history("pdf")).includes("Revenue grew 12% (in EUR)"), "the session keeps the text");
  });

  it("a DOCX's text reaches the model (a generic type with a .docx name), and the session keeps it", async () => {
    const docx = makeDocx(["Meeting notes", "Decide on the venue & budget <soon>."]);
    const { ref } = await media.put(docx, { mime: "application/octet-stream", name: "notes.docx" });
    system.fake.enqueue({ kind: "text", text: "Venue and budget." });
    await cli.send("what's in it?", { sessionName: "docx", attachments: [{ kind: "file", mime: "application/octet-stream", name: "notes.docx", ref }] });
    assert.ok(lastUserText().endsWith(`[attachment notes.docx (application/octet-stream), media ref ${ref}; its extracted text:]\nMeeting notes\n\nDecide on the venue & budget <soon>.`), lastUserText());
    assert.ok((await history("docx")).includes("Decide on the venue & budget <soon>."), "the session keeps the text");
  });

  it("a long document is cut at media.documentTextKb with a marker; a PDF is read up to its page cap", async () => {
    const longPdf = makePdf(Array.from({ length: 30 }, (_, p) => Array.from({ length: 30 }, (_, l) => `line ${l + 1} of page ${p + 1}, with some words`)));
    const longDocx = makeDocx(Array.from({ length: 300 }, (_, i) => `Paragraph ${i + 1} says something.`));
    const manyPages = makePdf(Array.from({ length: 201 }, (_, p) => [`p${p + 1}`]));
    const [a, b, c] = await Promise.all([
      media.put(longPdf, { mime: "application/pdf", name: "long.pdf" }),
      media.put(longDocx, { mime: DOCX_MIME, name: "long.docx" }),
      media.put(manyPages, { mime: "application/pdf", name: "pages.pdf" }),
    ]);
    system.fake.enqueue({ kind: "text", text: "long ones" });
    await cli.send("read these", { sessionName: "long", attachments: [
      { kind: "file", mime: "application/pdf", name: "long.pdf", ref: a.ref },
      { kind: "file", mime: DOCX_MIME, name: "long.docx", ref: b.ref },
      { kind: "file", mime: "application/pdf", name: "pages.pdf", ref: c.ref },
    ] });
    const text = lastUserText();
    const part = (name: string) => {
      const start = text.indexOf(`[attachment ${name} `);
      assert.ok(start >= 0, `${name} has a note`);
      const next = text.indexOf("[attachment ", start + 1);
      return text.slice(start, next < 0 ? undefined : next);
    };
    const pdfPart = part("long.pdf");
    assert.match(pdfPart, new RegExp(`^\\[attachment long\\.pdf \\(application/pdf\\), media ref ${a.ref}; its extracted text:\\]\\nline 1 of page 1, with some words\\n`));
    const pdfCut = new RegExp(`, with some words\\n\\n\\[The text is cut here: the above is its first [\\d.]+ KB, through page (\\d+) of 30\\. The media_save tool saves the whole file \\(media ref ${a.ref}\\) into the workspace\\.\\]\\n?$`);
    assert.match(pdfPart, pdfCut, "cut after a whole line, the marker says where and how to get it all");
    const lastPage = Number(pdfCut.exec(pdfPart)![1]);
    assert.ok(pdfPart.includes(`of page ${lastPage}, with`) && !pdfPart.includes(`of page ${lastPage + 1}, with`), "the marker names the page the text stops on");
    const body = pdfPart.slice(pdfPart.indexOf("\n") + 1);
    assert.ok(Buffer.byteLength(body) <= 4 * 1024, `at most documentTextKb with the marker (${Buffer.byteLength(body)} bytes)`);

    const docxPart = part("long.docx");
    assert.match(docxPart, new RegExp(`its extracted text:\\]\\nParagraph 1 says something\\.\\n\\n[^]*says something\\.\\n\\n\\[The text is cut here: the above is its first [\\d.]+ KB of ${escape(formatBytes(Buffer.byteLength(Array.from({ length: 300 }, (_, i) => `Paragraph ${i + 1} says something.`).join("\n\n"))))}\\. The media_save tool saves the whole file \\(media ref ${b.ref}\\)`));
    assert.ok(Buffer.byteLength(docxPart.slice(docxPart.indexOf("\n") + 1)) <= 4 * 1024);

    const pagesPart = part("pages.pdf");
    assert.ok(pagesPart.includes("\n\np200\n\n[Only the first 200 of 201 pages were read. The media_save tool saves the whole file"), pagesPart.slice(-300));
    assert.ok(!pagesPart.includes("p201"));
  });

  it("a PDF without a text layer (scanned pages) gets a note saying there is no extractable text", async () => {
    const scanned = makePdf([[], []]);
    const { ref } = await media.put(scanned, { mime: "application/pdf", name: "scan.pdf" });
    system.fake.enqueue({ kind: "text", text: "it is a scan" });
    await cli.send("", { sessionName: "scan", attachments: [{ kind: "file", mime: "application/pdf", name: "scan.pdf", ref }] });
    assert.ok(lastUserText().endsWith(`media ref ${ref}; its extracted text:]\n(no extractable text: its pages are probably scanned images, and OCR is not available)`), lastUserText());
  });

  it("damaged and password-protected PDFs stay refs (the reason is logged) and the run answers; other documents are still read", async () => {
    const [damaged, locked, fine] = await Promise.all([
      media.put(Buffer.from("%PDF-1.4 tiny"), { mime: "application/pdf", name: "broken.pdf" }),
      media.put(makePdf([["secret"]], { encrypted: true }), { mime: "application/pdf", name: "locked.pdf" }),
      media.put(report, { mime: "application/octet-stream", name: "fine.pdf" }),
    ]);
    system.fake.enqueue({ kind: "text", text: "one of three" });
    const reply = await cli.send("three files", { sessionName: "bad", attachments: [
      { kind: "file", mime: "application/pdf", name: "broken.pdf", ref: damaged.ref },
      { kind: "file", mime: "application/pdf", name: "locked.pdf", ref: locked.ref },
      { kind: "file", mime: "application/octet-stream", name: "fine.pdf", ref: fine.ref },
    ] });
    assert.equal(reply.text, "one of three");
    const text = lastUserText();
    assert.match(text, refNote("broken.pdf", "application/pdf", damaged.ref));
    assert.match(text, refNote("locked.pdf", "application/pdf", locked.ref));
    assert.ok(text.includes(`fine.pdf (application/octet-stream), media ref ${fine.ref}; its extracted text:]\nQuarterly report`), text);
    const log = system.actors.get("agent-runner")!.output();
    assert.match(log, /not a valid PDF/);
    assert.match(log, /password-protected/);
  });

  it("documents share a message's inline budget with text files; text that would not fit in the first transcript append stays a ref", async () => {
    // the budget is bus.maxPayloadBytes (512 KiB) less 32 KiB, less the inputs; this text's JSON is 489,448 bytes
    const notes = `${"n".repeat(99)}\n`.repeat(4_846);
    const [big, doc] = await Promise.all([
      media.put(Buffer.from(notes), { mime: "text/plain", name: "big.txt" }),
      media.put(report, { mime: "application/pdf", name: "late.pdf" }),
    ]);
    system.fake.enqueue({ kind: "text", text: "big" }, { kind: "text", text: "bigger" }, { kind: "text", text: "biggest" });
    const first = await cli.send("both", { sessionName: "budget", attachments: [
      { kind: "file", mime: "text/plain", name: "big.txt", ref: big.ref },
      { kind: "file", mime: "application/pdf", name: "late.pdf", ref: doc.ref },
    ] });
    assert.equal(first.text, "big");
    const text = lastUserText();
    assert.ok(text.includes(`big.txt (text/plain), media ref ${big.ref}; its text:]\nnnn`), "the text file is inline");
    assert.match(text, refNote("late.pdf", "application/pdf", doc.ref), "too little budget left for the document");
    // with about 10 KB less text the document fits
    const { ref: midRef } = await media.put(Buffer.from(`${"k".repeat(99)}\n`.repeat(4_750)), { mime: "text/plain", name: "mid.txt" });
    await cli.send("both again", { sessionName: "budget2", attachments: [
      { kind: "file", mime: "text/plain", name: "mid.txt", ref: midRef },
      { kind: "file", mime: "application/pdf", name: "late.pdf", ref: doc.ref },
    ] });
    assert.ok(lastUserText(1).includes(`mid.txt (text/plain), media ref ${midRef}; its text:]\nkkk`));
    assert.ok(lastUserText(1).includes(`late.pdf (application/pdf), media ref ${doc.ref}; its extracted text:]\nQuarterly report`), "the document is read");
    // 518,000 bytes of text are under inlineTextKb but would take the first transcript append past the
    // bus payload cap: a ref, and the run answers
    const { ref: hugeRef } = await media.put(Buffer.from(`${"m".repeat(99)}\n`.repeat(5_180)), { mime: "text/plain", name: "huge.txt" });
    const third = await cli.send("huge", { sessionName: "budget3", attachments: [{ kind: "file", mime: "text/plain", name: "huge.txt", ref: hugeRef }] });
    assert.equal(third.text, "biggest");
    assert.match(lastUserText(2), refNote("huge.txt", "text/plain", hugeRef));
  });

  it("media.documentTextKb 0 turns it off: the PDF read before stays a ref", async () => {
    const { ref } = await media.put(report, { mime: "application/pdf", name: "report.pdf" });
    system.fake.enqueue({ kind: "text", text: "read" }, { kind: "text", text: "not read" });
    await cli.send("on", { sessionName: "off", attachments: [{ kind: "file", mime: "application/pdf", name: "report.pdf", ref }] });
    assert.ok(lastUserText().includes("; its extracted text:]\nQuarterly report"), "read with the feature on");
    await system.actors.get("agent-runner")!.stop();
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({ media: { ...CONFIG.media, documentTextKb: 0 } }));
    await system.startActor("agent-runner");
    await cli.send("off", { sessionName: "off", attachments: [{ kind: "file", mime: "application/pdf", name: "report.pdf", ref }] });
    assert.match(lastUserText(1), refNote("report.pdf", "application/pdf", ref));
    assert.ok(!lastUserText(1).includes("Quarterly report"));
  });
});

describe("the document worker (in process)", () => {
  it("a document over its time is stopped with its worker, the next one is read, and the idle worker goes away", async () => {
    const warnings: unknown[] = [];
    const pool = new DocumentPool(1_000, { warn: (...args: unknown[]) => warnings.push(args) });
    try {
      assert.equal(await pool.threads(), 0, "no worker before the first document");
      const slow = makePdf(Array.from({ length: 3_000 }, (_, p) => Array.from({ length: 40 }, (_, l) => `page ${p + 1} line ${l + 1} lorem ipsum dolor sit amet`)));
      const started = Date.now();
      const timedOut = await pool.extract("pdf", slow, { maxChars: 50_000_000, maxPages: 3_000 });
      assert.deepEqual(timedOut, { ok: false, reason: "reading it took longer than 1 s (media.documentTimeoutMs)" });
      assert.ok(Date.now() - started < 5_000, "stopped at its deadline");
      const next = await pool.extract("docx", makeDocx(["after the timeout"]), { maxChars: 1_000, maxPages: 200 });
      assert.deepEqual(next, { ok: true, text: "after the timeout", complete: true, totalBytes: 17 });
      assert.equal(await pool.threads(), 1);
      await waitFor(async () => (await pool.threads()) === 0, 15_000, "the idle worker to stop");
      assert.deepEqual(warnings, []);
    } finally {
      await pool.close();
    }
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
