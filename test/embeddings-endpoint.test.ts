/**
 * `lurk.agent-runner.embed`: the vector codec and the config rules (an anthropic embedding model
 * is refused when the config is read, and an agent-runner with one does not start); then the
 * endpoint over a real nats-server with the agent-runner as a child process, through the real
 * OpenAI and Ollama SDKs against the fake servers: vectors and batches, the wire format each
 * SDK sends (`encoding_format: "base64"`), 429/500/404/timeouts classified into typed errors
 * (a cooled-down profile answered at once, without calling the provider), malformed requests
 * refused with typed errors while the actor keeps serving.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import OpenAI from "openai";
import { agentRunnerEmbedReply, decodeVector, encodeVector, LurkError, type AgentRunnerEmbedReply } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { parseConfig } from "../shared/runtime/config.js";
import { classifyProviderError } from "../services/agent-runner/providers/errors.js";
import { fakeEmbedding, FAKE_EMBED_DIMENSIONS } from "./fakes/embedding.js";
import { FakeOllamaServer } from "./fakes/ollama-server.js";
import { FakeOpenAIServer } from "./fakes/openai-server.js";
import { startActorProcess, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";

const vectorsOf = (reply: AgentRunnerEmbedReply) => reply.vectors.map((v) => Array.from(decodeVector(v, reply.dimensions)));
/** float32 round-trip of the fake model's vector */
const expected = (text: string) => Array.from(Float32Array.from(fakeEmbedding(text)));

describe("embedding vectors and config", () => {
  it("encodes vectors as base64 little-endian float32 and decodes them back", () => {
    const v = Float32Array.from([0.5, -1.25, 3e-8, 1]);
    const b64 = encodeVector(v);
    assert.equal(b64, Buffer.from(new Uint8Array(new Float32Array([0.5, -1.25, 3e-8, 1]).buffer)).toString("base64"));
    assert.deepEqual(Array.from(decodeVector(b64, 4)), Array.from(v));
    assert.equal(encodeVector([0.5, -1.25, 3e-8, 1]), b64, "plain numbers encode the same");
    assert.throws(() => decodeVector(b64, 5), (e: unknown) => LurkError.is(e) && e.code === "VALIDATION_FAILED");
    assert.throws(() => decodeVector(encodeVector([Number.NaN])), /finite/);
    assert.equal(agentRunnerEmbedReply.safeParse({ model: "openai/x", dimensions: 5, vectors: [b64] }).success, false, "a vector of another length is refused");
    assert.ok(agentRunnerEmbedReply.safeParse({ model: "openai/x", dimensions: 4, vectors: [b64] }).success);
  });

  it("classifies the OpenAI SDK v6's timeout and connection errors by their class (their name is \"Error\")", () => {
    const timeout = classifyProviderError(new OpenAI.APIConnectionTimeoutError(), "openai");
    assert.deepEqual([timeout.code, timeout.retryable], ["PROVIDER_TIMEOUT", true]);
    const connection = classifyProviderError(new OpenAI.APIConnectionError({ message: "Connection error." }), "openai");
    assert.deepEqual([connection.code, connection.retryable], ["PROVIDER_ERROR", true]);
  });

  it("is off by default and takes an OpenAI or Ollama model with defaults", () => {
    assert.equal(parseConfig({}, {}, "/tmp/lurk-emb").memory.embeddings, undefined);
    const c = parseConfig({ memory: { embeddings: { model: "ollama/nomic-embed-text" } } }, {}, "/tmp/lurk-emb").memory.embeddings;
    assert.deepEqual(c, { model: "ollama/nomic-embed-text", vectorWeight: 0.7, batchSize: 32, maxChunks: 2000, timeoutMs: 20_000, cacheMaxEntries: 20_000 });
    assert.equal(parseConfig({}, { LURKBOT_EMBEDDING_MODEL: "openai/text-embedding-3-small" }, "/tmp/lurk-emb").memory.embeddings?.model, "openai/text-embedding-3-small");
  });

  it("refuses an anthropic embedding model, saying what to use instead", () => {
    assert.throws(() => parseConfig({ memory: { embeddings: { model: "anthropic/claude-sonnet-4-5" } } }, {}, "/tmp/lurk-emb"), (e: unknown) => {
      assert.ok(LurkError.is(e));
      assert.equal(e.code, "CONFIG_INVALID");
      assert.match(e.message, /memory\.embeddings\.model: "anthropic\/claude-sonnet-4-5": Anthropic has no embeddings API/);
      assert.match(e.message, /openai\/text-embedding-3-small/);
      assert.match(e.message, /ollama\/nomic-embed-text/);
      return true;
    });
    assert.throws(() => parseConfig({ memory: { embeddings: { model: "mistral/embed" } } }, {}, "/tmp/lurk-emb"), /not provider\/model of an embedding provider \(openai, ollama\)/);
    assert.throws(() => parseConfig({ memory: { embeddings: { model: "openai/x", vectorWeight: 1.5 } } }, {}, "/tmp/lurk-emb"), /vectorWeight/);
  });

  it("an agent-runner configured with an anthropic embedding model does not start", async () => {
    const nats = await TestNats.start();
    try {
      writeFileSync(join(nats.home, "config.json"), JSON.stringify({ memory: { embeddings: { model: "anthropic/claude-haiku-4-5" } } }));
      await assert.rejects(startActorProcess("agent-runner", nats, {}, 15_000), /exited with 78 before ready:[\s\S]*Anthropic has no embeddings API/);
    } finally {
      await nats.stop();
    }
  });
});

