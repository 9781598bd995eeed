/**
 * The memory tools: the tokenizer (English words, CJK bigrams, mixed text) and BM25 ranking as
 * pure functions; then memory_search and memory_get over a real bus with the tools actor as a
 * child process on a real nats-server: English and Chinese queries find the right file and line
 * range, an updated file changes the next search, memory_get pages lines and refuses paths
 * outside the memory files.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { BusClient } from "../shared/runtime/client.js";
import { chunkMarkdown, searchDocs, tokenize, type IndexedDoc } from "../services/tools/memory-index.js";
import { ConfinedFs } from "../services/tools/fs-confined.js";
import { indexStats, isMemoryPath, memorySearchTool } from "../services/tools/tools/memory.js";
import type { ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { startToolsActor, textOf, toolCaller } from "./harness/tools-actor.js";

const doc = (path: string, text: string): IndexedDoc => ({ path, chunks: chunkMarkdown(text) });

describe("memory tokenizer", () => {
  it("lower-cases English words and drops stopwords and punctuation", () => {
    assert.deepEqual(tokenize("The User prefers Oat-Milk, in 2026!"), ["user", "prefers", "oat", "milk", "2026"]);
  });
  it("splits Chinese and Japanese runs into overlapping character bigrams", () => {
    assert.deepEqual(tokenize("喜欢喝咖啡"), ["喜欢", "欢喝", "喝咖", "咖啡"]);
    assert.deepEqual(tokenize("東京タワー"), ["東京", "京タ", "タワ", "ワー"]);
    assert.deepEqual(tokenize("猫"), ["猫"]);
  });
  it("handles mixed text: words and bigrams, a CJK run ends at Latin and punctuation", () => {
    assert.deepEqual(tokenize("用户Alice喜欢Python，不喜欢Java"), ["用户", "alice", "喜欢", "python", "不喜", "喜欢", "java"]);
    assert.deepEqual(tokenize("Café ＡＢＣ"), ["café", "abc"], "NFKC folds full-width letters");
  });
});

describe("memory chunks and BM25", () => {
  it("chunks by headings and paragraphs with 1-based line ranges", () => {
    const chunks = chunkMarkdown("intro line\n\n# Food\n\ncoffee every morning\nwith oat milk\n\ntea at night\n## Work\nships on fridays\n");
    assert.deepEqual(chunks.map((c) => [c.startLine, c.endLine, c.heading]), [[1, 1, ""], [3, 6, "Food"], [8, 8, "Food"], [9, 10, "Work"]]);
  });
  it("ranks the more relevant chunk first", () => {
    const hits = searchDocs([doc("a.md", "coffee once here among many other unrelated words about the weather today\n\ncoffee coffee coffee is loved\n")], "coffee", { maxResults: 5 });
    assert.equal(hits.length, 2);
    assert.equal(hits[0]!.startLine, 3, "the chunk with more occurrences (and shorter) wins");
  });
  it("weighs rare terms more than common ones", () => {
    const docs = [
      doc("a.md", "project alpha notes\n\nproject beta notes\n\nproject gamma notes\n\nproject zebra notes\n"),
    ];
    // every chunk has "project"; only one has "zebra": a chunk with only "zebra" beats one with only "project"
    const hits = searchDocs(docs, "project zebra", { maxResults: 10 });
    assert.equal(hits[0]!.startLine, 7);
    const docs2 = [doc("b.md", "project project\n\nzebra\n\nproject\n\nproject things\n")];
    const hits2 = searchDocs(docs2, "project zebra", { maxResults: 10 });
    assert.equal(hits2[0]!.startLine, 3, "the rare term alone outranks the common term twice");
  });
  it("boosts a heading match and an exact phrase", () => {
    const heading = searchDocs([doc("h.md", "# Misc\n\nbirthday party planned\n\n# Birthday\n\nbirthday party planned\n")], "birthday", { maxResults: 5 });
    assert.equal(heading[0]!.startLine, 5, "the chunk under the matching heading wins");
    assert.ok(heading[0]!.score > heading[1]!.score);
    const phrase = searchDocs([doc("p.md", "milk oat cereal\n\noat milk cereal\n")], "oat milk", { maxResults: 5 });
    assert.equal(phrase[0]!.startLine, 3, "the exact phrase wins between otherwise equal chunks");
  });
  it("applies maxResults and minScore, and an empty query finds nothing", () => {
    const docs = [doc("m.md", "apple\n\napple pie\n\napple tart\n\nbanana\n")];
    assert.equal(searchDocs(docs, "apple", { maxResults: 2 }).length, 2);
    assert.equal(searchDocs(docs, "apple", { maxResults: 10, minScore: 1000 }).length, 0);
    assert.equal(searchDocs(docs, "the of", { maxResults: 10 }).length, 0);
  });
  it("accepts only memory paths", () => {
    for (const ok of ["MEMORY.md", "HISTORY.md", "memory/2026-11-01.md", "memory/a/b.md"]) assert.ok(isMemoryPath(ok), ok);
    for (const bad of ["SOUL.md", "memory", "memoryx/a.md", "notes/MEMORY.md", "memory/../SOUL.md"]) assert.ok(!isMemoryPath(bad), bad);
  });
});

describe("memory index cache (in process)", () => {
  it("re-chunks only files whose size, mtime or inode changed", async () => {
    const ws = mkdtempSync(join(tmpdir(), "lurk-memory-cache-"));
    try {
      writeFileSync(join(ws, "MEMORY.md"), "# A\nalpha fact\n");
      mkdirSync(join(ws, "memory"));
      writeFileSync(join(ws, "memory", "d.md"), "beta fact\n");
      const fs = await ConfinedFs.create(ws);
      const ctx = { signal: new AbortController().signal, fs, limits: { outputCapBytes: 8192, imageCapBytes: 1024 }, progress: () => {} };
      const search = async (query: string) => (await memorySearchTool.execute({ query }, ctx)).content.map((b) => (b.type === "text" ? b.text : "")).join("");
      assert.match(await search("alpha"), /MEMORY\.md:1-2/);
      assert.equal(indexStats.lastReindexed, 2);
      await search("alpha");
      assert.equal(indexStats.lastReindexed, 0, "nothing changed: nothing re-read");
      writeFileSync(join(ws, "memory", "d.md"), "beta fact, now with gamma\n");
      assert.match(await search("gamma"), /memory\/d\.md:1-1/);
      assert.equal(indexStats.lastReindexed, 1, "only the changed file");
      writeFileSync(join(ws, "memory", "big.md"), "gamma ".repeat(400_000));
      assert.match(await search("gamma"), /skipped, over the \d+-byte cap: memory\/big\.md/);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });
});

const MEMORY_MD = [
  "# Long-term memory",          // 1
  "",                            // 2
  "## Preferences",              // 3
  "The user drinks black coffee every morning.", // 4
  "Prefers short answers.",      // 5
  "",                            // 6
  "## Projects",                 // 7
  "LurkBot: a self-hosted assistant on NATS.", // 8
  "",
].join("\n");

const DAILY = [
  "# 2026-11-01",                                  // 1
  "",                                              // 2
  "## Morning",                                    // 3
  "Discussed the garden: tomatoes need watering.", // 4
  "",                                              // 5
  "## 晚上",                                        // 6
  "用户说下周要去上海出差，需要预订酒店。",            // 7
  "记得提醒他带充电器。",                             // 8
  "",                                              // 9
  "## Evening",                                    // 10
  "Booked a dentist appointment for Thursday.",    // 11
  "",
].join("\n");

describe("memory tools over the bus", () => {
  let nats: TestNats;
  let tools: ActorProcess;
  let nc: NatsConnection;
  let client: BusClient;
  let ws: string;
  const { call, ok } = toolCaller(() => client);
  /** "path:start-end" of the results, in order */
  const places = (text: string) => [...text.matchAll(/^\d+\. (\S+:\d+-\d+) \(score/gm)].map((m) => m[1]);

  before(async () => {
    ws = mkdtempSync(join(tmpdir(), "lurk-memory-ws-"));
    writeFileSync(join(ws, "MEMORY.md"), MEMORY_MD);
    writeFileSync(join(ws, "SOUL.md"), "You are LurkBot. coffee tomatoes 上海\n");
    mkdirSync(join(ws, "memory"));
    writeFileSync(join(ws, "memory", "2026-11-01.md"), DAILY);
    writeFileSync(join(ws, "memory", "notes.txt"), "tomatoes tomatoes tomatoes\n");
    symlinkSync("../SOUL.md", join(ws, "memory", "soul-link.md"));
    ({ nats, tools, nc, client } = await startToolsActor(ws));
  });
  after(async () => {
    await nc?.close();
    await tools?.stop();
    await nats?.stop();
    rmSync(ws, { recursive: true, force: true });
  });

  it("lists memory_search and memory_get in the catalog under group:memory", async () => {
    const reply = await client.call("tools", "list", {});
    for (const name of ["memory_search", "memory_get"]) {
      const def = reply.tools.find((t) => t.name === name);
      assert.ok(def, name);
      assert.deepEqual(def.groups, ["group:memory"]);
      assert.equal(def.sideEffects, false);
      assert.equal(def.parallelSafe, true);
    }
  });

  it("finds the right file and line range for an English query", async () => {
    const text = await ok("memory_search", { query: "coffee morning" });
    assert.equal(places(text)[0], "MEMORY.md:3-5", text);
    assert.match(text, /black coffee/);
    assert.doesNotMatch(text, /SOUL\.md|soul-link/, "non-memory files and symlinks to them are not searched");
    const garden = await ok("memory_search", { query: "tomatoes watering" });
    assert.equal(places(garden)[0], "memory/2026-11-01.md:3-4", garden);
    assert.doesNotMatch(garden, /notes\.txt/, "only .md files under memory/");
  });

  it("finds the right file and line range for a Chinese query", async () => {
    const text = await ok("memory_search", { query: "上海出差" });
    assert.equal(places(text)[0], "memory/2026-11-01.md:6-8", text);
    assert.match(text, /预订酒店/);
    assert.match(text, /matched: 上海, 海出, 出差/);
    const hotel = await ok("memory_search", { query: "酒店", maxResults: 1 });
    assert.deepEqual(places(hotel), ["memory/2026-11-01.md:6-8"]);
  });

  it("reports no match clearly", async () => {
    const text = await ok("memory_search", { query: "xylophone" });
    assert.match(text, /No memory matches "xylophone" \(2 memory files/);
  });

  it("sees an updated file on the next call", async () => {
    assert.match(await ok("memory_search", { query: "kayak" }), /No memory matches/);
    writeFileSync(join(ws, "MEMORY.md"), `${MEMORY_MD}\n## Hobbies\nLoves kayak trips on the lake.\n`);
    const text = await ok("memory_search", { query: "kayak" });
    assert.deepEqual(places(text), ["MEMORY.md:10-11"], text);
    // a new file under memory/ is picked up too, and a removed one disappears
    mkdirSync(join(ws, "memory", "people"));
    writeFileSync(join(ws, "memory", "people", "bob.md"), "# Bob\nBob also loves kayak racing.\n");
    assert.ok(places(await ok("memory_search", { query: "kayak" })).includes("memory/people/bob.md:1-2"));
    rmSync(join(ws, "memory", "people", "bob.md"));
    assert.deepEqual(places(await ok("memory_search", { query: "kayak" })), ["MEMORY.md:10-11"]);
  });

  it("memory_get returns numbered lines of a memory file by range", async () => {
    const text = await ok("memory_get", { path: "memory/2026-11-01.md", fromLine: 6, lines: 3 });
    assert.equal(text.split("\n").slice(0, 3).join("\n"), "     6\t## 晚上\n     7\t用户说下周要去上海出差，需要预订酒店。\n     8\t记得提醒他带充电器。");
    assert.match(text, /read on with fromLine=9/);
    const whole = await ok("memory_get", { path: "MEMORY.md" });
    assert.match(whole, /^ {5}1\t# Long-term memory\n/);
    assert.doesNotMatch(whole, /read on/);
  });

  it("memory_get refuses paths outside the memory files", async () => {
    for (const path of ["SOUL.md", "../x", "/etc/passwd", "memory/../SOUL.md", "memory/soul-link.md"]) {
      const reply = await call("memory_get", { path });
      assert.equal(reply.isError, true, path);
      assert.equal(reply.errorCode, "FORBIDDEN", `${path}: ${textOf(reply)}`);
      assert.match(textOf(reply), /memory_get reads only the memory files/);
      assert.doesNotMatch(textOf(reply), /You are LurkBot/);
    }
    const past = await call("memory_get", { path: "MEMORY.md", fromLine: 500 });
    assert.equal(past.errorCode, "TOOL_INVALID_ARGS");
    const missing = await call("memory_get", { path: "HISTORY.md" });
    assert.equal(missing.isError, true);
  });
});
