/**
 * Documents the model reads as text (media.documentTextKb), with the whole system as processes:
 * documents built in memory (test/fixtures/documents.ts) are put in the media store, the
 * agent-runner's document worker (a real worker thread running unpdf, mammoth, jszip and the
 * office readers) extracts their text, and the fake OpenAI server shows what the model received.
 * Covered: a PDF's and a DOCX's text under their notes and in the session; XLSX, PPTX, ODT, ODS
 * and ODP as sheets, slides and paragraphs; a long document cut at the cap with a marker (by
 * page, slide); a PDF past the page cap; a scanned PDF; damaged and password-protected documents
 * and an archive that unpacks past the caps shown to the model with the reason (textError) while
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
import { formatBytes, MediaStore } from "../shared/runtime/media.js";
import { messageText } from "./fakes/openai-server.js";
import { makeDocx, makeOdp, makeOds, makeOdt, makePdf, makePptx, makeXlsx } from "./fixtures/documents.js";
import { CliClient, TestSystem } from "./harness/system.js";
import { startFileRig, stopFileRig } from "./harness/file-rig.js";

const DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const PPTX_MIME = "application/vnd.openxmlformats-officedocument.presentationml.presentation";
const ODT_MIME = "application/vnd.oasis.opendocument.text";
const ODS_MIME = "application/vnd.oasis.opendocument.spreadsheet";
const CONFIG = { media: { documentTextKb: 4, inlineTextKb: 600, ocr: { enabled: false } } };
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

describe("document text extraction", () => {
  let system: TestSystem;
  let channelNc: NatsConnection;
  let runnerNc: NatsConnection;
  let media: MediaStore;
  let cli: CliClient;

  before(async () => {
    ({ system, channelNc, runnerNc, media, cli } = await startFileRig({ config: CONFIG }));
  });
  after(() => stopFileRig({ system, channelNc, runnerNc, media, cli }));
  beforeEach(() => system.fake.reset());

  const lastUserText = (i = 0) => messageText(system.fake.requests[i]!.body.messages.at(-1));
  const history = async (session: string) => JSON.stringify((await new BusClient(runnerNc).call("sessions", "history", { sessionKey: `agent:main:cli:dm:${session}`, limit: 20 })).records);
  const refNote = (name: string, mime: string, ref: string) => new RegExp(`\\[attachment ${escape(name)} \\(${escape(mime)}[^)]*\\), media ref ${ref}: the media_save tool saves it into the workspace\\]`);
  /** the note of the attachment `name` in `text`, with its text up to the next attachment's note */
  const noteOf = (text: string, name: string) => {
    const start = text.indexOf(`[attachment ${name} `);
    assert.ok(start >= 0, `${name} has a note`);
    const next = text.indexOf("[attachment ", start + 1);
    return text.slice(start, next < 0 ? undefined : next);
  };
  /** the note of a file whose text could not be read, with the reason */
  const errorNote = (name: string, mime: string, ref: string, reason: string) => `[attachment ${name} (${mime}), media ref ${ref} (its text could not be read: ${reason}): the media_save tool saves it into the workspace]`;
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

  it("XLSX, PPTX, ODT, ODS and ODP reach the model as their sheets, slides and paragraphs (by type, or a generic type and the name)", async () => {
    const files = await Promise.all([
      makeXlsx([
        { name: "Budget", rows: [["Item", "Cost", "Paid"], ["Rent, office", 1200.5, true], [null, null, "due \"soon\""]] },
        { name: "Empty", rows: [] },
        { name: "Notes", rows: [["a & b <c>"]] },
      ]).then((b) => media.put(b, { mime: XLSX_MIME, name: "budget.xlsx" })),
      makePptx([{ shapes: [["Launch plan"], ["Ship in May", "Tell the press"]], notes: "Mention the budget" }, { shapes: [] }, { shapes: [["Questions?"]] }])
        .then((b) => media.put(b, { mime: "application/octet-stream", name: "plan.pptx" })),
      makeOdt("Minutes", ["Present: Ana & Bo", "Next meeting <Tuesday>"]).then((b) => media.put(b, { mime: ODT_MIME, name: "minutes.odt" })),
      makeOds([{ name: "Stock", rows: [["Fruit", "Qty"], ["apples", 3], ["pears", 2.5]] }]).then((b) => media.put(b, { mime: ODS_MIME, name: "stock.ods" })),
      makeOdp([{ texts: ["Welcome", "Agenda"], notes: "Smile" }, { texts: ["Thanks"] }]).then((b) => media.put(b, { mime: "application/octet-stream", name: "talk.odp" })),
    ]);
    const [xlsx, pptx, odt, ods, odp] = files.map((f) => f.ref);
    system.fake.enqueue({ kind: "text", text: "five documents" });
    const reply = await cli.send("read all", { sessionName: "office", attachments: [
      { kind: "file", mime: XLSX_MIME, name: "budget.xlsx", ref: xlsx },
      { kind: "file", mime: "application/octet-stream", name: "plan.pptx", ref: pptx },
      { kind: "file", mime: ODT_MIME, name: "minutes.odt", ref: odt },
      { kind: "file", mime: ODS_MIME, name: "stock.ods", ref: ods },
      { kind: "file", mime: "application/octet-stream", name: "talk.odp", ref: odp },
    ] });
    assert.equal(reply.text, "five documents");
    const text = lastUserText();
    const note = (name: string) => noteOf(text, name).trimEnd();
    assert.equal(note("budget.xlsx"), `[attachment budget.xlsx (${XLSX_MIME}), media ref ${xlsx}; its extracted text:]\nSheet: Budget\nItem,Cost,Paid\n"Rent, office",1200.5,TRUE\n,,"due ""soon"""\n\nSheet: Notes\na & b <c>`);
    assert.equal(note("plan.pptx"), `[attachment plan.pptx (application/octet-stream), media ref ${pptx}; its extracted text:]\nSlide 1:\nLaunch plan\nShip in May\nTell the press\nSpeaker notes:\nMention the budget\n\nSlide 3:\nQuestions?`);
    assert.equal(note("minutes.odt"), `[attachment minutes.odt (${ODT_MIME}), media ref ${odt}; its extracted text:]\nMinutes\n\nPresent: Ana & Bo\n\nNext meeting <Tuesday>`);
    assert.equal(note("stock.ods"), `[attachment stock.ods (${ODS_MIME}), media ref ${ods}; its extracted text:]\nSheet: Stock\nFruit,Qty\napples,3\npears,2.5`, "numbers as stored, not as shown (3.00)");
    assert.equal(note("talk.odp"), `[attachment talk.odp (application/octet-stream), media ref ${odp}; its extracted text:]\nSlide 1:\nWelcome\nAgenda\nSpeaker notes:\nSmile\n\nSlide 2:\nThanks`);
    assert.ok((await history("office")).includes("Tell the press"), "the session keeps the text");
  });

  it("a long document is cut at media.documentTextKb with a marker (naming the page, slide or sheet); a PDF is read up to its page cap", async () => {
    const longPdf = makePdf(Array.from({ length: 30 }, (_, p) => Array.from({ length: 30 }, (_, l) => `line ${l + 1} of page ${p + 1}, with some words`)));
    const longDocx = makeDocx(Array.from({ length: 300 }, (_, i) => `Paragraph ${i + 1} says something.`));
    const manyPages = makePdf(Array.from({ length: 201 }, (_, p) => [`p${p + 1}`]));
    const longPptx = await makePptx(Array.from({ length: 30 }, (_, i) => ({ shapes: [Array.from({ length: 8 }, (_, l) => `point ${l + 1} of slide ${i + 1}`)] })));
    const longXlsx = await makeXlsx([{ name: "Big", rows: Array.from({ length: 400 }, (_, r) => [`row ${r + 1}`, r * 1.5]) }, { name: "Second", rows: [["never read"]] }]);
    const [a, b, c, d, e] = await Promise.all([
      media.put(longPdf, { mime: "application/pdf", name: "long.pdf" }),
      media.put(longDocx, { mime: DOCX_MIME, name: "long.docx" }),
      media.put(manyPages, { mime: "application/pdf", name: "pages.pdf" }),
      media.put(longPptx, { mime: PPTX_MIME, name: "long.pptx" }),
      media.put(longXlsx, { mime: XLSX_MIME, name: "long.xlsx" }),
    ]);
    system.fake.enqueue({ kind: "text", text: "long ones" });
    await cli.send("read these", { sessionName: "long", attachments: [
      { kind: "file", mime: "application/pdf", name: "long.pdf", ref: a.ref },
      { kind: "file", mime: DOCX_MIME, name: "long.docx", ref: b.ref },
      { kind: "file", mime: "application/pdf", name: "pages.pdf", ref: c.ref },
      { kind: "file", mime: PPTX_MIME, name: "long.pptx", ref: d.ref },
      { kind: "file", mime: XLSX_MIME, name: "long.xlsx", ref: e.ref },
    ] });
    const text = lastUserText();
    const part = (name: string) => noteOf(text, name);
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

    const pptxPart = part("long.pptx");
    const slideCut = new RegExp(`^[^]*\\nSlide (\\d+):\\n[^[]*\\n\\n\\[The text is cut here: the above is its first [\\d.]+ KB, through slide (\\d+) of 30\\. The media_save tool saves the whole file \\(media ref ${d.ref}\\) into the workspace\\.\\]\\n?$`);
    assert.match(pptxPart, /its extracted text:\]\nSlide 1:\npoint 1 of slide 1\n/);
    const [, lastSlide, markerSlide] = slideCut.exec(pptxPart) ?? assert.fail(pptxPart.slice(-400));
    assert.equal(markerSlide, lastSlide, "the marker names the slide the text stops on");
    assert.ok(Buffer.byteLength(pptxPart.slice(pptxPart.indexOf("\n") + 1)) <= 4 * 1024);

    const xlsxPart = part("long.xlsx");
    assert.match(xlsxPart, new RegExp(`its extracted text:\\]\\nSheet: Big\\nrow 1,0\\nrow 2,1\\.5\\n[^]*\\n\\n\\[The text is cut here: the above is its first [\\d.]+ KB, through sheet 1 of 2\\. The media_save tool`));
    assert.ok(!xlsxPart.includes("never read"));
  });

  it("a PDF without a text layer (scanned pages) gets a note saying there is no extractable text", async () => {
    const scanned = makePdf([[], []]);
    const { ref } = await media.put(scanned, { mime: "application/pdf", name: "scan.pdf" });
    system.fake.enqueue({ kind: "text", text: "it is a scan" });
    await cli.send("", { sessionName: "scan", attachments: [{ kind: "file", mime: "application/pdf", name: "scan.pdf", ref }] });
    assert.ok(lastUserText().endsWith(`media ref ${ref}; its extracted text:]\n(no extractable text: its pages are probably scanned images, and OCR is not available)`), lastUserText());
  });

  it("damaged and password-protected documents show the model why their text could not be read, and the run answers; other documents are still read", async () => {
    /** how Office stores an encrypted XLSX: an OLE compound file, not a zip */
    const encryptedXlsx = Buffer.concat([Buffer.from("d0cf11e0a1b11ae1", "hex"), Buffer.alloc(1_000)]);
    const [damaged, locked, fine, lockedOdt, lockedXlsx, notZip] = await Promise.all([
      media.put(Buffer.from("%PDF-1.4 tiny"), { mime: "application/pdf", name: "broken.pdf" }),
      media.put(makePdf([["secret"]], { encrypted: true }), { mime: "application/pdf", name: "locked.pdf" }),
      media.put(report, { mime: "application/octet-stream", name: "fine.pdf" }),
      makeOdt("Secret", ["hidden"], { encrypted: true }).then((b) => media.put(b, { mime: ODT_MIME, name: "locked.odt" })),
      media.put(encryptedXlsx, { mime: XLSX_MIME, name: "locked.xlsx" }),
      media.put(Buffer.from("PK but not really a zip"), { mime: PPTX_MIME, name: "broken.pptx" }),
    ]);
    system.fake.enqueue({ kind: "text", text: "one of six" });
    const reply = await cli.send("six files", { sessionName: "bad", attachments: [
      { kind: "file", mime: "application/pdf", name: "broken.pdf", ref: damaged.ref },
      { kind: "file", mime: "application/pdf", name: "locked.pdf", ref: locked.ref },
      { kind: "file", mime: "application/octet-stream", name: "fine.pdf", ref: fine.ref },
      { kind: "file", mime: ODT_MIME, name: "locked.odt", ref: lockedOdt.ref },
      { kind: "file", mime: XLSX_MIME, name: "locked.xlsx", ref: lockedXlsx.ref },
      { kind: "file", mime: PPTX_MIME, name: "broken.pptx", ref: notZip.ref },
    ] });
    assert.equal(reply.text, "one of six");
    const text = lastUserText();
    assert.ok(text.includes(errorNote("broken.pdf", "application/pdf", damaged.ref, "it is not a valid PDF (damaged, or another kind of file)")), text);
    assert.ok(text.includes(errorNote("locked.pdf", "application/pdf", locked.ref, "the PDF is password-protected")), text);
    assert.ok(text.includes(errorNote("locked.odt", ODT_MIME, lockedOdt.ref, "it is password-protected")), text);
    assert.ok(text.includes(errorNote("locked.xlsx", XLSX_MIME, lockedXlsx.ref, "it is password-protected (encrypted), or an old binary Office file under a new name")), text);
    assert.ok(text.includes(errorNote("broken.pptx", PPTX_MIME, notZip.ref, "it is not a valid PPTX (damaged, or another kind of file)")), text);
    assert.ok(text.includes(`fine.pdf (application/octet-stream), media ref ${fine.ref}; its extracted text:]\nQuarterly report`), text);
    assert.ok(!/\n\s+at |node_modules|\/work\/|jszip/.test(text), "no stack, path or library message reaches the model");
    assert.ok((await history("bad")).includes("the PDF is password-protected"), "the session keeps the reason");
  });

  it("an office file that unpacks past the zip caps (one part, or all parts together) is refused with the reason, and the run answers", async () => {
    // a few kilobytes each: white space deflates about a thousand to one
    const [onePart, allParts] = await Promise.all([
      makeXlsx([{ name: "S", rows: [["bomb"]] }], { padding: 24 * 1024 * 1024 }),
      makeXlsx(["a", "b", "c"].map((name) => ({ name, rows: [[name]] })), { padding: 18 * 1024 * 1024 }),
    ]);
    const wordBomb = makeDocx(["bomb"], { padding: 24 * 1024 * 1024 });
    assert.ok(onePart.length < 200_000 && allParts.length < 200_000 && wordBomb.length < 200_000, `small archives (${onePart.length}, ${allParts.length}, ${wordBomb.length} bytes)`);
    const [big, many, word] = await Promise.all([
      media.put(onePart, { mime: XLSX_MIME, name: "bomb.xlsx" }),
      media.put(allParts, { mime: "application/octet-stream", name: "bombs.xlsx" }),
      media.put(wordBomb, { mime: DOCX_MIME, name: "bomb.docx" }),
    ]);
    system.fake.enqueue({ kind: "text", text: "refused" });
    const reply = await cli.send("open these", { sessionName: "bomb", attachments: [
      { kind: "file", mime: XLSX_MIME, name: "bomb.xlsx", ref: big.ref },
      { kind: "file", mime: "application/octet-stream", name: "bombs.xlsx", ref: many.ref },
      { kind: "file", mime: DOCX_MIME, name: "bomb.docx", ref: word.ref },
    ] });
    assert.equal(reply.text, "refused");
    const text = lastUserText();
    assert.ok(text.includes(errorNote("bomb.xlsx", XLSX_MIME, big.ref, "one of its parts unpacks to more than 20 MB, more than is read")), text);
    assert.ok(text.includes(errorNote("bombs.xlsx", "application/octet-stream", many.ref, "its parts unpack to more than 50 MB, more than is read")), text);
    assert.ok(text.includes(errorNote("bomb.docx", DOCX_MIME, word.ref, "one of its parts unpacks to more than 20 MB, more than is read")), text);
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
