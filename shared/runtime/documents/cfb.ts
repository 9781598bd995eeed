/**
 * A reader of Compound File Binary files ([MS-CFB], "OLE2": how Office 97-2003 stores .doc, .xls
 * and .ppt files, and an encrypted DOCX, XLSX or PPTX): the header (512- or 4096-byte sectors),
 * the FAT (listed by the header's DIFAT and the DIFAT sector chain), the directory (names,
 * types, tree, start sectors, sizes), and each stream's bytes, from regular sectors or, below the
 * mini stream cutoff (4096 bytes), from the mini stream through the MiniFAT. Pure TypeScript,
 * no I/O; imports only formats.ts's signature check.
 *
 * Contract: `CompoundFile.open(bytes)` reads the header, FAT, MiniFAT and directory, and
 * `read(entry)` a stream's bytes. For a file that is not a compound file, or a damaged one, both
 * throw a CfbError (name "CfbError"; the message says what is wrong, for a log). Every read is
 * bounds-checked, every sector chain is checked for loops and for sectors outside the file,
 * and no size or count is trusted beyond what the file's own bytes can hold, so a hostile file
 * costs at most a few passes over its bytes: no hang, no huge allocation.
 */

import { isCompoundFile } from "./formats.js";

/** A file that is not a compound file, or a damaged one. */
export class CfbError extends Error {
  override readonly name = "CfbError";
}

export interface CfbEntry {
  /** its index in the directory */
  id: number;
  name: string;
  type: "storage" | "stream" | "root" | "unused";
  /** the first sector (of the mini stream when a stream's `size` is below the cutoff); the root's: the mini stream's */
  start: number;
  size: number;
  left: number;
  right: number;
  child: number;
}

const HEADER_BYTES = 512;
const HEADER_DIFAT = 109;
const MAX_REGULAR_SECTOR = 0xfffffffa;
const END_OF_CHAIN = 0xfffffffe;
const ENTRY_BYTES = 128;
const MINI_SECTOR = 64;
const MINI_CUTOFF = 4096;
const TYPES: Record<number, CfbEntry["type"] | undefined> = { 1: "storage", 2: "stream", 5: "root" };

/** Sectors of one size: the file's regular sectors, or the mini stream's 64-byte ones. */
class Sectors {
  /** how many there are (a partial last one counts: it reads as if padded with zeros) */
  readonly count: number;

  constructor(private readonly bytes: Uint8Array, readonly size: number, private readonly first: number) {
    this.count = Math.max(0, Math.ceil((bytes.byteLength - first) / size));
  }

  at(n: number): Uint8Array {
    if (n >= this.count) throw new CfbError(`sector ${n} is outside the file`);
    const start = this.first + n * this.size;
    const end = start + this.size;
    if (end <= this.bytes.byteLength) return this.bytes.subarray(start, end);
    const padded = new Uint8Array(this.size);
    padded.set(this.bytes.subarray(start));
    return padded;
  }

  /**
   * The bytes of the chain from `start` in `table` (the FAT for regular sectors, the MiniFAT for
   * mini ones): `count` sectors, or up to its end of chain when undefined. A sector outside these,
   * a sector met twice (a loop) or a chain that ends early throws.
   */
  chain(table: Uint32Array, start: number, count: number | undefined, what: string): Uint8Array {
    const chain: number[] = [];
    const seen = new Uint8Array(this.count);
    for (let s = start; count === undefined ? s !== END_OF_CHAIN : chain.length < count;) {
      if (s === END_OF_CHAIN) throw new CfbError(`${what} ends after ${chain.length} of its ${count} sectors`);
      if (s >= this.count) throw new CfbError(`${what} points to sector ${s}, outside the file`);
      if (seen[s]) throw new CfbError(`${what} loops back to sector ${s}`);
      if (s >= table.length) throw new CfbError(`${what}: sector ${s} has no allocation table entry`);
      seen[s] = 1;
      chain.push(s);
      s = table[s]!;
    }
    const out = new Uint8Array(chain.length * this.size);
    chain.forEach((s, i) => out.set(this.at(s), i * this.size));
    return out;
  }
}

