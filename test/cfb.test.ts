/**
 * The compound file reader (shared/runtime/documents/cfb.ts): streams in regular sectors and in
 * the mini stream, 512- and 4096-byte sectors, the LibreOffice deck in test/fixtures/legacy/, and
 * files damaged on purpose (test/fixtures/cfb.ts lays them out): loops and sectors outside the
 * file in the FAT, the MiniFAT, the directory and the DIFAT chains, sizes past the file, a
 * truncated file. Each is a CfbError saying what is wrong, never a hang or another exception.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CfbError, CompoundFile } from "../shared/runtime/documents/cfb.js";
import { REPO_ROOT } from "../shared/scripts/paths.js";
import { entryOffset, fatEntryOffset, makeCompoundFile } from "./fixtures/cfb.js";

const deck = readFileSync(join(REPO_ROOT, "test", "fixtures", "legacy", "deck.ppt"));
const pattern = (n: number, seed: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff));
const STREAMS = { small: pattern(200, 1), "Big One": pattern(2 * 4096 + 100, 2), empty: Buffer.alloc(0), exact: pattern(4096, 3) };

/** opens `bytes` and reads every stream: the CfbError's message it throws */
function failure(bytes: Uint8Array): string {
  try {
    const file = CompoundFile.open(bytes);
    for (const e of file.children()) if (e.type === "stream") file.read(e);
  } catch (err) {
    assert.ok(err instanceof CfbError, `a CfbError, not ${String(err)}`);
    return err.message;
  }
  assert.fail("no error");
}

