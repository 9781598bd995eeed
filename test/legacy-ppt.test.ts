/**
 * Old binary PowerPoint files (.ppt, .pps, .pot; shared/runtime/documents/ppt.ts, on cfb.ts) read
 * in pure TypeScript: a deck LibreOffice saved (test/fixtures/legacy/deck.ppt: a title
 * placeholder, text boxes, "Grüße" and "你好世界", a line break, an empty slide, speaker notes;
 * made by LibreOffice 7.4's `soffice --headless --convert-to ppt` from a PPTX with a slide master
 * and notes, with /org.openoffice.Office.Common/Filter/Microsoft/Export/EnablePowerPointPreview
 * false in its profile so no 440 KB preview bitmap is stored), decks laid out as PowerPoint writes them
 * (test/fixtures/ppt.ts), and damaged, hostile and foreign files, which give a reason and never
 * throw. Read in process, by the agent-runner for an attachment (its document worker), by the
 * tools actor's `read` (its pool worker) and by `web_fetch` (its document thread).
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import extractDocumentText from "../shared/runtime/documents/extract.js";
import { formatOf, sniffDocument } from "../shared/runtime/documents/formats.js";
import { MAX_RECORDS } from "../shared/runtime/documents/ppt.js";
import { REPO_ROOT } from "../shared/scripts/paths.js";
import { makeCompoundFile } from "./fixtures/cfb.js";
import { atom, container, DECK_TEXT, makePowerPointDeck, u32s } from "./fixtures/ppt.js";
import { messageText } from "./fakes/openai-server.js";
import { startFileRig, stopFileRig, type FileRig } from "./harness/file-rig.js";
import { startToolsActor, textOf, toolCaller, type ToolsActorUnderTest } from "./harness/tools-actor.js";

const fixture = (name: string) => readFileSync(join(REPO_ROOT, "test", "fixtures", "legacy", name));
const DECK = fixture("deck.ppt");
/** what LibreOffice's deck reads as (as its PPTX source does through the PPTX reader) */
const DECK_PPT_TEXT = "Slide 1:\nQuarterly review\nRevenue grew by 12 percent\nCosts stayed flat\nSpeaker notes:\nMention the new office\n\n"
  + "Slide 2:\nGrüße aus Köln\n你好世界\nnaïve café — 3 € each\nsecond line\nSpeaker notes:\nSpeak slowly: 谢谢\n\n"
  + "Slide 4:\nNext steps\nCall Anna on Monday";
const NOT_VALID = "it is not a valid PPT (damaged, or another kind of file)";
const PPT_MIME = "application/vnd.ms-powerpoint";
/** cut inside its FAT: the directory's sectors are past the end */
const TRUNCATED = DECK.subarray(0, 6000);
const read = (bytes: Uint8Array, maxChars = 100_000, maxPages = 200) => extractDocumentText({ format: "ppt", bytes, maxChars, maxPages });

