/**
 * A fetch Response body read into memory with a byte limit: a declared Content-Length above the
 * limit is refused before reading, and the body is cancelled (the connection dropped) as soon as
 * more than `maxBytes` arrived, so an oversize answer never sits whole in memory.
 */

/** `declared`: the size is the answer's Content-Length (nothing was read), else the bytes read when the cap was passed */
export type CappedBody = { bytes: Buffer } | { tooLarge: true; size: number; declared: boolean };

export async function readBodyCapped(res: Response, maxBytes: number): Promise<CappedBody> {
  const declared = Number(res.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    return { tooLarge: true, size: declared, declared: true };
  }
  if (!res.body) return { bytes: Buffer.alloc(0) };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => undefined);
        return { tooLarge: true, size: total, declared: false };
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  return { bytes: Buffer.concat(chunks, total) };
}
