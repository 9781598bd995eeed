/**
 * The parts of a ZIP-based document (OOXML: XLSX, PPTX; OpenDocument), read with limits that hold
 * against zip bombs. Loaded only in a worker thread that reads a document (jszip comes with it).
 *
 * Contract: `ZipDocument.open(bytes)` refuses (DocumentError) an encrypted Office file (an OLE compound
 * file, not a zip) and an archive holding more than MAX_ENTRIES entries (central-directory headers
 * counted in the bytes: zip-entries.ts), before parsing the directory; an archive that is not a zip makes it throw jszip's error. `text(path)`
 * is an entry's content as UTF-8 text, or undefined when there is no such file. The bytes are
 * counted as they are inflated (the sizes an archive declares are not trusted): an entry past
 * MAX_ENTRY_BYTES, all entries read past MAX_TOTAL_BYTES, or more than MAX_READS entries read
 * throw a DocumentError.
 */
import JSZip from "jszip";
import { readZipEntry, zipEntriesAtMost } from "../zip-entries.js";
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
  if (zipEntriesAtMost(bytes, MAX_ENTRIES) > MAX_ENTRIES) throw new DocumentError(`it holds more than the ${MAX_ENTRIES} files read`);
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
    let size = 0;
    return readZipEntry(entry, (bytes) => {
      size += bytes;
      this.totalBytes += bytes;
      if (size > MAX_ENTRY_BYTES) return new DocumentError(`one of its parts unpacks to more than ${MAX_ENTRY_BYTES / MB} MB, more than is read`);
      if (this.totalBytes > MAX_TOTAL_BYTES) return new DocumentError(`its parts unpack to more than ${MAX_TOTAL_BYTES / MB} MB, more than is read`);
      return undefined;
    });
  }
}