describe("lurk.agent-runner.embed over the bus", () => {
  let nats: TestNats;
  let openai: FakeOpenAIServer;
  let ollama: FakeOllamaServer;
  let runner: ActorProcess | undefined;
  let toolsNc: NatsConnection;
  let client: BusClient;

  before(async () => {
    nats = await TestNats.start();
    openai = await FakeOpenAIServer.start();
    openai.acceptsAuth = (authorization) => authorization === "Bearer sk-embed-test" || authorization === "Bearer sk-embed-backup";
    ollama = await FakeOllamaServer.start({ models: ["nomic-embed-text"] });
    // a second OpenAI auth profile, for failover
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({
      memory: { embeddings: { model: "openai/text-embedding-3-small" } },
      providers: { openai: { profiles: [{ id: "backup", apiKey: "sk-embed-backup" }] } },
    }));
    runner = await startActorProcess("agent-runner", nats, { OPENAI_BASE_URL: openai.baseUrl, OPENAI_API_KEY: "sk-embed-test", OLLAMA_HOST: ollama.url });
    toolsNc = await nats.connect("tools");
    client = new BusClient(toolsNc);
  });
  after(async () => {
    await toolsNc?.close();
    await runner?.stop();
    await openai?.close();
    await ollama?.close();
    await nats?.stop();
  });
  beforeEach(() => {
    openai.reset();
    ollama.reset();
  });

  const failure = async (body: Record<string, unknown>, timeoutMs = 10_000): Promise<LurkError> => {
    try {
      await client.call("agent-runner", "embed", body as never, { timeoutMs });
    } catch (err) {
      assert.ok(LurkError.is(err), String(err));
      return err;
    }
    return assert.fail("the request succeeded");
  };

  it("embeds texts with the configured OpenAI model through the SDK (base64 on the wire)", async () => {
    const texts = ["My car is a red sedan.", "Coffee every morning."];
    const reply = await client.call("agent-runner", "embed", { texts });
    assert.equal(reply.model, "openai/text-embedding-3-small");
    assert.equal(reply.dimensions, FAKE_EMBED_DIMENSIONS);
    assert.deepEqual(vectorsOf(reply), texts.map(expected));
    assert.ok(reply.usage && reply.usage.tokens > 0);
    assert.equal(openai.embedRequests.length, 1);
    const sent = openai.embedRequests[0]!;
    assert.deepEqual([sent.model, sent.input, sent.encodingFormat], ["text-embedding-3-small", texts, "base64"]);
  });

  it("sends a batch in one request and keeps the texts' order", async () => {
    const texts = Array.from({ length: 100 }, (_, i) => `note ${i}: ${i % 2 ? "automobile" : "espresso"} number ${i}`);
    const reply = await client.call("agent-runner", "embed", { texts });
    assert.equal(openai.embedRequests.length, 1);
    assert.equal(openai.embedRequests[0]!.input.length, 100);
    assert.deepEqual(vectorsOf(reply), texts.map(expected));
  });

  it("embeds with an Ollama model through the ollama client (/api/embed)", async () => {
    const texts = ["a kayak on the lake", "the dentist on Thursday"];
    const reply = await client.call("agent-runner", "embed", { texts, model: "ollama/nomic-embed-text" });
    assert.equal(reply.model, "ollama/nomic-embed-text");
    assert.deepEqual(vectorsOf(reply), texts.map(expected));
    assert.deepEqual(ollama.embedRequests.map((r) => [r.model, r.input]), [["nomic-embed-text", texts]]);
    assert.equal(openai.embedRequests.length, 0);
    const missing = await failure({ texts: ["x"], model: "ollama/not-pulled" });
    assert.deepEqual([missing.code, missing.retryable], ["PROVIDER_ERROR", false]);
    assert.match(missing.message, /ollama pull not-pulled/);
  });

  it("fails over to the next auth profile when one is rate limited, as run calls do", async () => {
    openai.enqueueEmbed({ kind: "error", status: 429 });
    const reply = await client.call("agent-runner", "embed", { texts: ["failover"], model: "openai/embed-failover" });
    assert.deepEqual(vectorsOf(reply), [expected("failover")]);
    const auth = openai.embedRequests.map((r) => r.authorization);
    assert.equal(auth.length, 2);
    assert.notEqual(auth[0], auth[1], "the second request used the other profile's key");
  });

  it("classifies a 429 as PROVIDER_RATE_LIMIT and answers at once while the profiles cool down", async () => {
    openai.enqueueEmbed({ kind: "error", status: 429, headers: { "retry-after-ms": "20" } }, { kind: "error", status: 429 });
    const limited = await failure({ texts: ["hello"], model: "openai/embed-429" });
    assert.deepEqual([limited.code, limited.retryable], ["PROVIDER_RATE_LIMIT", true]);
    assert.match(limited.message, /Rate limit reached/);
    assert.equal(openai.embedRequests.length, 2, "both profiles were asked");
    const again = await failure({ texts: ["hello"], model: "openai/embed-429" });
    assert.equal(again.code, "PROVIDER_RATE_LIMIT");
    assert.match(again.message, /every auth profile of openai is cooling down after a rate_limit failure/);
    assert.equal(openai.embedRequests.length, 2, "no cooled-down profile was asked again");
  });

  it("classifies a 500 as a retryable PROVIDER_ERROR, a bad request as a final one, and a hang as PROVIDER_TIMEOUT", async () => {
    openai.enqueueEmbed({ kind: "error", status: 500 }, { kind: "error", status: 500 });
    const e500 = await failure({ texts: ["hello"], model: "openai/embed-500" });
    assert.deepEqual([e500.code, e500.retryable], ["PROVIDER_ERROR", true]);
    openai.enqueueEmbed({ kind: "error", status: 400, message: "This model does not support embeddings." });
    const e400 = await failure({ texts: ["hello"], model: "openai/gpt-4o-mini" });
    assert.deepEqual([e400.code, e400.retryable], ["PROVIDER_ERROR", false]);
    openai.enqueueEmbed({ kind: "hang" });
    const started = Date.now();
    const hung = await failure({ texts: ["hello"], model: "openai/embed-hang", timeoutMs: 1_000 });
    assert.equal(hung.code, "PROVIDER_TIMEOUT");
    assert.ok(Date.now() - started < 5_000);
  });

  it("refuses malformed requests with typed errors and keeps serving", async () => {
    assert.equal((await failure({ texts: [] })).code, "VALIDATION_FAILED");
    assert.equal((await failure({ texts: "not a list" })).code, "VALIDATION_FAILED");
    assert.equal((await failure({ texts: [""] })).code, "VALIDATION_FAILED");
    assert.equal((await failure({ texts: Array.from({ length: 129 }, () => "x") })).code, "VALIDATION_FAILED");
    assert.equal((await failure({ texts: Array.from({ length: 20 }, () => "x".repeat(15_000)) })).code, "VALIDATION_FAILED", "over the total size");
    const anthropic = await failure({ texts: ["x"], model: "anthropic/claude-haiku-4-5" });
    assert.equal(anthropic.code, "VALIDATION_FAILED");
    assert.match(anthropic.message, /Anthropic has no embeddings API; use an OpenAI embedding model/);
    const raw = await toolsNc.request("lurk.agent-runner.embed", "{not json", { timeout: 5_000 });
    assert.equal(raw.headers?.get("Nats-Service-Error-Code"), "400");
    assert.match(raw.string(), /BAD_JSON/);
    assert.equal(openai.embedRequests.length, 0, "nothing malformed reached the provider");
    const reply = await client.call("agent-runner", "embed", { texts: ["still serving"] });
    assert.equal(reply.vectors.length, 1);
  });
});
