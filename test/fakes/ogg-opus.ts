/**
 * Writes a real Ogg Opus file (RFC 3533 pages with their CRC, RFC 7845 OpusHead and OpusTags)
 * around given Opus packets, for the tests of voice messages: each packet is a CELT fullband
 * 20 ms mono frame (TOC 0xF8) followed by `sizes[i] - 1` filler bytes, so its size is what the
 * test chose (a packet above 255 bytes spans several lacing segments). 50 packets are one second.
 */

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let j = 0; j < 8; j++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    table[i] = r >>> 0;
  }
  return table;
})();

function oggCrc(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ b) & 0xff]!) >>> 0;
  return crc;
}

function page(packets: Uint8Array[], granule: bigint, serial: number, seq: number, flags: number): Buffer {
  const lacing: number[] = [];
  for (const p of packets) {
    let left = p.byteLength;
    while (left >= 255) {
      lacing.push(255);
      left -= 255;
    }
    lacing.push(left);
  }
  const header = Buffer.alloc(27 + lacing.length);
  header.write("OggS", 0, "latin1");
  header[4] = 0;
  header[5] = flags;
  header.writeBigInt64LE(granule, 6);
  header.writeUInt32LE(serial, 14);
  header.writeUInt32LE(seq, 18);
  header[26] = lacing.length;
  Buffer.from(lacing).copy(header, 27);
  const out = Buffer.concat([header, ...packets]);
  out.writeUInt32LE(oggCrc(out), 22);
  return out;
}

export const OPUS_PRE_SKIP = 312;
const SAMPLES_PER_PACKET = 960;

/** An Ogg Opus file of one packet per entry of `sizes` (each 20 ms), `perPage` packets a page. */
export function oggOpusFile(sizes: number[], opts: { preSkip?: number; perPage?: number; serial?: number } = {}): Buffer {
  const preSkip = opts.preSkip ?? OPUS_PRE_SKIP;
  const serial = opts.serial ?? 0x1234abcd;
  const head = Buffer.alloc(19);
  head.write("OpusHead", 0, "latin1");
  head[8] = 1;
  head[9] = 1;
  head.writeUInt16LE(preSkip, 10);
  head.writeUInt32LE(48_000, 12);
  const vendor = Buffer.from("lurkbot-test", "utf8");
  const tags = Buffer.alloc(8 + 4 + vendor.length + 4);
  tags.write("OpusTags", 0, "latin1");
  tags.writeUInt32LE(vendor.length, 8);
  vendor.copy(tags, 12);
  const packets = sizes.map((size, i) => {
    const p = Buffer.alloc(Math.max(1, size), (i * 37) & 0xff);
    p[0] = 0xf8;
    return p;
  });
  const pages = [page([head], 0n, serial, 0, 0x02), page([tags], 0n, serial, 1, 0)];
  const perPage = opts.perPage ?? 25;
  for (let i = 0; i < packets.length; i += perPage) {
    const chunk = packets.slice(i, i + perPage);
    const last = i + perPage >= packets.length;
    pages.push(page(chunk, BigInt((i + chunk.length) * SAMPLES_PER_PACKET), serial, pages.length, last ? 0x04 : 0));
  }
  return Buffer.concat(pages);
}
