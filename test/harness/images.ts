/**
 * Test images made with sharp: `noisyImage` is a sharp pipeline over pseudo-random pixels (the
 * same every time; they compress badly, like photos), `flatImage` one colour (compresses to almost
 * nothing); `decodedImage` reads what an image really is.
 */
import sharp, { type Sharp } from "sharp";

export function noisyImage(width: number, height: number, channels: 3 | 4): Sharp {
  const b = Buffer.alloc(width * height * channels);
  let x = 0x9e3779b9; // xorshift32
  for (let i = 0; i < b.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x >>> 24;
  }
  // some transparency in every pixel of a 4-channel image
  if (channels === 4) for (let i = 3; i < b.length; i += 4) b[i] = 60 + (b[i]! % 190);
  return sharp(b, { raw: { width, height, channels } });
}

export function flatImage(width: number, height: number, alpha = 1): Sharp {
  return sharp({ create: { width, height, channels: 4, background: { r: 200, g: 30, b: 90, alpha } } });
}

export async function decodedImage(bytes: Uint8Array): Promise<{ format: string; width: number; height: number; pages: number; hasAlpha: boolean }> {
  const m = await sharp(bytes).metadata();
  return { format: m.format, width: m.width, height: m.height, pages: m.pages ?? 1, hasAlpha: m.hasAlpha };
}
