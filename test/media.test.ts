/**
 * The media store over a real nats-server and the whole system as processes: files on the bus by
 * reference. Each actor user gets only its share of the store (channels, tools and the
 * agent-runner, for voice replies, write; the router has none); a user's image goes to the model as bytes while the transcript keeps its
 * ref, scaled down first when it is above media.imageMaxPx or media.maxImageMb; media_save puts a user's file into the workspace; the message tool sends workspace files
 * as attachments; the channel kit's download helpers cap what they fetch; the store's size and
 * retention come from the config.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  MEDIA_BUCKET, outboundMessageSchema, safeParseJson, subjects, toolCallReply, type OutboundMessage, type ToolCallReply,
} from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { createLogger } from "../shared/runtime/logger.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { downloadCapped, storeInboundFile } from "../shared/runtime/channel/media.js";
import { MediaStore, sha256Hex } from "../shared/runtime/media.js";
import { ensureStreams } from "../shared/runtime/streams.js";
import { closeLoopback, listenLoopback } from "./fakes/http.js";
import { waitFor } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { decodedImage, flatImage, noisyImage } from "./harness/images.js";
import { CliClient, TestSystem } from "./harness/system.js";
import { textOf } from "./harness/tools-actor.js";

const S = subjects();
const log = createLogger("test", "silent");
/** a 1x1 PNG */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");
const store = (nc: NatsConnection, media: Partial<typeof MEDIA_DEFAULTS> = {}) => new MediaStore(nc, { ...MEDIA_DEFAULTS, ...media });

type ContentPart = { type: string; text?: string; image_url?: { url: string } };
const partsOf = (content: unknown): ContentPart[] => (Array.isArray(content) ? content as ContentPart[] : [{ type: "text", text: String(content ?? "") }]);
/** the images in a message to the fake LLM: their data URLs' MIME type and bytes */
const imagesOf = (content: unknown): Array<{ mime: string; bytes: Buffer }> => partsOf(content).filter((p) => p.type === "image_url").map((p) => {
  const m = /^data:([^;,]+);base64,(.*)$/s.exec(p.image_url!.url);
  assert.ok(m, `a data URL: ${p.image_url!.url.slice(0, 60)}`);
  return { mime: m[1]!, bytes: Buffer.from(m[2]!, "base64") };
});
/** media.maxImageMb of this file's system: 51.2 KB, so that test images above it stay small */
const MAX_IMAGE_MB = 0.05;
const IMAGE_CAP = Math.floor(MAX_IMAGE_MB * 1024 * 1024);

