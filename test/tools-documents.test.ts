/**
 * The agent's tools read documents (PDF, office files) as text, with the tools actor as a real
 * child process on a real nats-server, called as the agent-runner user: `read` of a PDF and an
 * XLSX in the workspace (extracted in its pool worker, paged by offset and limit), a
 * password-protected PDF and a document over the size cap as errors with their reason;
 * `web_fetch` of a PDF from a local HTTP server (allowed by tools.web.allowPrivateHosts), larger
 * than tools.web.maxBodyBytes, by its type and as a generic type known by its bytes, and a
 * password-protected one (extracted in the actor's document worker thread).
 */
import assert from "node:assert/strict";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { findProgram } from "../shared/runtime/sandbox.js";
import { REPO_ROOT } from "../shared/scripts/paths.js";
import { probeOcr } from "../shared/runtime/documents/ocr.js";
import { makePdf, makeScannedPdf, makeXlsx } from "./fixtures/documents.js";

const ocrReady = (await probeOcr("/usr/bin/bwrap")).available;
import { startToolsActor, textOf, toolCaller, type ToolsActorUnderTest } from "./harness/tools-actor.js";

const REPORT = makePdf([["Quarterly report", "Revenue grew 12% (in EUR)"], ["Outlook: steady"]]);
const LOCKED = makePdf([["Secret plans"]], { encrypted: true });
/** 30 pages of 40 lines: about 70 KB, more than the body cap of the web fixture (16 KB) */
const PAPER = makePdf(Array.from({ length: 30 }, (_, p) => Array.from({ length: 40 }, (_, l) => `paper page ${p + 1} line ${l + 1}`)));