export class CompoundFile {
  private miniSectors: Sectors | undefined;

  private constructor(
    private readonly bytes: Uint8Array,
    private readonly sectors: Sectors,
    private readonly fat: Uint32Array,
    private readonly miniFat: Uint32Array,
    readonly entries: readonly CfbEntry[],
  ) {}

  static open(bytes: Uint8Array): CompoundFile {
    if (bytes.byteLength < HEADER_BYTES) throw new CfbError(`${bytes.byteLength} bytes are too few for a compound file`);
    if (!isCompoundFile(bytes)) throw new CfbError("no compound file signature");
    const header = new DataView(bytes.buffer, bytes.byteOffset, HEADER_BYTES);
    if (header.getUint16(28, true) !== 0xfffe) throw new CfbError("unknown byte order mark");
    const shift = header.getUint16(30, true);
    if (shift !== 9 && shift !== 12) throw new CfbError(`unknown sector size 2^${shift}`);
    if (header.getUint16(32, true) !== 6) throw new CfbError(`unknown mini sector size 2^${header.getUint16(32, true)}`);
    if (header.getUint32(56, true) !== MINI_CUTOFF) throw new CfbError(`unknown mini stream cutoff ${header.getUint32(56, true)}`);
    const sectors = new Sectors(bytes, 1 << shift, 1 << shift);
    const fat = readFat(header, sectors);
    const entries = parseEntries(sectors.chain(fat, header.getUint32(48, true), undefined, "the directory"), shift === 9);
    if (entries[0]?.type !== "root") throw new CfbError("the directory has no root entry");
    const miniFatStart = header.getUint32(60, true);
    const miniFat = miniFatStart === END_OF_CHAIN || header.getUint32(64, true) === 0 ? new Uint32Array(0) : toUint32(sectors.chain(fat, miniFatStart, undefined, "the MiniFAT"));
    return new CompoundFile(bytes, sectors, fat, miniFat, entries);
  }

  /** 512 or 4096 */
  get sectorSize(): number {
    return this.sectors.size;
  }

  get root(): CfbEntry {
    return this.entries[0]!;
  }

  /** A storage's children (its directory subtree), in directory order; links out of range, repeated or to unused entries are skipped. */
  children(storage: CfbEntry = this.root): CfbEntry[] {
    const out: CfbEntry[] = [];
    const seen = new Set<number>();
    const stack = [storage.child];
    while (stack.length > 0) {
      const id = stack.pop()!;
      if (id >= this.entries.length || seen.has(id)) continue;
      seen.add(id);
      const entry = this.entries[id]!;
      if (entry.type === "unused" || entry.type === "root") continue;
      out.push(entry);
      stack.push(entry.left, entry.right);
    }
    return out.sort((a, b) => a.id - b.id);
  }

  /** A storage's child by name (compared without case, as the format does). */
  find(name: string, storage: CfbEntry = this.root): CfbEntry | undefined {
    const upper = name.toUpperCase();
    return this.children(storage).find((e) => e.name.toUpperCase() === upper);
  }

  /** A stream's bytes; a size past what the file holds, or a chain that is short, loops or leaves the file, throws. */
  read(entry: CfbEntry): Uint8Array {
    if (entry.type !== "stream") throw new CfbError(`"${entry.name}" is not a stream`);
    if (entry.size === 0) return new Uint8Array(0);
    if (entry.size > this.bytes.byteLength) throw new CfbError(`stream "${entry.name}" declares ${entry.size} bytes, more than the file holds`);
    const big = entry.size >= MINI_CUTOFF;
    const sectors = big ? this.sectors : this.mini();
    const what = big ? `stream "${entry.name}"` : `stream "${entry.name}" (in the mini stream)`;
    return sectors.chain(big ? this.fat : this.miniFat, entry.start, Math.ceil(entry.size / sectors.size), what).subarray(0, entry.size);
  }

