/**
 * The openai-http channel against the whole system (real nats-server, every actor a process,
 * the fake OpenAI LLM behind the agent-runner), with the real `openai` SDK as the client:
 * /v1/models lists the agents; a non-streaming completion is the run's reply and the session
 * (`user`) keeps its history; a streaming completion arrives as several content deltas, a stop
 * chunk and a usage chunk; a silent run answers ""; a bad token is a 401 OpenAI error; a
 * malformed or invalid body a 400; an unknown model a 404. The DM policy is "pairing": an API
 * client (bearer token) is a trusted peer and never gets a pairing code; with /verbose on, the
 * tool-call notes are not taken for the completion. Images: an `image_url` data URL is stored in
 * the media store and reaches the run by ref (an http(s) URL as a url); a malformed or over-cap
 * one is a 400; a reply's files are named in the completion's text.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import OpenAI from "openai";
import { envelope, inboundMessageSchema, STREAMS, subjects } from "../shared/contract/index.js";
import { MEDIA_DEFAULTS } from "../shared/runtime/config-media.js";
import { MediaStore } from "../shared/runtime/media.js";
import { waitFor } from "./harness/actors.js";
import type { ActorProcess } from "./harness/actors.js";
import { freePort } from "./harness/nats.js";
import { TestSystem } from "./harness/system.js";
import { messageText } from "./fakes/openai-server.js";

const TOKEN = "test-openai-http-token-0123456789";
const STREAMED = "one two three four five six seven";
const S = subjects();
/** media.maxFileMb of this test (~51 KB), so an over-cap image fits in the request body */
const MAX_FILE_MB = 0.05;
const MAX_FILE_BYTES = Math.floor(MAX_FILE_MB * 1024 * 1024);
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");

