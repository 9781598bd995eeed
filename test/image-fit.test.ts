/**
 * Images made to fit the model (services/agent-runner/image-fit.ts, image-header.ts) with the real
 * sharp: header sizes of PNG, JPEG, GIF and WebP without decoding; images within the limits come
 * back as the same bytes and sharp is not even loaded; larger ones are scaled into the box and
 * under the byte cap (JPEG when opaque, PNG with transparency), EXIF rotation applied, the first
 * frame of an animation; unreadable input, decompression bombs and timeouts are ImageFitErrors.
 * The end-to-end path (store -> agent-runner -> model) is in media.test.ts.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { crc32 } from "node:zlib";
import { describe, it } from "node:test";
import sharp from "sharp";
import { fitImage, ImageFitError } from "../services/agent-runner/image-fit.js";
import { readImageHeader } from "../services/agent-runner/image-header.js";
import { decodedImage, flatImage, noisyImage } from "./harness/images.js";

const MB = 1024 * 1024;

describe("image headers", () => {
  it("reads format and size of PNG, JPEG, GIF and WebP (lossy, lossless, extended)", async () => {
    const base = () => noisyImage(321, 123, 4);
    assert.deepEqual(readImageHeader(await base().png().toBuffer()), { format: "png", width: 321, height: 123 });
    assert.deepEqual(readImageHeader(await base().jpeg().toBuffer()), { format: "jpeg", width: 321, height: 123 });
    assert.deepEqual(readImageHeader(await base().jpeg({ progressive: true }).withExif({ IFD0: { Copyright: "x" } }).toBuffer()), { format: "jpeg", width: 321, height: 123 });
    assert.deepEqual(readImageHeader(await base().gif().toBuffer()), { format: "gif", width: 321, height: 123 });
    assert.deepEqual(readImageHeader(await base().removeAlpha().webp().toBuffer()), { format: "webp", width: 321, height: 123 });
    assert.deepEqual(readImageHeader(await base().webp({ lossless: true }).toBuffer()), { format: "webp", width: 321, height: 123 });
    assert.deepEqual(readImageHeader(await base().webp().toBuffer()), { format: "webp", width: 321, height: 123 });
  });

  it("answers undefined for other bytes and cut-short headers", async () => {
    const jpeg = await noisyImage(64, 48, 3).jpeg().toBuffer();
    assert.equal(readImageHeader(Buffer.from("not an image at all, just text")), undefined);
    assert.equal(readImageHeader(jpeg.subarray(0, 20)), undefined);
    assert.equal(readImageHeader((await flatImage(10, 10).png().toBuffer()).subarray(0, 20)), undefined);
    assert.equal(readImageHeader(Buffer.alloc(0)), undefined);
  });
});

describe("fitting images to the model's limits", () => {
  it("returns an image within both limits as the same bytes, typed by what they are", async () => {
    const png = await noisyImage(200, 100, 4).png().toBuffer();
    const got = await fitImage(png, { maxBytes: MB, maxPx: 2048 });
    assert.equal(got.bytes, png);
    assert.deepEqual([got.mime, got.resized], ["image/png", false]);
  });

  it("does not load sharp for an image within the limits, and loads it for one above", () => {
    const script = fileURLToPath(new URL("./fixtures/image-fit-child.js", import.meta.url));
    const run = (side: string) => spawnSync(process.execPath, [script, side], { encoding: "utf8", timeout: 60_000 });
    const small = run("100");
    assert.equal(small.status, 0, small.stderr);
    assert.deepEqual(JSON.parse(small.stdout), { resized: false, vipsLoaded: false });
    const large = run("3000");
    assert.equal(large.status, 0, large.stderr);
    assert.deepEqual(JSON.parse(large.stdout), { resized: true, vipsLoaded: true }, "the check sees libvips once sharp is used");
  });

  it("scales a large photo into the box as JPEG, keeping its aspect ratio", async () => {
    const photo = await noisyImage(3000, 2000, 3).jpeg({ quality: 90 }).toBuffer();
    const got = await fitImage(photo, { maxBytes: 20 * MB, maxPx: 2048 });
    assert.equal(got.mime, "image/jpeg");
    assert.deepEqual(await decodedImage(got.bytes), { format: "jpeg", width: 2048, height: 1365, pages: 1, hasAlpha: false });
    assert.ok(got.bytes.byteLength < photo.byteLength);
  });

  it("brings an image above the byte cap under it, stepping down quality and size", async () => {
    const photo = await noisyImage(1500, 1000, 3).jpeg({ quality: 95 }).toBuffer();
    const cap = 60 * 1024;
    assert.ok(photo.byteLength > cap * 5);
    const got = await fitImage(photo, { maxBytes: cap, maxPx: 2048 });
    assert.ok(got.bytes.byteLength <= cap, `${got.bytes.byteLength} bytes`);
    const d = await decodedImage(got.bytes);
    assert.equal(d.format, "jpeg");
    assert.ok(d.width! < 1500 && Math.abs(d.width! / d.height! - 1.5) < 0.02, `${d.width}x${d.height}`);
  });

  it("keeps transparency as PNG and drops an alpha channel that is fully opaque", async () => {
    const clear = await fitImage(await noisyImage(3000, 1000, 4).png().toBuffer(), { maxBytes: 5 * MB, maxPx: 1000 });
    assert.equal(clear.mime, "image/png");
    assert.deepEqual(await decodedImage(clear.bytes), { format: "png", width: 1000, height: 333, pages: 1, hasAlpha: true });
    const opaque = await fitImage(await flatImage(3000, 1000).png().toBuffer(), { maxBytes: 5 * MB, maxPx: 1000 });
    assert.equal(opaque.mime, "image/jpeg");
    assert.equal((await decodedImage(opaque.bytes)).hasAlpha, false);
  });

  it("applies EXIF orientation, and sends the first frame of an animated GIF", async () => {
    const rotated = await noisyImage(3000, 2000, 3).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    const upright = await fitImage(rotated, { maxBytes: 5 * MB, maxPx: 2048 });
    const { width, height } = await decodedImage(upright.bytes);
    assert.deepEqual([width, height], [1365, 2048]);

    const red = await flatImage(600, 400).removeAlpha().raw().toBuffer();
    const blue = await sharp({ create: { width: 600, height: 400, channels: 3, background: { r: 0, g: 0, b: 255 } } }).raw().toBuffer();
    const animated = await sharp(Buffer.concat([red, blue]), { raw: { width: 600, height: 800, channels: 3, pageHeight: 400 } }).gif({ delay: [100, 100] }).toBuffer();
    assert.equal((await decodedImage(animated)).pages, 2);
    const first = await fitImage(animated, { maxBytes: 5 * MB, maxPx: 300 });
    const d = await decodedImage(first.bytes);
    assert.deepEqual([d.pages, d.width, d.height], [1, 300, 200]);
    const { dominant } = await sharp(first.bytes).stats();
    assert.ok(dominant.r > 150 && dominant.b < 150, `the first (red) frame, got ${JSON.stringify(dominant)}`);
  });

  it("rejects unreadable bytes, decompression bombs and work past the timeout", async () => {
    await assert.rejects(fitImage(Buffer.alloc(100_000, 7), { maxBytes: 1000, maxPx: 2048 }), (err) => err instanceof ImageFitError && /could not be read as an image/.test(err.message));
    // a PNG whose header claims 20000 x 20000 pixels (CRC fixed up): refused before decoding
    const png = Buffer.from(await flatImage(8, 8).png().toBuffer());
    png.writeUInt32BE(20_000, 16);
    png.writeUInt32BE(20_000, 20);
    png.writeUInt32BE(crc32(png.subarray(12, 29)), 29);
    assert.deepEqual(readImageHeader(png), { format: "png", width: 20_000, height: 20_000 });
    await assert.rejects(fitImage(png, { maxBytes: MB, maxPx: 2048 }), (err) => err instanceof ImageFitError && /pixel limit/i.test(err.message));
    const photo = await noisyImage(3000, 2000, 3).jpeg().toBuffer();
    await assert.rejects(fitImage(photo, { maxBytes: MB, maxPx: 2048, timeoutMs: 1 }), (err) => err instanceof ImageFitError && /longer than/.test(err.message));
    // the queue goes on after a timeout
    assert.equal((await fitImage(photo, { maxBytes: 5 * MB, maxPx: 1024 })).width, 1024);
  });
});
