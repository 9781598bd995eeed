/**
 * Hybrid memory_search (memory.embeddings): the vector cache (real LMDB: kept across a reopen,
 * least recently used evicted over its cap), the ranking as a pure function, which passages get
 * vectors; then memory_search over a real nats-server with the tools actor (real worker threads)
 * and the agent-runner as child processes, the agent-runner embedding through the OpenAI SDK
 * (and, second, the ollama client) against the fake servers, whose requests are counted:
 * "automobile" finds the paragraph about a car that shares no word with it, exact keywords still
 * rank first, unchanged passages are never embedded twice (a changed file only its new passage),
 * the cache survives a restart of the tools actor, and a missing, hanging or failing embedding
 * gives keyword results with a note instead of an error.
 */
import assert from "node:assert/strict";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { BusClient } from "../shared/runtime/client.js";
import { TOUCH_AFTER_MS, VectorCache } from "../services/tools/embeddings/cache.js";
import { hybridSearch } from "../services/tools/memory-hybrid.js";
import { chunkMarkdown, searchDocs, type Chunk } from "../services/tools/memory-index.js";
import { chunksForVectors } from "../services/tools/memory-vectors.js";
import { FakeOllamaServer } from "./fakes/ollama-server.js";
import { FakeOpenAIServer } from "./fakes/openai-server.js";
import { startActorProcess, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { toolCaller } from "./harness/tools-actor.js";

const unitVector = (...xs: number[]) => {
  const n = Math.hypot(...xs);
  return Float32Array.from(xs.map((x) => x / n));
};

describe("vector cache (LMDB)", () => {
  it("keeps vectors across a reopen and evicts the least recently used over its cap", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lurk-vector-cache-"));
    let now = 1_000_000;
    try {
      let cache = new VectorCache(dir, 10, () => now);
      const v = (i: number) => unitVector(i + 1, 1, 0.5);
      await cache.putMany("m", Array.from({ length: 10 }, (_, i) => ({ hash: `h${i}`, vector: v(i) })));
      await cache.close();
      cache = new VectorCache(dir, 10, () => now);
      assert.equal(cache.count, 10);
      assert.deepEqual(Array.from(cache.get("m", "h3")!), Array.from(v(3)), "the same float32s after a reopen");
      assert.equal(cache.get("other-model", "h3"), undefined, "keyed by model too");
      now += TOUCH_AFTER_MS + 1;
      for (const i of [0, 1, 2]) assert.ok(cache.get("m", `h${i}`), "used again: their use time is renewed");
      now += 1;
      await cache.putMany("m", Array.from({ length: 5 }, (_, i) => ({ hash: `new${i}`, vector: v(i) })));
      assert.ok(cache.count <= 10, `at most the cap: ${cache.count}`);
      for (const key of ["h0", "h1", "h2", "new0", "new4"]) assert.ok(cache.get("m", key), `${key} is kept`);
      assert.equal(cache.get("m", "h3"), undefined, "an entry not used since it was stored went first");
      await cache.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("hybrid ranking (pure)", () => {
  const doc = (path: string, text: string, mtimeMs = 0) => ({ path, chunks: chunkMarkdown(text), mtimeMs });

  it("finds a passage by meaning alone and blends keyword and vector scores", () => {
    const docs = [doc("MEMORY.md", "the blue volvo is serviced in march\n\nkayak trips on the lake\n\nkayak shop opening hours\n")];
    const [volvo, trips, shop] = docs[0]!.chunks as [Chunk, Chunk, Chunk];
    const vectors = new Map([[volvo, unitVector(1, 0, 0)], [trips, unitVector(0, 1, 0.2)], [shop, unitVector(0, 0.2, 1)]]);
    const of = (c: Chunk) => vectors.get(c);
    assert.deepEqual(searchDocs(docs, "automobile", { maxResults: 5 }), [], "no keyword in common");
    const byMeaning = hybridSearch(docs, "automobile", unitVector(1, 0.1, 0), of, { maxResults: 3, vectorWeight: 0.7 });
    assert.equal(byMeaning[0]!.startLine, 1);
    assert.deepEqual(byMeaning[0]!.matched, []);
    assert.ok(byMeaning[0]!.score > 0.6 && byMeaning[0]!.score <= 0.7, String(byMeaning[0]!.score));
    // "kayak" in two passages; the vector leans to the trips one: it wins, both keyword matches rank above the volvo
    const blended = hybridSearch(docs, "kayak", unitVector(0, 1, 0), of, { maxResults: 3, vectorWeight: 0.5 });
    assert.deepEqual(blended.map((h) => h.startLine), [3, 5, 1]);
    assert.equal(blended[0]!.textScore, 1);
    assert.deepEqual(hybridSearch(docs, "kayak", unitVector(0, 1, 0), of, { maxResults: 3, vectorWeight: 0.5, minScore: 0.6 }).map((h) => h.startLine), [3]);
    // weight 0: keywords only; a passage without a vector still competes by keywords
    assert.deepEqual(hybridSearch(docs, "kayak shop", unitVector(0, 1, 0), (c) => (c === shop ? undefined : of(c)), { maxResults: 1, vectorWeight: 0 }).map((h) => h.startLine), [5]);
  });

  it("gives vectors to MEMORY.md first, then the most recently changed files, up to maxChunks", () => {
    const docs = [doc("memory/old.md", "old one\n\nold two\n", 1), doc("MEMORY.md", "core fact\n", 0), doc("memory/new.md", "new one\n\nnew two\n", 5)];
    assert.deepEqual(chunksForVectors(docs, 3).map((c) => c.text), ["core fact", "new one", "new two"]);
  });
});

const MEMORY_MD = [
  "# Long-term memory",                                                    // 1
  "",                                                                      // 2
  "## Garage",                                                             // 3
  "My car is a blue Volvo V70; the brakes were serviced in March.",        // 4
  "",                                                                      // 5
  "## Hobbies",                                                            // 6
  "Loves kayak trips on the lake every summer.",                           // 7
  "",                                                                      // 8
  "## Food",                                                               // 9
  "Black coffee every morning, no sugar.",                                 // 10
  "",
].join("\n");

const DAILY = [
  "# 2026-11-01",                                  // 1
  "",                                              // 2
  "Booked a dentist appointment for Thursday.",    // 3
  "",                                              // 4
  "The neighbour's dog barked all night.",         // 5
  "",
].join("\n");

/** "path:start-end" of the results, in order */
const places = (text: string) => [...text.matchAll(/^\d+\. (\S+:\d+-\d+) \(score/gm)].map((m) => m[1]);

/** nats-server, the agent-runner and the tools actor (processes) on one home with `config`. */
async function startSystem(ws: string, config: Record<string, unknown>, runnerEnv: Record<string, string>) {
  const nats = await TestNats.start();
  writeFileSync(join(nats.home, "config.json"), JSON.stringify(config));
  const [runner, tools] = await Promise.all([startActorProcess("agent-runner", nats, runnerEnv), startActorProcess("tools", nats, { LURKBOT_WORKSPACE: ws })]);
  const nc = await nats.connect("agent-runner");
  return { nats, runner, tools, nc, client: new BusClient(nc) };
}

describe("memory_search with OpenAI embeddings over the bus", () => {
  let ws: string;
  let fake: FakeOpenAIServer;
  let nats: TestNats;
  let runner: ActorProcess;
  let tools: ActorProcess;
  let nc: NatsConnection;
  let client: BusClient;
  const { ok } = toolCaller(() => client);
  const runnerEnv = () => ({ OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-mem" });
  const chunkTexts = [...chunkMarkdown(MEMORY_MD), ...chunkMarkdown(DAILY)].map((c) => c.text);

  before(async () => {
    ws = mkdtempSync(join(tmpdir(), "lurk-memory-vec-"));
    writeFileSync(join(ws, "MEMORY.md"), MEMORY_MD);
    mkdirSync(join(ws, "memory"));
    writeFileSync(join(ws, "memory", "2026-11-01.md"), DAILY);
    fake = await FakeOpenAIServer.start({ apiKey: "sk-mem" });
    ({ nats, runner, tools, nc, client } = await startSystem(ws, { memory: { embeddings: { model: "openai/text-embedding-3-small", batchSize: 4, timeoutMs: 2_000 } } }, runnerEnv()));
  });
  after(async () => {
    await nc?.close();
    await Promise.all([tools?.stop(), runner?.stop()]);
    await fake?.close();
    await nats?.stop();
    rmSync(ws, { recursive: true, force: true });
  });

  it("says in the catalog that memory_search also ranks by meaning", async () => {
    const def = (await client.call("tools", "list", {})).tools.find((t) => t.name === "memory_search");
    assert.match(def?.description ?? "", /by keywords and by meaning/);
    assert.match(JSON.stringify(def?.parameters), /hybrid score from 0 to 1/);
  });

  it("finds the paragraph about a car for \"automobile\", which no keyword search finds", async () => {
    const text = await ok("memory_search", { query: "automobile", maxResults: 3 });
    assert.match(text, /^3 results for "automobile" \(hybrid ranking, keywords and meaning \(openai\/text-embedding-3-small\); 2 memory files, \d+ passages searched\):/);
    assert.equal(places(text)[0], "MEMORY.md:3-4", text);
    assert.match(text, /1\. MEMORY\.md:3-4 \(score 0\.\d\d: keywords 0\.00, meaning 0\.\d\d\) under "Garage"\n {3}matched: \(no keyword; found by meaning\)\n {3}3: ## Garage\n {3}4: My car is a blue Volvo/);
    // every passage and the query were embedded, in batches of at most memory.embeddings.batchSize
    assert.deepEqual(fake.embeddedTexts.slice().sort(), ["automobile", ...chunkTexts].sort());
    assert.ok(fake.embedRequests.every((r) => r.input.length <= 4 && r.model === "text-embedding-3-small" && r.encodingFormat === "base64"));
    assert.equal(fake.embedRequests.length, Math.ceil((1 + chunkTexts.length) / 4));
  });

  it("still ranks an exact keyword match first", async () => {
    const text = await ok("memory_search", { query: "kayak trips" });
    assert.equal(places(text)[0], "MEMORY.md:6-7", text);
    assert.match(text, /\(score 0\.\d\d: keywords 1\.00, meaning 0\.\d\d\) under "Hobbies"\n {3}matched: kayak, trips/);
  });

  it("embeds only the query for unchanged memory, and only the new passage of a changed file", async () => {
    fake.reset();
    const coffee = await ok("memory_search", { query: "espresso", maxResults: 1 });
    assert.deepEqual(places(coffee), ["MEMORY.md:9-10"], coffee);
    assert.deepEqual(fake.embeddedTexts, ["espresso"], "no passage was embedded again");
    appendFileSync(join(ws, "memory", "2026-11-01.md"), "\nBought a new hatchback for the family.\n");
    fake.reset();
    const cars = await ok("memory_search", { query: "automobile", maxResults: 2 });
    assert.deepEqual(places(cars).sort(), ["MEMORY.md:3-4", "memory/2026-11-01.md:7-7"], cars);
    assert.deepEqual(fake.embeddedTexts, ["automobile", "Bought a new hatchback for the family."]);
    assert.equal(fake.embedRequests.length, 1, "the query and the new passage in one request");
  });

  it("keeps the vectors across a restart of the tools actor (LMDB under its data dir)", async () => {
    await tools.stop();
    tools = await startActorProcess("tools", nats, { LURKBOT_WORKSPACE: ws });
    fake.reset();
    const text = await ok("memory_search", { query: "puppy", maxResults: 1 });
    assert.deepEqual(places(text), ["memory/2026-11-01.md:5-5"], text);
    assert.deepEqual(fake.embeddedTexts, ["puppy"], "a fresh worker found every passage's vector in the cache");
  });

  it("answers by keywords, with a note, when no agent-runner serves embeddings", async () => {
    await runner.stop();
    const text = await ok("memory_search", { query: "kayak" });
    assert.match(text, /^1 result for "kayak" \(keywords only; 2 memory files, \d+ passages searched\):\n\[not ranked by meaning this time: nothing serves lurk\.agent-runner\.embed: is the agent-runner actor running\? \(npx lurkbot status\)\]\n/);
    assert.deepEqual(places(text), ["MEMORY.md:6-7"]);
    assert.match(text, /\(score \d+\.\d\d\) under "Hobbies"/, "BM25 scores, as without embeddings");
    const none = await ok("memory_search", { query: "automobile" });
    assert.match(none, /^No memory matches "automobile" \(keywords only; .*\)\.\n\[not ranked by meaning this time: nothing serves/);
  });

  it("answers by keywords, with a note, when embedding takes longer than memory.embeddings.timeoutMs", async () => {
    runner = await startActorProcess("agent-runner", nats, runnerEnv());
    fake.reset();
    fake.enqueueEmbed({ kind: "hang" });
    const started = Date.now();
    const text = await ok("memory_search", { query: "dentist" });
    assert.ok(Date.now() - started < 6_000, `answered within the embedding budget (${Date.now() - started} ms)`);
    assert.match(text, /\(keywords only; .*\):\n\[not ranked by meaning this time: .*(did not answer in time|timed out)/);
    assert.deepEqual(places(text), ["memory/2026-11-01.md:1-3"]);
    // paused for a while: the next search does not wait again
    const again = Date.now();
    assert.match(await ok("memory_search", { query: "dentist" }), /not asked again for \d+ s/);
    assert.ok(Date.now() - again < 1_500);
  });
});

describe("memory_search with Ollama embeddings over the bus", () => {
  let ws: string;
  let fake: FakeOllamaServer;
  let sys: Awaited<ReturnType<typeof startSystem>>;
  const { ok } = toolCaller(() => sys.client);

  before(async () => {
    ws = mkdtempSync(join(tmpdir(), "lurk-memory-vec-ollama-"));
    writeFileSync(join(ws, "MEMORY.md"), MEMORY_MD);
    fake = await FakeOllamaServer.start({ models: ["nomic-embed-text"] });
    sys = await startSystem(ws, { memory: { embeddings: { model: "ollama/nomic-embed-text", vectorWeight: 0.6 } } }, { OLLAMA_HOST: fake.url });
  });
  after(async () => {
    await sys?.nc.close();
    await Promise.all([sys?.tools.stop(), sys?.runner.stop()]);
    await fake?.close();
    await sys?.nats.stop();
    rmSync(ws, { recursive: true, force: true });
  });

  it("ranks by meaning with vectors from /api/embed", async () => {
    const text = await ok("memory_search", { query: "automobile", maxResults: 1 });
    assert.deepEqual(places(text), ["MEMORY.md:3-4"], text);
    assert.match(text, /hybrid ranking, keywords and meaning \(ollama\/nomic-embed-text\)/);
    assert.ok(fake.embedRequests.every((r) => r.model === "nomic-embed-text"));
  });

  it("answers by keywords, with the provider's failure as the note", async () => {
    fake.enqueueEmbed({ kind: "error", status: 500, message: "llama runner process has terminated" });
    const text = await ok("memory_search", { query: "coffee morning" });
    assert.match(text, /\(keywords only; .*\):\n\[not ranked by meaning this time: ollama: llama runner process has terminated\]/);
    assert.equal(places(text)[0], "MEMORY.md:9-10");
  });
});
