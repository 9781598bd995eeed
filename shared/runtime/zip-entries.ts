/**
 * What reading a zip through jszip safely takes (the documents reader, `lurkbot hooks install`).
 *
 * Contract: `zipEntriesAtMost(bytes, max)` counts the central-directory headers in the raw bytes,
 * stopping past `max`, before jszip parses anything: jszip builds an object for every header it
 * finds, whatever count the end record declares (a 50 MB zip of empty entries is a million of
 * them). A header signature inside compressed data can only make the count higher, never lower.
 * `readZipEntry(entry, onChunk)` inflates one entry and resolves with its bytes; `onChunk` sees
 * each chunk's size as it is inflated (the sizes an archive declares are not trusted) and may
 * return an Error, which stops the inflation and rejects with it.
 */
import type JSZip from "jszip";

const CENTRAL_HEADER = Buffer.from([0x50, 0x4b, 0x01, 0x02]);

export function zipEntriesAtMost(bytes: Uint8Array, max: number): number {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let n = 0;
  for (let at = buf.indexOf(CENTRAL_HEADER); at !== -1 && n <= max; at = buf.indexOf(CENTRAL_HEADER, at + 4)) n++;
  return n;
}

/** jszip's stream of one entry's bytes (documented, but missing from its type declarations) */
interface EntryStream {
  on(event: "data", listener: (chunk: Uint8Array) => void): EntryStream;
  on(event: "end", listener: () => void): EntryStream;
  on(event: "error", listener: (err: unknown) => void): EntryStream;
  resume(): EntryStream;
  pause(): EntryStream;
}

export function readZipEntry(entry: JSZip.JSZipObject, onChunk: (bytes: number) => Error | undefined): Promise<Buffer> {
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
        const refused = onChunk(chunk.byteLength);
        if (refused) fail(refused);
        else chunks.push(chunk);
      })
      .on("error", fail)
      .on("end", () => {
        if (!failed) resolve(Buffer.concat(chunks, size));
      })
      .resume();
  });
}
