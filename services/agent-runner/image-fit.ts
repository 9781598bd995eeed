/**
 * An image made to fit what the model is sent: at most `maxBytes` (media.maxImageMb) and at most
 * `maxPx` wide and high (media.imageMaxPx). Contract of fitImage(bytes, limits):
 *  - a PNG, JPEG, GIF or WebP whose header (image-header.ts) shows it within both limits comes back
 *    as the same bytes, with the MIME type of what they are; nothing is decoded and sharp is not
 *    loaded;
 *  - anything else is decoded by sharp (loaded on first need; first frame of an animation; EXIF
 *    orientation applied), scaled to fit maxPx x maxPx keeping its aspect ratio (never enlarged)
 *    and re-encoded: JPEG (quality 85) when opaque, PNG when it has transparency. While the result
 *    is above maxBytes, quality and then size go down in steps (at most MAX_ENCODES encodings);
 *  - it rejects with an ImageFitError saying why when the bytes are not an image sharp reads, the
 *    image has more than MAX_INPUT_PIXELS, it cannot be made small enough, or `timeoutMs` (queue
 *    wait included) passes.
 * One image is processed at a time per process, on one libvips thread: the work runs on libuv's
 * pool, so the event loop stays free, and a 2-core host keeps a core for everything else.
 */
import type { Sharp, SharpOptions } from "sharp";
import { formatBytes } from "../../shared/runtime/media.js";
import { readImageHeader, type ImageFormat } from "./image-header.js";

export interface ImageLimits {
  maxBytes: number;
  maxPx: number;
  timeoutMs?: number;
}

export interface FittedImage {
  bytes: Uint8Array;
  mime: string;
  /** false: the input bytes unchanged */
  resized: boolean;
  width?: number;
  height?: number;
}

export class ImageFitError extends Error {}

export const DEFAULT_FIT_TIMEOUT_MS = 20_000;
/** decompression bombs: a larger image is refused before its pixels are decoded */
const MAX_INPUT_PIXELS = 100_000_000;
const MAX_ENCODES = 6;
const MIN_SIDE_PX = 16;

export async function fitImage(bytes: Uint8Array, limits: ImageLimits): Promise<FittedImage> {
  const header = readImageHeader(bytes);
  if (header && bytes.byteLength <= limits.maxBytes && header.width <= limits.maxPx && header.height <= limits.maxPx) {
    return { bytes, mime: mimeOf(header.format), resized: false, width: header.width, height: header.height };
  }
  const timeoutMs = limits.timeoutMs ?? DEFAULT_FIT_TIMEOUT_MS;
  const deadline = Date.now() + timeoutMs;
  const timedOut = () => new ImageFitError(`scaling took longer than ${timeoutMs >= 1000 ? `${timeoutMs / 1000} s` : `${timeoutMs} ms`}`);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timedOut()), timeoutMs);
  });
  const work = queued(() => scaleDown(bytes, limits.maxBytes, limits.maxPx, deadline, timedOut));
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const mimeOf = (format: ImageFormat): string => `image/${format}`;

/** one fit at a time: the next starts when the previous one's libvips work has ended */
let tail: Promise<unknown> = Promise.resolve();
function queued<T>(task: () => Promise<T>): Promise<T> {
  const run = tail.then(task, task);
  tail = run.catch(() => undefined);
  return run;
}

type SharpFactory = (input?: Uint8Array | Buffer, options?: SharpOptions) => Sharp;
let loading: Promise<SharpFactory> | undefined;

/** sharp on first use only (its native library costs memory the runner does not need otherwise) */
function loadSharp(): Promise<SharpFactory> {
  loading ??= import("sharp").then(({ default: sharp }) => {
    sharp.cache(false);
    sharp.concurrency(1);
    return sharp as SharpFactory;
  }, (err: unknown) => {
    loading = undefined;
    throw new ImageFitError(`image scaling is not available: ${(err as Error).message}`);
  });
  return loading;
}

async function scaleDown(bytes: Uint8Array, maxBytes: number, maxPx: number, deadline: number, timedOut: () => ImageFitError): Promise<FittedImage> {
  const secondsLeft = (): number => {
    const left = deadline - Date.now();
    if (left <= 0) throw timedOut();
    return Math.ceil(left / 1000);
  };
  secondsLeft();
  const sharp = await loadSharp();
  // decoded once, at the size that fits maxPx; the encodings below start from these pixels
  let pixels: { data: Buffer; info: { width: number; height: number; channels: number } };
  try {
    pixels = await sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS, autoOrient: true, pages: 1, failOn: "error" })
      .timeout({ seconds: secondsLeft() })
      .resize({ width: maxPx, height: maxPx, fit: "inside", withoutEnlargement: true })
      .raw({ depth: "uchar" })
      .toBuffer({ resolveWithObject: true });
  } catch (err) {
    if (err instanceof ImageFitError) throw err;
    throw new ImageFitError(`it could not be read as an image: ${(err as Error).message}`);
  }
  const { data, info } = pixels;
  const alpha = (info.channels === 2 || info.channels === 4) && !opaque(data, info.channels);
  let width = info.width;
  let height = info.height;
  let quality = 85;
  let smallest = Infinity;
  for (let attempt = 1; attempt <= MAX_ENCODES; attempt++) {
    let out = sharp(data, { raw: { width: info.width, height: info.height, channels: info.channels as 1 | 2 | 3 | 4 } }).timeout({ seconds: secondsLeft() });
    if (width !== info.width) out = out.resize({ width, height, fit: "fill" });
    if (!alpha && (info.channels === 2 || info.channels === 4)) out = out.removeAlpha();
    // the first PNG is lossless; later ones are quantized to a palette
    out = alpha ? out.png(attempt === 1 ? {} : { palette: true, quality, effort: 3 }) : out.jpeg({ quality });
    const encoded = await out.toBuffer();
    if (encoded.byteLength <= maxBytes) return { bytes: encoded, mime: alpha ? "image/png" : "image/jpeg", resized: true, width, height };
    smallest = Math.min(smallest, encoded.byteLength);
    if (quality > 70) {
      quality = 70;
      continue;
    }
    // bytes grow about with the pixel count: shrink both sides by the square root of the excess
    const scale = Math.min(0.85, Math.max(0.3, Math.sqrt(maxBytes / encoded.byteLength) * 0.9));
    width = Math.round(width * scale);
    height = Math.round(height * scale);
    if (Math.min(width, height) < MIN_SIDE_PX) break;
  }
  throw new ImageFitError(`it could not be made smaller than ${formatBytes(smallest)}`);
}

/** true when every pixel's alpha (the last of `channels` interleaved bytes) is 255 */
function opaque(data: Buffer, channels: number): boolean {
  for (let i = channels - 1; i < data.length; i += channels) if (data[i] !== 255) return false;
  return true;
}
