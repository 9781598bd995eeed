/**
 * The openai-http channel against the whole system (real nats-server, every actor a process,
 * the fake OpenAI LLM behind the agent-runner), with the real `openai` SDK as the client:
 * /v1/models lists the agents; a non-streaming completion is the run's reply and the session
 * (`user`) keeps its history; a streaming completion arrives as several content deltas, a stop
 * chunk and a usage chunk; a silent run answers ""; a bad token is a 401 OpenAI error; a
 * malformed or invalid body a 400; an unknown model a 404. The DM policy is "pairing": an API
 * client (bearer token) is a trusted peer and never gets a pairing code; with /verbose on, the
 * tool-call notes are not taken for the completion.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import type { ActorProcess } from "./harness/actors.js";
import { freePort } from "./harness/nats.js";
import { TestSystem } from "./harness/system.js";
import { messageText } from "./fakes/openai-server.js";

const TOKEN = "test-openai-http-token-0123456789";
const STREAMED = "one two three four five six seven";

describe("openai-http channel: the OpenAI SDK talks to LurkBot", () => {
  let system: TestSystem;
  let channel: ActorProcess;
  let baseURL: string;
  let client: OpenAI;

  before(async () => {
    const port = await freePort();
    system = await TestSystem.start({
      fake: { chunkDelayMs: 60 },
      config: { channels: { "openai-http": { enabled: true, port, token: TOKEN } }, routing: { dm: { policy: "pairing" } } },
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
});
