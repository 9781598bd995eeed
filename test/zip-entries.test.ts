/**
 * The zip limits both jszip readers share (shared/runtime/zip-entries.ts): the entry count taken
 * from the bytes, not the end record (which an archive can understate), and the inflation stopped
 * by the reader's budget. The documents reader refuses such an archive before jszip parses it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import JSZip from "jszip";
import { ZipDocument } from "../shared/runtime/documents/zip.js";
import { readZipEntry, zipEntriesAtMost } from "../shared/runtime/zip-entries.js";

/** a zip of `n` empty files whose end record claims one entry */
async function understatedZip(n: number): Promise<Buffer> {
  const zip = new JSZip();
  for (let i = 0; i < n; i++) zip.file(`f${i}`, "");
  const bytes = Buffer.from(await zip.generateAsync({ type: "uint8array" }));
  const end = bytes.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  bytes.writeUInt16LE(1, end + 8); // entries on this disk
  bytes.writeUInt16LE(1, end + 10); // entries in all
  return bytes;
}

describe("zip entries", () => {
  it("counts the central-directory headers in the bytes, stopping past the limit, whatever the end record says", async () => {
    const bytes = await understatedZip(30);
    assert.equal(zipEntriesAtMost(bytes, 100), 30);
    assert.equal(zipEntriesAtMost(bytes, 10), 11, "stops one past the limit");
    assert.equal(zipEntriesAtMost(new Uint8Array(bytes), 100), 30, "a plain Uint8Array too");
  });

  it("the documents reader refuses an archive of more than 10 000 entries that claims one, before parsing it", async () => {
    const bytes = await understatedZip(10_001);
    await assert.rejects(ZipDocument.open(bytes), /it holds more than the 10000 files read/);
    const fine = await ZipDocument.open(await understatedZip(3));
    assert.equal(fine.paths().length, 3);
  });

  it("stops inflating an entry when the budget says so, with the budget's error", async () => {
    const zip = new JSZip();
    zip.file("big", "x".repeat(1024 * 1024), { compression: "DEFLATE" });
    const loaded = await JSZip.loadAsync(await zip.generateAsync({ type: "uint8array", compression: "DEFLATE" }));
    let seen = 0;
    await assert.rejects(readZipEntry(loaded.file("big")!, (n) => ((seen += n) > 64 * 1024 ? new Error("over budget") : undefined)), /over budget/);
    assert.ok(seen < 1024 * 1024, `stopped before the whole entry was inflated (${seen} bytes)`);
    const whole = await readZipEntry(loaded.file("big")!, () => undefined);
    assert.equal(whole.length, 1024 * 1024);
  });
});