describe("documents through the tools", () => {
  let sut: ToolsActorUnderTest;
  let call: ReturnType<typeof toolCaller>["call"];
  let ws: string;
  let site: Server;
  let port = 0;
  let scanned: Buffer | undefined;
  const url = (path: string) => `http://127.0.0.1:${port}${path}`;

  before(async () => {
    ws = mkdtempSync(join(tmpdir(), "lurk-docs-ws-"));
    writeFileSync(join(ws, "report.pdf"), REPORT);
    writeFileSync(join(ws, "locked.pdf"), LOCKED);
    // an old Word file (saved by LibreOffice), read with the system's catdoc in the sandbox
    writeFileSync(join(ws, "report.doc"), readFileSync(join(REPO_ROOT, "test", "fixtures", "legacy", "report.doc")));
    // a scanned PDF (images of rendered pages, no text layer): read by OCR when the host has it
    if (ocrReady) scanned = await makeScannedPdf([["INVOICE 4711 from Lurk Corp"], ["Total due: 128 EUR by March 3"]]);
    if (scanned) writeFileSync(join(ws, "scan.pdf"), scanned);
    writeFileSync(join(ws, "budget.xlsx"), await makeXlsx([
      { name: "Costs", rows: [["Item", "Amount"], ["Rent", 1200], ["Power, water", 80.5]] },
      { name: "Notes", rows: [["approved", true]] },
    ]));
    // a PDF header and 21 MB of zeros (sparse): over the 20 MB documents are read up to
    const huge = openSync(join(ws, "huge.pdf"), "w");
    writeSync(huge, Buffer.from("%PDF-1.4\n"));
    writeSync(huge, Buffer.from("\n"), 0, 1, 21 * 1024 * 1024);
    closeSync(huge);

    site = createServer((req, res) => {
      switch (req.url) {
        case "/paper.pdf": return res.writeHead(200, { "content-type": "application/pdf" }).end(PAPER);
        case "/download": return res.writeHead(200, { "content-type": "application/octet-stream" }).end(REPORT);
        case "/locked": return res.writeHead(200, { "content-type": "application/pdf" }).end(LOCKED);
        case "/scan.pdf": return res.writeHead(200, { "content-type": "application/pdf" }).end(scanned);
        default: return res.writeHead(404).end();
      }
    });
    port = await new Promise<number>((resolve, reject) => {
      site.once("error", reject);
      site.listen(0, "127.0.0.1", () => resolve((site.address() as AddressInfo).port));
    });
    sut = await startToolsActor(ws, {
      agents: [{ id: "main", default: true, toolProfile: "full" }],
      tools: { outputCapBytes: 8192, timeoutMs: 30_000, web: { allowPrivateHosts: ["127.0.0.1"], maxBodyBytes: 16_384 } },
    });
    ({ call } = toolCaller(() => sut.client));
  });
  after(async () => {
    await sut?.stop();
    site?.close();
    rmSync(ws, { recursive: true, force: true });
  });

  it("read returns a PDF's text as numbered lines, and pages it with offset and limit", async () => {
    const reply = await call("read", { path: "report.pdf" });
    assert.equal(reply.isError, false, textOf(reply));
    const text = textOf(reply);
    assert.match(text, /^report\.pdf: text extracted from a PDF \(2 pages\), \d+ bytes of text as numbered lines:\n/);
    assert.ok(text.endsWith("     1\tQuarterly report\n     2\tRevenue grew 12% (in EUR)\n     3\t\n     4\tOutlook: steady\n"), text);
    const page = await call("read", { path: "report.pdf", offset: 2, limit: 1 });
    assert.match(textOf(page), /\n {5}2\tRevenue grew 12% \(in EUR\)\n\[limit of 1 lines reached: showed lines 2-2 of the text extracted from "report\.pdf" \(\d+ bytes\); the text continues: read again with offset=3\]$/);
    assert.equal(page.truncated?.fullOutputPath, "report.pdf");
  });

  it("read returns an XLSX's sheets as comma-separated rows", async () => {
    const reply = await call("read", { path: "budget.xlsx" });
    assert.equal(reply.isError, false, textOf(reply));
    const lines = textOf(reply).split("\n").slice(1).map((l) => l.replace(/^ *\d+\t/, ""));
    assert.deepEqual(lines, ["Sheet: Costs", "Item,Amount", "Rent,1200", "\"Power, water\",80.5", "", "Sheet: Notes", "approved,TRUE", ""]);
    assert.match(textOf(reply), /^budget\.xlsx: text extracted from an XLSX \(2 sheets\)/);
  });

  it("read returns an old Word (.doc) file's text as numbered lines", { skip: findProgram("catdoc") ? false : "catdoc is not installed here" }, async () => {
    const reply = await call("read", { path: "report.doc" });
    assert.equal(reply.isError, false, textOf(reply));
    assert.match(textOf(reply), /^report\.doc: text extracted from a DOC, \d+ bytes of text as numbered lines:\n {5}1\tQuarterly report\n {5}2\tRevenue grew by 12 percent in Q3\.\n {5}3\tGrüße aus Köln — naïve café\n$/);
  });

  it("read returns a scanned PDF's text recognized by OCR", { skip: ocrReady ? false : "OCR is not installed here" }, async () => {
    const reply = await call("read", { path: "scan.pdf" });
    assert.equal(reply.isError, false, textOf(reply));
    const text = textOf(reply);
    assert.match(text, /^scan\.pdf: text recognized by OCR from a scanned PDF \(2 pages; it may contain errors\), \d+ bytes of text as numbered lines:\n/);
    assert.match(text, /INVOICE 4711 from Lurk Corp/);
    assert.match(text, /Total due: 128 EUR by March 3/);
  });

  it("read of a password-protected PDF or one over the size cap is an error with the reason", async () => {
    const locked = await call("read", { path: "locked.pdf" });
    assert.equal(locked.isError, true);
    assert.equal(textOf(locked), "the text of \"locked.pdf\" (PDF) could not be read: the PDF is password-protected");
    const huge = await call("read", { path: "huge.pdf" });
    assert.equal(huge.isError, true);
    assert.equal(huge.errorCode, "LIMIT_EXCEEDED");
    assert.match(textOf(huge), /^"huge\.pdf" is a PDF of 21\.0 MB, larger than the 20\.0 MB documents are read up to/);
  });

  it("web_fetch returns a PDF's text (past tools.web.maxBodyBytes), by its type or by its bytes", async () => {
    const reply = await call("web_fetch", { url: url("/paper.pdf"), maxChars: 1_000_000 });
    const text = textOf(reply);
    assert.equal(reply.isError, false, text);
    assert.match(text, /^Content-Type: application\/pdf$/m);
    assert.match(text, /^Document: text extracted from a PDF \(30 pages\)$/m);
    assert.match(text, /\n\npaper page 1 line 1\npaper page 1 line 2\n/);
    // the output cap cuts it; the whole text is saved for read
    assert.ok(reply.truncated, "cut at the output cap");
    const saved = await call("read", { path: reply.truncated.fullOutputPath, offset: 29 * 41 + 39, limit: 2 });
    assert.match(textOf(saved), /^ *1228\tpaper page 30 line 39\n *1229\tpaper page 30 line 40\n$/);
    const generic = await call("web_fetch", { url: url("/download") });
    assert.equal(generic.isError, false, textOf(generic));
    assert.match(textOf(generic), /^Document: text extracted from a PDF \(2 pages\)\n\nQuarterly report\nRevenue grew 12% \(in EUR\)\n\nOutlook: steady$/m);
  });

  it("web_fetch of a scanned PDF returns the text OCR recognizes", { skip: ocrReady ? false : "OCR is not installed here" }, async () => {
    const reply = await call("web_fetch", { url: url("/scan.pdf") });
    assert.equal(reply.isError, false, textOf(reply));
    assert.match(textOf(reply), /text recognized by OCR from a scanned PDF \(2 pages; it may contain errors\)/);
    assert.match(textOf(reply), /INVOICE 4711 from Lurk Corp/);
  });

  it("web_fetch of a password-protected PDF is an error with the reason", async () => {
    const reply = await call("web_fetch", { url: url("/locked") });
    assert.equal(reply.isError, true);
    assert.equal(textOf(reply), `the text of ${url("/locked")} (PDF) could not be read: the PDF is password-protected`);
  });
});