  /** the mini stream's sectors: the root entry's chain of regular sectors, read once */
  private mini(): Sectors {
    if (!this.miniSectors) {
      const root = this.root;
      if (root.size > this.bytes.byteLength) throw new CfbError(`the mini stream declares ${root.size} bytes, more than the file holds`);
      const count = Math.ceil(root.size / this.sectors.size);
      const bytes = count === 0 ? new Uint8Array(0) : this.sectors.chain(this.fat, root.start, count, "the mini stream").subarray(0, root.size);
      this.miniSectors = new Sectors(bytes, MINI_SECTOR, 0);
    }
    return this.miniSectors;
  }
}

/** the FAT: its sectors as the header's 109 DIFAT entries and then the DIFAT chain list them */
function readFat(header: DataView, sectors: Sectors): Uint32Array {
  const count = header.getUint32(44, true);
  if (count > sectors.count) throw new CfbError(`it declares ${count} FAT sectors, more than the file has`);
  const fatSectors: number[] = [];
  for (let i = 0; i < HEADER_DIFAT && fatSectors.length < count; i++) fatSectors.push(header.getUint32(76 + i * 4, true));
  const perSector = sectors.size / 4 - 1;
  const seen = new Uint8Array(sectors.count);
  let next = header.getUint32(68, true);
  while (fatSectors.length < count) {
    if (next > MAX_REGULAR_SECTOR) throw new CfbError(`the DIFAT ends after ${fatSectors.length} of ${count} FAT sectors`);
    if (next >= sectors.count) throw new CfbError(`the DIFAT points to sector ${next}, outside the file`);
    if (seen[next]) throw new CfbError(`the DIFAT chain loops back to sector ${next}`);
    seen[next] = 1;
    const difat = toUint32(sectors.at(next));
    for (let i = 0; i < perSector && fatSectors.length < count; i++) fatSectors.push(difat[i]!);
    next = difat[perSector]!;
  }
  const words = sectors.size / 4;
  const fat = new Uint32Array(count * words);
  fatSectors.forEach((s, i) => {
    if (s >= sectors.count) throw new CfbError(`FAT sector ${i} is sector ${s}, outside the file`);
    fat.set(toUint32(sectors.at(s)), i * words);
  });
  return fat;
}

/** the directory's entries, unused ones included (so an id is an index); `v3`: sizes are 32-bit */
function parseEntries(dir: Uint8Array, v3: boolean): CfbEntry[] {
  const view = new DataView(dir.buffer, dir.byteOffset, dir.byteLength);
  const out: CfbEntry[] = [];
  for (let id = 0; (id + 1) * ENTRY_BYTES <= dir.byteLength; id++) {
    const at = id * ENTRY_BYTES;
    const type = TYPES[dir[at + 66]!] ?? "unused";
    const nameBytes = Math.min(Math.max(view.getUint16(at + 64, true) - 2, 0), 62) & ~1;
    const name = type === "unused" ? "" : Buffer.from(dir.buffer, dir.byteOffset + at, nameBytes).toString("utf16le").replace(/\0+$/, "");
    const high = v3 ? 0 : view.getUint32(at + 124, true);
    out.push({
      id, name, type, start: view.getUint32(at + 116, true), size: high * 2 ** 32 + view.getUint32(at + 120, true),
      left: view.getUint32(at + 68, true), right: view.getUint32(at + 72, true), child: view.getUint32(at + 76, true),
    });
  }
  return out;
}

/** little-endian 32-bit words (a copy: `bytes` need not be aligned) */
function toUint32(bytes: Uint8Array): Uint32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Uint32Array(bytes.byteLength >>> 2);
  for (let i = 0; i < out.length; i++) out[i] = view.getUint32(i * 4, true);
  return out;
}