describe("compound files", () => {
  for (const sectorSize of [512, 4096] as const) {
    it(`reads streams in regular sectors and in the mini stream (${sectorSize}-byte sectors)`, () => {
      const { bytes } = makeCompoundFile(STREAMS, { sectorSize });
      const file = CompoundFile.open(bytes);
      assert.equal(file.sectorSize, sectorSize);
      assert.deepEqual(file.children().map((e) => e.name), ["small", "Big One", "empty", "exact"]);
      for (const [name, data] of Object.entries(STREAMS)) assert.deepEqual(Buffer.from(file.read(file.find(name)!)), data, name);
      assert.equal(file.find("BIG ONE")?.name, "Big One", "names are compared without case");
      assert.equal(file.find("missing"), undefined);
    });
  }

  it("reads LibreOffice's PowerPoint file: its streams by name, the main one past the mini stream cutoff", () => {
    const file = CompoundFile.open(deck);
    assert.deepEqual(file.children().map((e) => e.name).filter((n) => /^[A-Z]/.test(n)).sort(), ["Current User", "Pictures", "PowerPoint Document"]);
    const main = file.read(file.find("PowerPoint Document")!);
    assert.ok(main.length > 4096 && main.length === file.find("PowerPoint Document")!.size);
    assert.equal(file.read(file.find("Current User")!).length, file.find("Current User")!.size);
  });

  it("refuses what is not a compound file", () => {
    assert.match(failure(Buffer.from("PK\u0003\u0004 a zip")), /too few for a compound file/);
    assert.match(failure(Buffer.alloc(4096, 7)), /no compound file signature/);
    const odd = Buffer.from(makeCompoundFile(STREAMS).bytes);
    odd.writeUInt16LE(10, 30);
    assert.match(failure(odd), /unknown sector size/);
  });

  it("a FAT chain that loops, leaves the file or ends early is an error", () => {
    const { bytes, layout } = makeCompoundFile(STREAMS);
    const big = layout.streams["Big One"]!.start;
    const loop = Buffer.from(bytes);
    loop.writeUInt32LE(big, fatEntryOffset(layout, big + 2)); // the third sector points back at the first
    assert.match(failure(loop), /stream "Big One" loops back to sector \d+/);
    const outside = Buffer.from(bytes);
    outside.writeUInt32LE(99_999, fatEntryOffset(layout, big + 1));
    assert.match(failure(outside), /stream "Big One" points to sector 99999, outside the file/);
    const short = Buffer.from(bytes);
    short.writeUInt32LE(0xfffffffe, fatEntryOffset(layout, big));
    assert.match(failure(short), /stream "Big One" ends after 1 of its 17 sectors/);
    const selfDirectory = Buffer.from(bytes);
    selfDirectory.writeUInt32LE(layout.directory, fatEntryOffset(layout, layout.directory));
    assert.match(failure(selfDirectory), /the directory loops back/);
  });

  it("a MiniFAT chain that loops or leaves the mini stream is an error", () => {
    const { bytes, layout } = makeCompoundFile(STREAMS);
    const miniFat = layout.sectorSize * (layout.miniFat + 1);
    const loop = Buffer.from(bytes);
    loop.writeUInt32LE(0, miniFat + 2 * 4); // mini sector 2 of "small" back to 0
    assert.match(failure(loop), /stream "small" \(in the mini stream\) loops back to sector 0/);
    const outside = Buffer.from(bytes);
    outside.writeUInt32LE(5_000, miniFat + 4);
    assert.match(failure(outside), /stream "small" \(in the mini stream\) points to sector 5000, outside the file/);
  });

  it("sizes and counts past what the file holds are errors, not allocations", () => {
    const { bytes, layout } = makeCompoundFile(STREAMS);
    const huge = Buffer.from(bytes);
    huge.writeUInt32LE(0xfffffff0, entryOffset(layout, layout.streams["Big One"]!.entry) + 120);
    assert.match(failure(huge), /stream "Big One" declares 4294967280 bytes, more than the file holds/);
    // a 4096-byte-sector file has 64-bit sizes
    const v4 = makeCompoundFile(STREAMS, { sectorSize: 4096 });
    const huge64 = Buffer.from(v4.bytes);
    huge64.writeUInt32LE(0x7fff, entryOffset(v4.layout, v4.layout.streams.small!.entry) + 124);
    assert.match(failure(huge64), /stream "small" declares \d+ bytes, more than the file holds/);
    const rootSize = Buffer.from(bytes);
    rootSize.writeUInt32LE(0x7fffffff, entryOffset(layout, 0) + 120);
    assert.match(failure(rootSize), /the mini stream declares 2147483647 bytes/);
    const fatCount = Buffer.from(bytes);
    fatCount.writeUInt32LE(0xffffffff, 44);
    assert.match(failure(fatCount), /declares 4294967295 FAT sectors, more than the file has/);
    const noRoot = Buffer.from(bytes);
    noRoot[entryOffset(layout, 0) + 66] = 0;
    assert.match(failure(noRoot), /the directory has no root entry/);
  });

  it("a DIFAT chain that loops or leaves the file is an error", () => {
    // 300 FAT sectors listed: 109 in the header, the rest in DIFAT sectors starting at sector 200
    const { bytes } = makeCompoundFile({ big: Buffer.alloc(310 * 512) });
    const loop = Buffer.from(bytes);
    loop.writeUInt32LE(300, 44);
    for (let i = 0; i < 109; i++) loop.writeUInt32LE(i, 76 + i * 4);
    loop.writeUInt32LE(200, 68);
    loop.writeUInt32LE(200, 512 * 201 + 508); // its next DIFAT sector is itself
    assert.match(failure(loop), /the DIFAT chain loops back to sector 200/);
    const outside = Buffer.from(loop);
    outside.writeUInt32LE(70_000, 512 * 201 + 508);
    assert.match(failure(outside), /the DIFAT points to sector 70000, outside the file/);
    const ends = Buffer.from(loop);
    ends.writeUInt32LE(0xfffffffe, 512 * 201 + 508);
    assert.match(failure(ends), /the DIFAT ends after 236 of 300 FAT sectors/);
  });

  it("a truncated file is an error wherever it is cut", () => {
    for (const length of [600, 2048, 6000, deck.length - 4096]) {
      assert.match(failure(deck.subarray(0, length)), /outside the file|ends after|more than the file/, `cut at ${length}`);
    }
  });
});