describe("old binary PowerPoint files", () => {
  it("are known by type, by extension (.ppt, .pps, .pot) and by their bytes (an OLE compound file)", () => {
    assert.equal(formatOf(PPT_MIME, "deck.ppt"), "ppt");
    assert.equal(formatOf("application/mspowerpoint", undefined), "ppt");
    assert.equal(formatOf("application/octet-stream", "Show.PPS"), "ppt");
    assert.equal(formatOf("", "template.pot"), "ppt");
    assert.equal(sniffDocument(DECK, "deck.ppt"), "ppt");
    assert.equal(sniffDocument(DECK, "slides.pps"), "ppt");
    assert.equal(sniffDocument(DECK), undefined, "a compound file says nothing of its kind without a name");
  });

  it("LibreOffice's deck: a block per slide in order, placeholders and text boxes, line breaks, non-Latin text, speaker notes", async () => {
    const result = await read(DECK);
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(result.text, DECK_PPT_TEXT);
    assert.equal(result.complete, true);
    assert.equal(result.pages, 4);
    assert.equal(result.unit, "slide");
    assert.deepEqual(result.pageEnds, [108, 204, 204, 245], "the empty third slide adds nothing");
  });

  it("stops at the page and character caps", async () => {
    const first = await read(DECK, 100_000, 1);
    assert.ok(first.ok && first.pagesRead === 1 && !first.complete && first.text.endsWith("Mention the new office"), JSON.stringify(first));
    const cut = await read(DECK, 20);
    assert.ok(cut.ok && cut.text === "Slide 1:\nQuarterly r" && !cut.complete, JSON.stringify(cut));
  });

  it("PowerPoint's layout: list text through references, ASCII text bytes, fields, groups and notes; text in both places read once", async () => {
    for (const opts of [{}, { currentUser: false }, { noPersist: true }]) {
      const result = await read(makePowerPointDeck(opts));
      assert.ok(result.ok, JSON.stringify(result));
      assert.equal(result.text, DECK_TEXT, JSON.stringify(opts));
      assert.equal(result.pages, 2);
    }
  });

  it("a deck saved twice reads as its last save (the newer persist directory wins)", async () => {
    const result = await read(makePowerPointDeck({ resaved: true }));
    assert.ok(result.ok, JSON.stringify(result));
    assert.ok(result.text.endsWith("Slide 2:\nGrüße 你好\nRevised page"), result.text);
    assert.equal(result.pages, 2);
  });

  it("damaged, foreign and encrypted files give a reason, not an exception", async () => {
    const cases: [string, Uint8Array, string][] = [
      ["truncated", TRUNCATED, NOT_VALID],
      ["a Word file", fixture("report.doc"), NOT_VALID],
      ["a few bytes", fixture("broken.doc"), NOT_VALID],
      ["a compound file without a presentation", makeCompoundFile({ Other: Buffer.from("x") }).bytes, NOT_VALID],
      ["garbage records", makeCompoundFile({ "PowerPoint Document": Buffer.alloc(5000, 0xff) }).bytes, NOT_VALID],
      ["encrypted", makePowerPointDeck({ encrypted: true }), "it is password-protected"],
      ["an encrypted PPTX named .ppt", makeCompoundFile({ EncryptionInfo: Buffer.alloc(10), EncryptedPackage: Buffer.alloc(5000) }).bytes, "it is password-protected"],
    ];
    for (const [what, bytes, reason] of cases) {
      const result = await read(bytes);
      assert.equal(result.ok ? "read" : result.reason, reason, what);
    }
    const truncated = await read(TRUNCATED);
    assert.ok(!truncated.ok && /outside the file/.test(truncated.detail ?? ""), JSON.stringify(truncated));
  });

  it("a hostile file costs bounded work: a record cap, nesting skipped past a depth, random damage", async () => {
    const flood = Buffer.alloc((MAX_RECORDS + 10) * 8);
    for (let at = 0; at < flood.length; at += 8) flood.writeUInt16LE(0x0fa0, at + 2);
    const many = await read(makeCompoundFile({ "PowerPoint Document": flood }).bytes);
    assert.equal(many.ok ? "read" : many.reason, `it has more than ${MAX_RECORDS} records, more than are read`);

    // one slide listed 200 times, its text 1 MB of empty paragraphs: decoding stops at a cap
    const list = container(0x0ff0, Array.from({ length: 200 }, (_, i) => atom(0x03f3, u32s(2, 0, 0, 256 + i, 0))));
    const documentRecord = container(0x03e8, [list]);
    const emptyText = container(0x03ee, [container(0x040c, [container(0xf00d, [atom(0x0fa0, Buffer.from("\r".repeat(512 * 1024), "utf16le"))])])]);
    const persist = atom(0x1772, u32s(1 | (2 << 20), 0, documentRecord.length));
    const edit = atom(0x0ff5, u32s(0, 0x03000000, 0, documentRecord.length + emptyText.length, 1, 3, 0));
    const repeated = await extractDocumentText({ format: "ppt", bytes: makeCompoundFile({ "PowerPoint Document": Buffer.concat([documentRecord, emptyText, persist, edit]) }).bytes, maxChars: 2_000_000, maxPages: 200 });
    assert.equal(repeated.ok ? "read" : repeated.reason, "its text runs past 32 MB, more than is read");

    // a slide whose drawing nests 20,000 containers, a text box at the top and one at the bottom
    const depth = 20_000;
    const deepest = container(0xf00d, [atom(0x0fa0, Buffer.from("Too deep", "utf16le"))]);
    const nested = Buffer.alloc(depth * 8 + deepest.length);
    for (let i = 0; i < depth; i++) {
      nested.writeUInt16LE(0xf, i * 8);
      nested.writeUInt16LE(0xf003, i * 8 + 2);
      nested.writeUInt32LE(nested.length - (i + 1) * 8, i * 8 + 4);
    }
    deepest.copy(nested, depth * 8);
    const shallow = container(0xf00d, [atom(0x0fa8, Buffer.from("Shallow", "latin1"))]);
    const slide = container(0x03ee, [container(0x040c, [shallow, nested])]);
    const deep = await read(makeCompoundFile({ "PowerPoint Document": slide }).bytes);
    assert.ok(deep.ok && deep.text === "Slide 1:\nShallow", JSON.stringify(deep));

    // bytes changed at random and cuts anywhere: a result every time (text or a reason), quickly
    let seed = 42;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const started = Date.now();
    for (let round = 0; round < 300; round++) {
      const bytes = Buffer.from(DECK);
      for (let k = 0; k < 1 + Math.floor(random() * 20); k++) bytes[Math.floor(random() * bytes.length)] = Math.floor(random() * 256);
      const result = await read(round % 3 === 0 ? bytes.subarray(0, Math.floor(random() * bytes.length)) : bytes);
      assert.ok(result.ok || typeof result.reason === "string", JSON.stringify(result));
      if (!result.ok) assert.ok([NOT_VALID, "it is password-protected"].includes(result.reason) || result.reason.startsWith("it has more than"), result.reason);
    }
    assert.ok(Date.now() - started < 20_000, `300 damaged files in ${Date.now() - started} ms`);
  });
});

