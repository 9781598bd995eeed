/**
 * The parts of a ZIP-based document (OOXML: XLSX, PPTX; OpenDocument), read with limits that hold
 * against zip bombs. Loaded only in a worker thread that reads a document (jszip comes with it).
 *
 * Contract: `ZipDocument.open(bytes)` refuses (DocumentError) an encrypted Office file (an OLE compound
 * file, not a zip) and an archive whose directory lists more than MAX_ENTRIES entries, before
 * parsing the directory; an archive that is not a zip makes it throw jszip's error. `text(path)`
 * is an entry's content as UTF-8 text, or undefined when there is no such file. The bytes are
 * counted as they are inflated (the sizes an archive declares are not trusted): an entry past
 * MAX_ENTRY_BYTES, all entries read past MAX_TOTAL_BYTES, or more than MAX_READS entries read
 * throw a DocumentError.
 */
import JSZip from "jszip";
import { isCompoundFile } from "./formats.js";
import { DocumentError } from "./parts.js";

const MB = 1024 * 1024;
export const MAX_ENTRY_BYTES = 20 * MB;
export const MAX_TOTAL_BYTES = 50 * MB;
const MAX_ENTRIES = 10_000;
const MAX_READS = 1_000;


/** Throws the DocumentError `open` throws for an encrypted Office file or too many entries, without parsing the archive. */
export function checkArchive(bytes: Uint8Array): void {
  if (isCompoundFile(bytes)) throw new DocumentError("it is password-protected (encrypted), or an old binary Office file under a new name");
  const entries = directoryEntries(bytes);
  if (entries !== undefined && entries > MAX_ENTRIES) throw new DocumentError(`it holds ${entries} files, more than the ${MAX_ENTRIES} read`);
}

/** jszip's stream of one entry's bytes (documented, but missing from its type declarations) */
interface EntryStream {
  on(event: "data", listener: (chunk: Uint8Array) => void): EntryStream;
  on(event: "end", listener: () => void): EntryStream;
  on(event: "error", listener: (err: unknown) => void): EntryStream;
  resume(): EntryStream;
  pause(): EntryStream;
}

export class ZipDocument {
  private totalBytes = 0;
  private reads = 0;

  private constructor(private readonly zip: JSZip) {}

  static async open(bytes: Uint8Array): Promise<ZipDocument> {
    checkArchive(bytes);
    return new ZipDocument(await JSZip.loadAsync(bytes));
  }

  /** The archive's file paths (folders left out). */
  paths(): string[] {
    return Object.values(this.zip.files).filter((f) => !f.dir).map((f) => f.name);
  }

  has(path: string): boolean {
    const entry = this.zip.file(path);
    return entry !== null && !entry.dir;
  }

  async text(path: string): Promise<string | undefined> {
    const entry = this.zip.file(path);
    if (entry === null || entry.dir) return undefined;
    if (++this.reads > MAX_READS) throw new DocumentError(`it has more than ${MAX_READS} parts to read`);
    const bytes = await this.read(entry);
    return new TextDecoder("utf-8").decode(bytes);
  }

  private read(entry: JSZip.JSZipObject): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      let failed = false;
      const stream = (entry as unknown as { internalStream(type: "uint8array"): EntryStream }).internalStream("uint8array");
      const fail = (err: unknown) => {
        if (failed) return;
        failed = true;
        stream.pause();
        reject(err);
      };
      stream
        .on("data", (chunk) => {
          if (failed) return;
          size += chunk.byteLength;
          this.totalBytes += chunk.byteLength;
          if (size > MAX_ENTRY_BYTES) fail(new DocumentError(`one of its parts unpacks to more than ${MAX_ENTRY_BYTES / MB} MB, more than is read`));
          else if (this.totalBytes > MAX_TOTAL_BYTES) fail(new DocumentError(`its parts unpack to more than ${MAX_TOTAL_BYTES / MB} MB, more than is read`));
          else chunks.push(chunk);
        })
        .on("error", fail)
        .on("end", () => {
          if (!failed) resolve(Buffer.concat(chunks, size));
        })
        .resume();
    });
  }
}

/**
 * How many entries the archive's end record says it has (the zip64 record's count when the
 * classic one is saturated); undefined when there is no end record (jszip then says why).
 */
function directoryEntries(bytes: Uint8Array): number | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lowest = Math.max(0, bytes.byteLength - 22 - 0xffff);
  for (let at = bytes.byteLength - 22; at >= lowest; at--) {
    if (view.getUint32(at, true) !== 0x06054b50) continue;
    const entries = view.getUint16(at + 10, true);
    if (entries !== 0xffff) return entries;
    // a zip64 locator just before the end record points to the zip64 end record
    const locator = at - 20;
    if (locator < 0 || view.getUint32(locator, true) !== 0x07064b50) return entries;
    const record = Number(view.getBigUint64(locator + 8, true));
    if (record + 40 > bytes.byteLength || view.getUint32(record, true) !== 0x06064b50) return entries;
    return Number(view.getBigUint64(record + 32, true));
  }
  return undefined;
}