describe("media store", () => {
  let system: TestSystem;
  let channelNc: NatsConnection;
  let runnerNc: NatsConnection;
  let cli: CliClient;
  let n = 0;

  before(async () => {
    system = await TestSystem.start({ config: { agents: [{ id: "main", default: true, toolProfile: "full" }], media: { maxImageMb: MAX_IMAGE_MB } }, files: { "report.csv": "a,b\n1,2\n" } });
    channelNc = await system.nats.connect("channel-telegram");
    runnerNc = await system.nats.connect("agent-runner");
    cli = await CliClient.connect(system.nats);
  });
  after(async () => {
    await cli?.close();
    await channelNc?.close();
    await runnerNc?.close();
    await system?.stop();
  });

  const callTool = (tool: string, args: Record<string, unknown>): Promise<ToolCallReply> =>
    new BusClient(runnerNc).callSubject(`lurk.tools.call.${tool}`, "lurk.tools.call.v1", {
      toolCallId: `media-${++n}`, runId: "run-media", sessionKey: "agent:main:main", agentId: "main", tool, args,
      origin: { channel: "cli", conversation: "files", messageIds: [] },
    }, toolCallReply, { timeoutMs: 20_000 });

  it("stores a file once under its SHA-256; the agent-runner reads (and stores voice replies), the router may not write", async () => {
    const channel = store(channelNc);
    const first = await channel.put(PNG, { mime: "image/png", name: "dot.png" });
    assert.equal(first.ref, sha256Hex(PNG));
    assert.equal((await channel.put(PNG, { mime: "image/png", name: "again.png" })).ref, first.ref);
    const admin = await system.nats.connect("admin");
    const info = await (await jetstreamManager(admin)).streams.info(`OBJ_${MEDIA_BUCKET}`);
    await admin.close();
    assert.equal(info.state.messages, 2, "one chunk and one meta message: the second put stored nothing");
    const got = await store(runnerNc).get(first.ref);
    assert.deepEqual(Buffer.from(got.bytes), PNG);
    assert.equal(got.mime, "image/png");
    assert.equal(got.name, "dot.png");
    const routerNc = await system.nats.connect("router");
    try {
      await assert.rejects(store(routerNc).put(Buffer.from("not allowed"), { mime: "text/plain" }), /permission|not be stored|timeout|not available/i);
    } finally {
      await routerNc.close();
    }
    await assert.rejects(channel.get("0".repeat(64)), (err: { code?: string }) => err.code === "NOT_FOUND");
    await assert.rejects(channel.get("../etc/passwd"), (err: { code?: string }) => err.code === "VALIDATION_FAILED");
    await assert.rejects(store(channelNc, { maxFileMb: 0.001 }).put(Buffer.alloc(2_000), { mime: "application/octet-stream", name: "big.bin" }),
      (err: { code?: string; message: string }) => err.code === "LIMIT_EXCEEDED" && /big\.bin.*media\.maxFileMb/.test(err.message));
  });

  it("a user's image reaches the model as bytes; the transcript keeps only its ref", async () => {
    const { ref } = await store(channelNc).put(PNG, { mime: "image/png", name: "dot.png" });
    system.fake.reset();
    system.fake.enqueue({ kind: "text", text: "a single pixel" }, { kind: "text", text: "still a pixel" });
    const reply = await cli.send("what is this?", { sessionName: "pics", attachments: [{ kind: "image", mime: "image/png", name: "dot.png", size: PNG.length, ref }] });
    assert.equal(reply.text, "a single pixel");
    const userParts = partsOf(system.fake.requests[0]!.body.messages.at(-1)!.content);
    assert.deepEqual(userParts.map((p) => p.type), ["text", "image_url"]);
    assert.equal(userParts[1]!.image_url!.url, `data:image/png;base64,${PNG.toString("base64")}`);
    // the prompt tells the model how files arrive and leave
    const systemText = String(system.fake.requests[0]!.body.messages[0]!.content);
    assert.match(systemText, /\[attachment …\] notes with a media ref; `media_save` puts one into the workspace/);
    assert.match(systemText, /to send files from the workspace \(its `files`\)/);
    // the next turn of the session sends the image again, loaded from the store by its ref
    await cli.send("and now?", { sessionName: "pics" });
    const history = system.fake.requests[1]!.body.messages;
    assert.ok(history.some((m) => partsOf(m.content).some((p) => p.image_url?.url.endsWith(PNG.toString("base64")))));
    const records = (await new BusClient(runnerNc).call("sessions", "history", { sessionKey: "agent:main:cli:dm:pics", limit: 20 })).records;
    const stored = JSON.stringify(records);
    assert.ok(stored.includes(ref), "the transcript names the ref");
    assert.ok(!stored.includes(PNG.toString("base64")), "the transcript holds no image bytes");
  });

  it("an image the store does not have becomes a note; a file becomes a note with its ref and media_save", async () => {
    system.fake.reset();
    system.fake.enqueue({ kind: "text", text: "noted" });
    const missing = "f".repeat(64);
    const { ref: fileRef } = await store(channelNc).put(Buffer.from("%PDF-1.4 fake"), { mime: "application/pdf", name: "paper.pdf" });
    await cli.send("look", { sessionName: "notes", attachments: [
      { kind: "image", mime: "image/jpeg", name: "gone.jpg", ref: missing },
      { kind: "file", mime: "application/pdf", name: "paper.pdf", size: 13, ref: fileRef },
      { kind: "file", mime: "application/zip", name: "huge.zip", error: "not downloaded: 30.0 MB is above the 20.0 MB cap (media.maxFileMb)" },
      { kind: "image", mime: "image/svg+xml", name: "logo.svg", size: 13, ref: fileRef },
    ] });
    const text = partsOf(system.fake.requests[0]!.body.messages.at(-1)!.content).map((p) => p.text ?? "").join("\n");
    assert.match(text, /\[image no longer available: media f{12}… is not in the media store/);
    // the document reader tried it: no valid PDF, and the note says so
    assert.match(text, new RegExp(`paper\\.pdf \\(application/pdf, 13 bytes\\), media ref ${fileRef} \\(its text could not be read: it is not a valid PDF [^\\]]*\\): the media_save tool`));
    assert.match(text, /huge\.zip \(application\/zip\) could not be received: not downloaded/);
    // an image type not every provider takes goes as a file
    assert.match(text, /logo\.svg \(image\/svg\+xml, 13 bytes\), media ref/);
    assert.equal(partsOf(system.fake.requests[0]!.body.messages.at(-1)!.content).filter((p) => p.type === "image_url").length, 0);
  });

  it("scales an image wider or taller than media.imageMaxPx into 2048 x 2048; the MIME type follows the new bytes", async () => {
    // a phone photo, and a flat 3000 x 2000 PNG that is only a few KB (its size alone is no reason to scale it)
    const photo = await noisyImage(3000, 2000, 3).jpeg({ quality: 90 }).toBuffer();
    const wide = await flatImage(3000, 2000).png({ palette: true }).toBuffer();
    assert.ok(wide.length < IMAGE_CAP, `${wide.length} bytes`);
    const channel = store(channelNc);
    const [p, w] = [await channel.put(photo, { mime: "image/jpeg", name: "photo.jpg" }), await channel.put(wide, { mime: "image/png", name: "wide.png" })];
    system.fake.reset();
    system.fake.enqueue({ kind: "text", text: "two pictures" });
    const reply = await cli.send("what are these?", { sessionName: "big-pics", attachments: [
      { kind: "image", mime: "image/jpeg", name: "photo.jpg", size: photo.length, ref: p.ref },
      { kind: "image", mime: "image/png", name: "wide.png", size: wide.length, ref: w.ref },
    ] });
    assert.equal(reply.text, "two pictures");
    const images = imagesOf(system.fake.requests[0]!.body.messages.at(-1)!.content);
    assert.equal(images.length, 2);
    for (const image of images) {
      const d = await decodedImage(image.bytes);
      assert.equal(image.mime, `image/${d.format}`, "the MIME type is what the bytes are");
      assert.ok(d.width <= 2048 && d.height <= 2048, `${d.width}x${d.height}`);
      assert.ok(image.bytes.length <= IMAGE_CAP, `${image.bytes.length} bytes`);
    }
    assert.equal((await decodedImage(images[0]!.bytes)).format, "jpeg");
    // the opaque PNG: scaled for its size in pixels alone, re-encoded as JPEG
    assert.deepEqual(await decodedImage(images[1]!.bytes), { format: "jpeg", width: 2048, height: 1365, pages: 1, hasAlpha: false });
    assert.equal(images[1]!.mime, "image/jpeg");
  });

  it("scales an image above media.maxImageMb under it, and sends the same scaled bytes on the next turn", async () => {
    const sticker = await noisyImage(400, 300, 4).png().toBuffer();
    assert.ok(sticker.length > IMAGE_CAP * 4, `${sticker.length} bytes`);
    const { ref } = await store(channelNc).put(sticker, { mime: "image/png", name: "sticker.png" });
    system.fake.reset();
    system.fake.enqueue({ kind: "text", text: "a sticker" }, { kind: "text", text: "the same sticker" });
    const reply = await cli.send("look", { sessionName: "heavy-pic", attachments: [{ kind: "image", mime: "image/png", name: "sticker.png", size: sticker.length, ref }] });
    assert.equal(reply.text, "a sticker");
    const [image] = imagesOf(system.fake.requests[0]!.body.messages.at(-1)!.content);
    assert.ok(image, "the model gets it as an image, not a note");
    assert.ok(image.bytes.length <= IMAGE_CAP, `${image.bytes.length} bytes`);
    const d = await decodedImage(image.bytes);
    assert.deepEqual([image.mime, d.format, d.hasAlpha], ["image/png", "png", true], "transparency kept as PNG");
    assert.ok(d.width < 400 && Math.abs(d.width / d.height - 4 / 3) < 0.03, `${d.width}x${d.height}`);
    await cli.send("again?", { sessionName: "heavy-pic" });
    const again = system.fake.requests[1]!.body.messages.flatMap((m) => imagesOf(m.content));
    assert.equal(again.length, 1);
    assert.deepEqual(again[0], image);
  });

  it("sends an image within both limits byte for byte, typed by what its bytes are", async () => {
    const small = await noisyImage(64, 48, 3).jpeg().toBuffer();
    const labelledWrong = await noisyImage(40, 30, 3).png().toBuffer();
    assert.ok(small.length < IMAGE_CAP && labelledWrong.length < IMAGE_CAP);
    const channel = store(channelNc);
    const [s, l] = [await channel.put(small, { mime: "image/jpeg", name: "small.jpg" }), await channel.put(labelledWrong, { mime: "image/jpeg", name: "really.png" })];
    system.fake.reset();
    system.fake.enqueue({ kind: "text", text: "small ones" });
    await cli.send("and these?", { sessionName: "small-pics", attachments: [
      { kind: "image", mime: "image/jpeg", name: "small.jpg", size: small.length, ref: s.ref },
      { kind: "image", mime: "image/jpeg", name: "really.png", size: labelledWrong.length, ref: l.ref },
    ] });
    const images = imagesOf(system.fake.requests[0]!.body.messages.at(-1)!.content);
    assert.deepEqual(images, [{ mime: "image/jpeg", bytes: small }, { mime: "image/png", bytes: labelledWrong }]);
  });

  it("a corrupt image above media.maxImageMb becomes a note saying why; the run still answers", async () => {
    const corrupt = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(IMAGE_CAP * 2, 0x5a)]);
    const { ref } = await store(channelNc).put(corrupt, { mime: "image/jpeg", name: "broken.jpg" });
    system.fake.reset();
    system.fake.enqueue({ kind: "text", text: "I cannot see it" });
    const reply = await cli.send("what is this?", { sessionName: "broken-pic", attachments: [{ kind: "image", mime: "image/jpeg", name: "broken.jpg", size: corrupt.length, ref }] });
    assert.equal(reply.text, "I cannot see it");
    const content = system.fake.requests[0]!.body.messages.at(-1)!.content;
    assert.equal(imagesOf(content).length, 0);
    const text = partsOf(content).map((p) => p.text ?? "").join("\n");
    assert.match(text, /\[image not shown to you: it could not be fitted to media\.maxImageMb \(51\.2 KB\) and media\.imageMaxPx \(2048 px\): it could not be read as an image: /);
  });

  it("media_save writes a user's file into the workspace", async () => {
    const bytes = Buffer.from("name,score\nada,10\n");
    const { ref } = await store(channelNc).put(bytes, { mime: "text/csv", name: "../../scores.csv" });
    const saved = await callTool("media_save", { ref });
    assert.equal(saved.isError, false, textOf(saved));
    assert.match(textOf(saved), /Saved media\/scores\.csv \(text\/csv/);
    assert.deepEqual(readFileSync(join(system.workspace, "media", "scores.csv")), bytes);
    const named = await callTool("media_save", { ref, path: "data/in.csv" });
    assert.equal(named.isError, false, textOf(named));
    assert.deepEqual(readFileSync(join(system.workspace, "data", "in.csv")), bytes);
    const outside = await callTool("media_save", { ref, path: "../escape.csv" });
    assert.equal(outside.errorCode, "PATH_ESCAPE");
    const gone = await callTool("media_save", { ref: "e".repeat(64) });
    assert.equal(gone.errorCode, "NOT_FOUND");
  });

  it("the message tool sends workspace files as attachments by ref", async () => {
    const outbound: OutboundMessage[] = [];
    const sub = cli.nc.subscribe(S.outbound("cli", "files"), { callback: (_e, m) => void outbound.push(outboundMessageSchema.parse(safeParseJson(m.data))) });
    writeFileSync(join(system.workspace, "chart.png"), PNG);
    const sent = await callTool("message", { text: "here you go", files: ["report.csv", "chart.png"] });
    assert.equal(sent.isError, false, textOf(sent));
    assert.match(textOf(sent), /with report\.csv, chart\.png/);
    const msg = await waitFor(() => outbound[0], 5_000, "the notice");
    assert.equal(msg.text, "here you go");
    assert.deepEqual(msg.attachments.map((a) => [a.kind, a.mime, a.name]), [["file", "text/csv", "report.csv"], ["image", "image/png", "chart.png"]]);
    const csv = await store(channelNc).get(msg.attachments[0]!.ref!);
    assert.equal(Buffer.from(csv.bytes).toString(), "a,b\n1,2\n");
    assert.deepEqual(Buffer.from((await store(channelNc).get(msg.attachments[1]!.ref!)).bytes), PNG);
    const missing = await callTool("message", { files: ["nope.txt"] });
    assert.equal(missing.errorCode, "NOT_FOUND");
    const empty = await callTool("message", {});
    assert.equal(empty.errorCode, "TOOL_INVALID_ARGS");
    sub.unsubscribe();
  });

  it("inbound downloads are capped by the announced size and by what arrives", async () => {
    const body = Buffer.alloc(50_000, 7);
    let requests = 0;
    const server: Server = createServer((req, res) => {
      requests++;
      if (req.url === "/lying") {
        // announces nothing, streams more than the cap
        res.writeHead(200, { "content-type": "application/octet-stream" });
        res.end(body);
        return;
      }
      if (req.url === "/missing") {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-type": "image/png", "content-length": String(PNG.length) });
      res.end(PNG);
    });
    const base = await listenLoopback(server, 0);
    try {
      const media = store(channelNc, { maxFileMb: 0.01 });
      const fetchFrom = (path: string) => (maxBytes: number, signal: AbortSignal) => downloadCapped(`${base}${path}`, { maxBytes, signal });
      const ok = await storeInboundFile(media, { name: "dot.png" }, fetchFrom("/dot"), log);
      assert.deepEqual({ kind: ok.kind, mime: ok.mime, ref: ok.ref, error: ok.error }, { kind: "image", mime: "image/png", ref: sha256Hex(PNG), error: undefined });
      const before = requests;
      const announced = await storeInboundFile(media, { name: "big.bin", size: 50_000 }, fetchFrom("/dot"), log);
      assert.match(announced.error ?? "", /not downloaded: 48\.8 KB is above the 10\.2 KB cap/);
      assert.equal(requests, before, "a file announced above the cap is not fetched");
      const streamed = await storeInboundFile(media, { name: "lying.bin" }, fetchFrom("/lying"), log);
      assert.equal(streamed.ref, undefined);
      assert.match(streamed.error ?? "", /above the 10\.2 KB cap/);
      const failed = await storeInboundFile(media, { name: "x.txt", mime: "text/plain" }, fetchFrom("/missing"), log);
      assert.match(failed.error ?? "", /download failed: HTTP 404/);
    } finally {
      await closeLoopback(server);
    }
  });
});

describe("media store settings", () => {
  let nats: TestNats;
  before(async () => {
    nats = await TestNats.start();
  });
  after(async () => nats?.stop());

  it("applies media.retentionDays and media.storeMb, and refuses files once full", async () => {
    const admin = await nats.connect("admin");
    try {
      await ensureStreams(admin, nats.prefix, 1, { retentionDays: 2, storeMb: 16 });
      const { config } = await (await jetstreamManager(admin)).streams.info(`OBJ_${MEDIA_BUCKET}`);
      assert.equal(config.max_age, 2 * 24 * 3600 * 1e9);
      assert.equal(config.max_bytes, 16 * 1024 * 1024);
      const tools = await nats.connect("tools");
      try {
        const media = store(tools);
        await media.put(Buffer.alloc(9 * 1024 * 1024, 1), { mime: "application/octet-stream", name: "one.bin" });
        await assert.rejects(media.put(Buffer.alloc(9 * 1024 * 1024, 2), { mime: "application/octet-stream", name: "two.bin" }),
          (err: { code?: string; message: string }) => err.code === "LIMIT_EXCEEDED" && /media store is full: raise media\.storeMb/.test(err.message));
      } finally {
        await tools.close();
      }
    } finally {
      await admin.close();
    }
  });
});