describe("old PowerPoint attachments through the agent-runner", () => {
  let rig: FileRig;
  before(async () => {
    rig = await startFileRig();
  });
  after(() => stopFileRig(rig));

  it("a .ppt (by type) and a .pps (a generic type and its name) reach the model with their text; a damaged one with the reason", async () => {
    const [deck, show, broken] = await Promise.all([
      rig.media.put(DECK, { mime: PPT_MIME, name: "deck.ppt" }),
      rig.media.put(makePowerPointDeck(), { mime: "application/octet-stream", name: "show.pps" }),
      rig.media.put(TRUNCATED, { mime: PPT_MIME, name: "broken.ppt" }),
    ]);
    rig.system.fake.enqueue({ kind: "text", text: "read them" });
    await rig.cli.send("summarize", { sessionName: "ppt", attachments: [
      { kind: "file", mime: PPT_MIME, name: "deck.ppt", ref: deck.ref },
      { kind: "file", mime: "application/octet-stream", name: "show.pps", ref: show.ref },
      { kind: "file", mime: PPT_MIME, name: "broken.ppt", ref: broken.ref },
    ] });
    const text = messageText(rig.system.fake.requests.at(-1)!.body.messages.at(-1));
    assert.ok(text.includes(`[attachment deck.ppt (${PPT_MIME}), media ref ${deck.ref}; its extracted text:]\n${DECK_PPT_TEXT}`), text);
    assert.ok(text.includes(`[attachment show.pps (application/octet-stream), media ref ${show.ref}; its extracted text:]\n${DECK_TEXT}`), text);
    assert.ok(text.includes(`[attachment broken.ppt (${PPT_MIME}), media ref ${broken.ref} (its text could not be read: ${NOT_VALID}): the media_save tool saves it into the workspace]`), text);
  });
});

