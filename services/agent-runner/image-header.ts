/**
 * An image's format and pixel size from its first bytes, without decoding it (image-fit.ts uses it
 * to send images within the limits untouched and without loading sharp).
 * readImageHeader(bytes) -> { format, width, height } for PNG, JPEG, GIF and WebP; undefined when
 * the bytes are none of them or the header is cut short or malformed. JPEG sizes are as stored,
 * before any EXIF rotation (the caller's square box makes the orientation irrelevant).
 */

export type ImageFormat = "jpeg" | "png" | "gif" | "webp";

export interface ImageHeader {
  format: ImageFormat;
  width: number;
  height: number;
}

export function readImageHeader(bytes: Uint8Array): ImageHeader | undefined {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const found = png(b) ?? gif(b) ?? webp(b) ?? jpeg(b);
  return found && found.width > 0 && found.height > 0 ? found : undefined;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function png(b: Buffer): ImageHeader | undefined {
  // the signature, then the IHDR chunk: length (4), "IHDR", width (4), height (4), big-endian
  if (b.length < 24 || !b.subarray(0, 8).equals(PNG_SIGNATURE) || b.toString("latin1", 12, 16) !== "IHDR") return undefined;
  return { format: "png", width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

function gif(b: Buffer): ImageHeader | undefined {
  // "GIF87a" / "GIF89a", then the logical screen's width and height, little-endian
  if (b.length < 10 || !/^GIF8[79]a$/.test(b.toString("latin1", 0, 6))) return undefined;
  return { format: "gif", width: b.readUInt16LE(6), height: b.readUInt16LE(8) };
}

function webp(b: Buffer): ImageHeader | undefined {
  if (b.length < 30 || b.toString("latin1", 0, 4) !== "RIFF" || b.toString("latin1", 8, 12) !== "WEBP") return undefined;
  const chunk = b.toString("latin1", 12, 16);
  if (chunk === "VP8X") {
    // extended: the canvas size minus one, 24 bits each, little-endian
    return { format: "webp", width: b.readUIntLE(24, 3) + 1, height: b.readUIntLE(27, 3) + 1 };
  }
  if (chunk === "VP8L") {
    // lossless: a 0x2f signature byte, then 14 bits of width - 1 and 14 bits of height - 1
    if (b[20] !== 0x2f) return undefined;
    const bits = b.readUInt32LE(21);
    return { format: "webp", width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === "VP8 ") {
    // lossy: a 3-byte frame tag, the start code 9d 01 2a, then 14-bit width and height
    if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return undefined;
    return { format: "webp", width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
  }
  return undefined;
}

/** start-of-frame markers (C0-CF) carry the size; C4 (Huffman tables), C8 (reserved) and CC (arithmetic coding) do not */
const isStartOfFrame = (marker: number): boolean => marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;

function jpeg(b: Buffer): ImageHeader | undefined {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return undefined;
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) return undefined;
    const marker = b[i + 1]!;
    if (marker === 0xff) { i++; continue; } // fill byte
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) { i += 2; continue; } // no length
    if (marker === 0xd9 || marker === 0xda) return undefined; // end of image / start of scan before any frame header
    const length = b.readUInt16BE(i + 2);
    if (length < 2) return undefined;
    if (isStartOfFrame(marker)) {
      // length (2), sample precision (1), height (2), width (2)
      if (i + 9 > b.length) return undefined;
      return { format: "jpeg", width: b.readUInt16BE(i + 7), height: b.readUInt16BE(i + 5) };
    }
    i += 2 + length;
  }
  return undefined;
}