describe("openai-http channel: the OpenAI SDK talks to LurkBot", () => {
  let system: TestSystem;
  let channel: ActorProcess;
  let baseURL: string;
  let client: OpenAI;

  before(async () => {
    const port = await freePort();
    system = await TestSystem.start({
      fake: { chunkDelayMs: 60 },
      config: { channels: { "openai-http": { enabled: true, port, token: TOKEN } }, routing: { dm: { policy: "pairing" } }, media: { maxFileMb: MAX_FILE_MB } },
      files: { "notes.md": "the notes file" },
    });
    system.fake.responder = (body) => {
      const last = messageText(body.messages.filter((m) => m.role === "user").at(-1));
      if (last.includes("stream me")) return { kind: "text", text: STREAMED, chunks: 7 };
      if (last.includes("be silent")) return { kind: "text", text: "NO_REPLY" };
      return undefined;
    };
    channel = await system.startActor("channel-openai-http");
    baseURL = `http://127.0.0.1:${port}/v1`;
    client = new OpenAI({ apiKey: TOKEN, baseURL, maxRetries: 0, timeout: 30_000 });
  });

  after(async () => {
    await channel?.stop();
    await system?.stop();
  });

  it("GET /v1/models lists the configured agents", async () => {
    const models = await client.models.list();
    assert.deepEqual(models.data.map((m) => m.id), ["lurkbot/main"]);
    assert.equal(models.data[0]!.object, "model");
  });

  it("a non-streaming completion is the run's reply; the session keeps its history", async () => {
    const first = await client.chat.completions.create({ model: "lurkbot/main", messages: [{ role: "user", content: "hello there" }], user: "alice" });
    assert.equal(first.object, "chat.completion");
    assert.match(first.id, /^chatcmpl-/);
    assert.equal(first.choices[0]!.message.role, "assistant");
    assert.equal(first.choices[0]!.message.content, "echo: hello there");
    assert.equal(first.choices[0]!.finish_reason, "stop");
    assert.ok(first.usage && first.usage.prompt_tokens > 0 && first.usage.completion_tokens > 0, `usage ${JSON.stringify(first.usage)}`);
    const second = await client.chat.completions.create({ model: "lurkbot", messages: [{ role: "user", content: "and again" }], user: "alice" });
    assert.equal(second.choices[0]!.message.content, "echo: and again");
    const sent = system.fake.requests.at(-1)!.body.messages.map(messageText);
    assert.ok(sent.some((t) => t.includes("hello there")), "the second run saw the first message (same session)");
    await client.chat.completions.create({ model: "lurkbot/main", messages: [{ role: "user", content: "fresh start" }], user: "bob" });
    const bobSaw = system.fake.requests.at(-1)!.body.messages.map(messageText);
    assert.ok(!bobSaw.some((t) => t.includes("hello there")), "another user is another session");
  });

  it("a streaming completion arrives as deltas, a stop chunk and usage", async () => {
    const stream = await client.chat.completions.create({ model: "lurkbot/main", messages: [{ role: "user", content: "stream me please" }], user: "carol", stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    const contents = chunks.flatMap((c) => c.choices.map((ch) => ch.delta?.content ?? "")).filter(Boolean);
    assert.ok(contents.length > 1, `several content deltas, got ${JSON.stringify(contents)}`);
    assert.equal(contents.join(""), STREAMED);
    assert.ok(chunks.every((c) => c.object === "chat.completion.chunk" && c.id === chunks[0]!.id));
    assert.equal(chunks[0]!.choices[0]!.delta.role, "assistant");
    const stop = chunks.find((c) => c.choices[0]?.finish_reason === "stop");
    assert.ok(stop, "a stop chunk");
    const usage = chunks.at(-1)!;
    assert.deepEqual(usage.choices, []);
    assert.ok(usage.usage && usage.usage.total_tokens > 0);
  });

  it("under DM policy pairing an API client is a trusted peer: answered, never given a pairing code", async () => {
    const reply = await client.chat.completions.create({ model: "lurkbot/main", messages: [{ role: "user", content: "do you know me?" }], user: "stranger-42" });
    assert.equal(reply.choices[0]!.message.content, "echo: do you know me?");
    assert.doesNotMatch(reply.choices[0]!.message.content ?? "", /pairing code/);
  });

  it("with /verbose on the tool-call notes are not taken for the completion", async () => {
    const on = await client.chat.completions.create({ model: "lurkbot/main", messages: [{ role: "user", content: "/verbose on" }], user: "vera" });
    assert.match(on.choices[0]!.message.content ?? "", /verbose: low/);
    const reply = await client.chat.completions.create({ model: "lurkbot/main", messages: [{ role: "user", content: "read notes.md" }], user: "vera" });
    assert.match(reply.choices[0]!.message.content ?? "", /^tool said: .*the notes file/);
  });

  it("a silent run (NO_REPLY) answers with empty content", async () => {
    const reply = await client.chat.completions.create({ model: "lurkbot/main", messages: [{ role: "user", content: "be silent" }], user: "dave" });
    assert.equal(reply.choices[0]!.message.content, "");
  });

  it("a bad token is refused with a 401 OpenAI error", async () => {
    const bad = new OpenAI({ apiKey: "wrong-token", baseURL, maxRetries: 0 });
    await assert.rejects(bad.models.list(), (err: any) => err instanceof OpenAI.AuthenticationError && err.status === 401 && err.code === "invalid_api_key");
    await assert.rejects(bad.chat.completions.create({ model: "lurkbot/main", messages: [{ role: "user", content: "hi" }] }), (err: any) => err.status === 401);
    const res = await fetch(`${baseURL}/models`);
    assert.equal(res.status, 401);
    assert.equal(res.headers.get("content-type"), "application/json");
    const body = (await res.json()) as { error: { type: string; message: string } };
    assert.equal(body.error.type, "authentication_error");
  });

  it("a malformed body is a 400 JSON error; invalid requests and unknown models too", async () => {
    const res = await fetch(`${baseURL}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: "{not json" });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { type: string } };
    assert.equal(body.error.type, "invalid_request_error");
    await assert.rejects(client.chat.completions.create({ model: "lurkbot/main", messages: [] }), (err: any) => err instanceof OpenAI.BadRequestError && /messages/.test(err.message));
    await assert.rejects(client.chat.completions.create({ model: "lurkbot/main", messages: [{ role: "assistant", content: "no user" }] }), (err: any) => err.status === 400);
    await assert.rejects(client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }), (err: any) => err instanceof OpenAI.NotFoundError && err.code === "model_not_found");
    // the channel still serves
    const ok = await client.chat.completions.create({ model: "lurkbot/main", messages: [{ role: "user", content: "still here?" }], user: "erin" });
    assert.equal(ok.choices[0]!.message.content, "echo: still here?");
  });
  const lastInbound = async () => {
    const admin = await system.nats.connect("admin");
    try {
      const m = await (await jetstreamManager(admin)).streams.getMessage(STREAMS.inbound, { last_by_subj: S.inbound("openai-http") });
      return inboundMessageSchema.parse(m!.json());
    } finally {
      await admin.close();
    }
  };

  it("an image_url data URL is stored in the media store and reaches the run by ref; an http(s) URL stays a URL", async () => {
    const dataUrl = `data:image/png;base64,${PNG.toString("base64")}`;
    const reply = await client.chat.completions.create({ model: "lurkbot/main", user: "pictures", messages: [{ role: "user", content: [
      { type: "text", text: "what is in these pictures?" },
      { type: "image_url", image_url: { url: dataUrl } },
      { type: "image_url", image_url: { url: "https://example.org/cat.webp", detail: "low" } },
    ] }] });
    assert.equal(reply.choices[0]!.message.content, "echo: what is in these pictures?");
    const inbound = await lastInbound();
    assert.equal(inbound.text, "what is in these pictures?");
    const ref = createHash("sha256").update(PNG).digest("hex");
    assert.deepEqual(inbound.attachments, [
      { kind: "image", mime: "image/png", size: PNG.length, ref },
      { kind: "image", mime: "image/webp", url: "https://example.org/cat.webp" },
    ]);
    assert.ok(!JSON.stringify(inbound).includes(PNG.toString("base64")), "no bytes on the bus");
    const nc = await system.nats.connect("channel-openai-http");
    const stored = await new MediaStore(nc, { ...MEDIA_DEFAULTS, maxFileMb: MAX_FILE_MB }).get(ref);
    await nc.close();
    assert.deepEqual(Buffer.from(stored.bytes), PNG, "the stored bytes are the image's");
    assert.equal(stored.mime, "image/png");
    // the model saw the image (loaded from the store by the agent-runner)
    const seen = JSON.stringify(system.fake.requests.at(-1)!.body.messages);
    assert.ok(seen.includes(dataUrl), "the model got the image");
  });

  it("a malformed, non-image or over-cap image_url is a 400 in OpenAI's error shape and starts nothing", async () => {
    const ask = (url: string) => client.chat.completions.create({ model: "lurkbot/main", user: "bad-pictures", messages: [{ role: "user", content: [
      { type: "text", text: "refused picture" }, { type: "image_url", image_url: { url } },
    ] }] });
    const param = "messages[0].content[1].image_url.url";
    for (const url of ["data:image/png;base64,@@not-base64@@", "data:text/plain;base64,aGVsbG8=", "data:image/png,rawbytes", "ftp://example.org/x.png", ""]) {
      await assert.rejects(ask(url), (err: any) => err instanceof OpenAI.BadRequestError && err.code === "invalid_image_url" && err.param === param && err.type === "invalid_request_error", url);
    }
    const big = `data:image/png;base64,${Buffer.alloc(MAX_FILE_BYTES + 1, 1).toString("base64")}`;
    await assert.rejects(ask(big), (err: any) => err instanceof OpenAI.BadRequestError && err.code === "image_too_large" && /media\.maxFileMb/.test(err.message));
    assert.equal(system.fake.requests.filter((r) => JSON.stringify(r.body.messages).includes("refused picture")).length, 0, "no run");
  });

  it("a reply that carries only files answers with a note naming them, not an empty completion", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const before = system.fake.responder;
    system.fake.responder = async (body) => {
      if (messageText(body.messages.filter((m) => m.role === "user").at(-1)).includes("files only")) {
        await held;
        return { kind: "text", text: "too late" };
      }
      return before?.(body);
    };
    try {
      const pending = client.chat.completions.create({ model: "lurkbot/main", user: "files-only", messages: [{ role: "user", content: "files only please" }] });
      const inbound = await waitFor(async () => { const m = await lastInbound(); return m.text === "files only please" ? m : undefined; }, 10_000, "the inbound message");
      // a reply to it with a file and no text, as a run's reply would be delivered
      const out = envelope("lurk.outbound.message.v1", { channel: "openai-http", conversation: inbound.conversation, kind: "reply", replyTo: [inbound.id], text: "", attachments: [
        { kind: "image", mime: "image/png", name: "chart.png", ref: "c".repeat(64) },
      ] });
      const admin = await system.nats.connect("admin");
      await jetstream(admin).publish(S.outbound("openai-http", inbound.conversation), JSON.stringify(out), { msgID: out.id });
      await admin.close();
      const reply = await pending;
      assert.equal(reply.choices[0]!.message.content, "[image: chart.png could not be sent: a chat completion carries no files]");
    } finally {
      release();
      system.fake.responder = before;
    }
  });
});