describe("old PowerPoint files through the tools", () => {
  let sut: ToolsActorUnderTest;
  let call: ReturnType<typeof toolCaller>["call"];
  let ws: string;
  let site: Server;
  let port = 0;
  const url = (path: string) => `http://127.0.0.1:${port}${path}`;

  before(async () => {
    ws = mkdtempSync(join(tmpdir(), "lurk-ppt-ws-"));
    writeFileSync(join(ws, "deck.ppt"), DECK);
    writeFileSync(join(ws, "broken.ppt"), TRUNCATED);
    writeFileSync(join(ws, "report.ppt"), fixture("report.doc"));
    site = createServer((req, res) => {
      switch (req.url) {
        case "/deck.ppt": return res.writeHead(200, { "content-type": PPT_MIME }).end(DECK);
        case "/files/show.pps": return res.writeHead(200, { "content-type": "application/octet-stream" }).end(makePowerPointDeck());
        case "/broken": return res.writeHead(200, { "content-type": PPT_MIME }).end(TRUNCATED);
        default: return res.writeHead(404).end();
      }
    });
    port = await new Promise<number>((resolve, reject) => {
      site.once("error", reject);
      site.listen(0, "127.0.0.1", () => resolve((site.address() as AddressInfo).port));
    });
    sut = await startToolsActor(ws, {
      agents: [{ id: "main", default: true, toolProfile: "full" }],
      tools: { timeoutMs: 30_000, web: { allowPrivateHosts: ["127.0.0.1"] } },
    });
    ({ call } = toolCaller(() => sut.client));
  });
  after(async () => {
    await sut?.stop();
    site?.close();
    rmSync(ws, { recursive: true, force: true });
  });

  it("read returns a .ppt's slides as numbered lines", async () => {
    const reply = await call("read", { path: "deck.ppt" });
    assert.equal(reply.isError, false, textOf(reply));
    const text = textOf(reply);
    assert.match(text, /^deck\.ppt: text extracted from a PPT \(4 slides\), \d+ bytes of text as numbered lines:\n {5}1\tSlide 1:\n {5}2\tQuarterly review\n/);
    assert.deepEqual(text.split("\n").slice(1, -1).map((l) => l.replace(/^ *\d+\t/, "")), DECK_PPT_TEXT.split("\n"));
  });

  it("read of a damaged .ppt, or of a Word file named .ppt, is an error with the reason", async () => {
    for (const name of ["broken.ppt", "report.ppt"]) {
      const reply = await call("read", { path: name });
      assert.equal(reply.isError, true);
      assert.equal(textOf(reply), `the text of "${name}" (PPT) could not be read: ${NOT_VALID}`);
    }
  });

  it("web_fetch returns a PowerPoint file's text, by its type or by its bytes and extension; a damaged one is an error", async () => {
    const byType = await call("web_fetch", { url: url("/deck.ppt") });
    assert.equal(byType.isError, false, textOf(byType));
    assert.match(textOf(byType), /^Document: text extracted from a PPT \(4 slides\)$/m);
    assert.ok(textOf(byType).includes(DECK_PPT_TEXT), textOf(byType));
    const generic = await call("web_fetch", { url: url("/files/show.pps") });
    assert.equal(generic.isError, false, textOf(generic));
    assert.ok(textOf(generic).includes(`Document: text extracted from a PPT (2 slides)\n\n${DECK_TEXT}`), textOf(generic));
    const broken = await call("web_fetch", { url: url("/broken") });
    assert.equal(broken.isError, true);
    assert.equal(textOf(broken), `the text of ${url("/broken")} (PPT) could not be read: ${NOT_VALID}`);
  });
});
