/**
 * A screenshot that fits one bus reply: PNG when it fits `maxBytes`, else JPEG at falling
 * qualities, else JPEG scaled down (sharp, loaded only then) until it fits; LIMIT_EXCEEDED when
 * even a quarter-size JPEG does not. The viewport, the whole page (`fullPage`) or one element
 * (a ref from the last snapshot).
 */
import type { Locator, Page } from "playwright-core";
import { LurkError } from "../../shared/contract/index.js";

export interface Shot {
  bytes: Buffer;
  mime: "image/png" | "image/jpeg";
  width?: number;
  height?: number;
  /** how it was made to fit ("JPEG quality 60", "scaled to 50%") */
  fitted?: string;
}

const QUALITIES = [80, 60, 40];
const SCALES = [0.75, 0.5, 0.35, 0.25];

/** Width and height from a PNG's IHDR chunk. */
function pngSize(bytes: Buffer): { width: number; height: number } | undefined {
  return bytes.length >= 24 && bytes.readUInt32BE(12) === 0x49484452 ? { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) } : undefined;
}

export async function captureScreenshot(page: Page, target: Locator | undefined, opts: { fullPage: boolean; maxBytes: number; timeoutMs: number }): Promise<Shot> {
  const take = (type: "png" | "jpeg", quality?: number): Promise<Buffer> => {
    const common = { type, scale: "css" as const, timeout: opts.timeoutMs, animations: "disabled" as const, ...(quality ? { quality } : {}) };
    return target ? target.screenshot(common) : page.screenshot({ ...common, fullPage: opts.fullPage });
  };
  const png = await take("png");
  const size = pngSize(png);
  if (png.length <= opts.maxBytes) return { bytes: png, mime: "image/png", ...size };
  let jpeg = png;
  for (const quality of QUALITIES) {
    jpeg = await take("jpeg", quality);
    if (jpeg.length <= opts.maxBytes) return { bytes: jpeg, mime: "image/jpeg", ...size, fitted: `JPEG quality ${quality}` };
  }
  const { default: sharp } = await import("sharp");
  const width = size?.width ?? 1280;
  for (const scale of SCALES) {
    const { data, info } = await sharp(png, { limitInputPixels: 400_000_000 }).resize({ width: Math.max(1, Math.round(width * scale)) }).jpeg({ quality: 60 }).toBuffer({ resolveWithObject: true });
    if (data.length <= opts.maxBytes) return { bytes: data, mime: "image/jpeg", width: info.width, height: info.height, fitted: `scaled to ${Math.round(scale * 100)}%, JPEG quality 60` };
  }
  throw new LurkError("LIMIT_EXCEEDED", `the screenshot does not fit in ${opts.maxBytes} bytes even scaled to 25%; take the viewport (no fullPage) or one element (ref)`);
}
