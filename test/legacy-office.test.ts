/**
 * Old binary Word and Excel files (.doc, .xls; shared/runtime/documents/legacy-office.ts) read by
 * the system's catdoc in the bubblewrap sandbox: committed fixtures saved by LibreOffice
 * (test/fixtures/legacy/), read in process through the document reader, by the agent-runner for
 * an attachment, and by the tools actor's `read`. Needs catdoc (.ci/run and deploy/setup.sh
 * install it); without it the suite says so and is skipped.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import extractDocumentText from "../shared/runtime/documents/extract.js";
import { formatOf, sniffDocument } from "../shared/runtime/documents/formats.js";
import { findProgram } from "../shared/runtime/sandbox.js";
import { REPO_ROOT } from "../shared/scripts/paths.js";
import { messageText } from "./fakes/openai-server.js";
import { startFileRig, stopFileRig, type FileRig } from "./harness/file-rig.js";

const fixture = (name: string) => readFileSync(join(REPO_ROOT, "test", "fixtures", "legacy", name));
const skip = findProgram("catdoc") && findProgram("xls2csv") ? false : "catdoc is not installed here (sudo apt-get install catdoc)";

describe("old binary Office files", () => {
  it("are known by type, by extension and by their bytes (an OLE compound file)", () => {
    assert.equal(formatOf("application/msword", "x"), "doc");
    assert.equal(formatOf("application/vnd.ms-excel", undefined), "xls");
    assert.equal(formatOf("application/octet-stream", "Report.DOC"), "doc");
    assert.equal(sniffDocument(fixture("budget.xls"), "budget.xls"), "xls");
    assert.equal(sniffDocument(fixture("report.doc"), "report.doc"), "doc");
    assert.equal(formatOf("application/vnd.ms-powerpoint", "deck.ppt"), "ppt", "read by ppt.ts (legacy-ppt.test.ts), not catdoc");
  });

  it("a Word 97-2003 document's paragraphs, accents and dashes included", { skip }, async () => {
    const result = await extractDocumentText({ format: "doc", bytes: fixture("report.doc"), maxChars: 10_000, maxPages: 10 });
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(result.text, "Quarterly report\nRevenue grew by 12 percent in Q3.\nGrüße aus Köln — naïve café");
    assert.equal(result.complete, true);
    const cut = await extractDocumentText({ format: "doc", bytes: fixture("report.doc"), maxChars: 10, maxPages: 10 });
    assert.ok(cut.ok && cut.text === "Quarterly " && !cut.complete);
  });

  it("an Excel 97-2003 workbook as a block of comma-separated rows per sheet", { skip }, async () => {
    const result = await extractDocumentText({ format: "xls", bytes: fixture("budget.xls"), maxChars: 10_000, maxPages: 10 });
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(result.text, "Sheet 1\nItem,Cost\nRent,1200\nFood,350.5\n\nSheet 2\nRemember the deposit");
    assert.equal(result.pages, 2);
    assert.equal(result.unit, "sheet");
    const first = await extractDocumentText({ format: "xls", bytes: fixture("budget.xls"), maxChars: 10_000, maxPages: 1 });
    assert.ok(first.ok && first.pagesRead === 1 && !first.complete && !first.text.includes("deposit"));
  });

  it("a damaged file is a reason, not an exception", { skip }, async () => {
    const result = await extractDocumentText({ format: "doc", bytes: fixture("broken.doc"), maxChars: 10_000, maxPages: 10 });
    assert.deepEqual(result.ok ? "read" : result.reason, "the file is damaged, password-protected or not really this format");
  });
});

describe("old Office attachments and files through the actors", { skip }, () => {
  let rig: FileRig;
  before(async () => {
    rig = await startFileRig();
  });
  after(() => stopFileRig(rig));

  it("a .doc and an .xls a user sends reach the model with their text", async () => {
    const doc = await rig.media.put(fixture("report.doc"), { mime: "application/msword", name: "report.doc" });
    const xls = await rig.media.put(fixture("budget.xls"), { mime: "application/vnd.ms-excel", name: "budget.xls" });
    rig.system.fake.enqueue({ kind: "text", text: "read them" });
    await rig.cli.send("summarize", { sessionName: "legacy", attachments: [
      { kind: "file", mime: "application/msword", name: "report.doc", ref: doc.ref },
      { kind: "file", mime: "application/vnd.ms-excel", name: "budget.xls", ref: xls.ref },
    ] });
    const text = messageText(rig.system.fake.requests.at(-1)!.body.messages.at(-1));
    assert.ok(text.includes(`media ref ${doc.ref}; its extracted text:]\nQuarterly report\nRevenue grew by 12 percent in Q3.`), text);
    assert.ok(text.includes(`media ref ${xls.ref}; its extracted text:]\nSheet 1\nItem,Cost\nRent,1200`), text);
  });
});
