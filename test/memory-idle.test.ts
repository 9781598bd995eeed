/**
 * Memory at idle (issue #2): the agent-runner's transcript cache is dropped when the actor goes
 * idle except for sessions a run is between `known()` and `merge()` on; provider SDKs are
 * imported on a provider's first call only (a child process shows the runner's modules load
 * none of them), and every provider still answers through the registry, each against its fake
 * server over its real SDK.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { LlmMessage, TranscriptRecord } from "../shared/contract/index.js";
import { parseConfig } from "../shared/runtime/config.js";
import { ACTOR_ENV, ACTOR_NODE_FLAGS, loadIdleMemoryAddon } from "../shared/runtime/memory.js";
import { DIST_ROOT } from "../shared/scripts/paths.js";
import { LazyProvider } from "../services/agent-runner/providers/lazy.js";
import { ProviderRegistry } from "../services/agent-runner/providers/registry.js";
import type { Provider, ProviderStreamEvent } from "../services/agent-runner/providers/types.js";
import { TranscriptCache } from "../services/agent-runner/transcript-cache.js";
import { FakeAnthropicServer } from "./fakes/anthropic-server.js";
import { FakeOllamaServer } from "./fakes/ollama-server.js";
import { FakeOpenAIServer } from "./fakes/openai-server.js";

const record = (seq: number) => ({ seq, ts: seq, kind: "message", message: { role: "user", content: [{ type: "text", text: `m${seq}` }] } }) as unknown as TranscriptRecord;
const records = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => record(from + i));
const user = (text: string): LlmMessage => ({ role: "user", content: [{ type: "text", text }] });

async function collect(provider: Provider, model: string): Promise<ProviderStreamEvent[]> {
  const events: ProviderStreamEvent[] = [];
  for await (const ev of provider.stream({ model, system: "You are LurkBot.", messages: [user("hi")], tools: [], signal: new AbortController().signal })) events.push(ev);
  return events;
}
const doneText = (events: ProviderStreamEvent[]) => {
  const last = events.at(-1);
  assert.equal(last?.type, "done", JSON.stringify(last));
  return last?.type === "done" ? last.message.content.map((b) => ("text" in b ? b.text : "")).join("") : "";
};

describe("transcript cache at idle", () => {
  it("trimIdle drops every session no run is using", () => {
    const cache = new TranscriptCache(50);
    cache.merge("a", "s-a", records(0, 4), false);
    cache.merge("b", "s-b", records(0, 2), false);
    assert.equal(cache.trimIdle(), 2);
    assert.equal(cache.size, 0);
    assert.equal(cache.known("a"), undefined, "the next run asks for the full history");
  });

  it("keeps a session between known() and merge(), so an incremental begin still sees the whole history", () => {
    const cache = new TranscriptCache(50);
    cache.merge("a", "s-a", records(0, 4), false);
    cache.merge("b", "s-b", records(0, 2), false);
    assert.deepEqual(cache.known("a"), { sessionId: "s-a", lastSeq: 4 });
    assert.equal(cache.trimIdle(), 1, "only b is dropped");
    const history = cache.merge("a", "s-a", records(5, 6), true);
    assert.deepEqual(history.map((r) => r.seq), [0, 1, 2, 3, 4, 5, 6]);
    assert.equal(cache.trimIdle(), 1, "after merge() the session is no longer protected");
    assert.equal(cache.size, 0);
  });

  it("a known() never followed by merge() stops protecting its session after 10 minutes", () => {
    const cache = new TranscriptCache(50);
    cache.merge("a", "s-a", records(0, 1), false);
    cache.known("a");
    assert.equal(cache.trimIdle(Date.now() + 60_000), 0);
    assert.equal(cache.trimIdle(Date.now() + 11 * 60_000), 1);
  });

  it("forget() drops the entry and its protection", () => {
    const cache = new TranscriptCache(50);
    cache.merge("a", "s-a", records(0, 1), false);
    cache.known("a");
    cache.forget("a");
    assert.equal(cache.size, 0);
    assert.equal(cache.known("a"), undefined);
  });
});

describe("lazy providers", () => {
  it("loads the wrapped provider on the first call only and passes its events on unchanged", async () => {
    let created = 0;
    const inner: Provider = {
      name: "fake",
      async *stream() {
        yield { type: "text_delta", text: "hi" };
      },
    };
    const lazy = new LazyProvider("fake", async () => {
      created++;
      return inner;
    });
    assert.equal(lazy.loaded, false);
    assert.equal(created, 0);
    assert.deepEqual(await collect(lazy, "m"), [{ type: "text_delta", text: "hi" }]);
    assert.deepEqual(await collect(lazy, "m"), [{ type: "text_delta", text: "hi" }]);
    assert.equal(created, 1);
    assert.equal(lazy.loaded, true);
  });

  it("a provider that cannot be loaded answers PROVIDER_ERROR, and the next call tries again", async () => {
    let attempts = 0;
    const lazy = new LazyProvider("broken", async () => {
      attempts++;
      throw new Error("Cannot find package 'broken-sdk'");
    });
    for (let i = 0; i < 2; i++) {
      const events = await collect(lazy, "m");
      assert.equal(events.length, 1);
      const ev = events[0]!;
      assert.equal(ev.type, "error");
      if (ev.type === "error") {
        assert.equal(ev.error.code, "PROVIDER_ERROR");
        assert.match(ev.error.message, /broken provider could not be loaded: Cannot find package 'broken-sdk'/);
      }
    }
    assert.equal(attempts, 2);
  });

  it("the agent-runner's modules import no provider SDK until a provider is called", () => {
    const dir = mkdtempSync(join(tmpdir(), "lurk-lazy-"));
    try {
      const logFile = join(dir, "resolved.txt");
      const hook = `export async function resolve(s, c, next) { if (!s.startsWith(".") && !s.startsWith("node:") && !s.startsWith("file:")) (await import("node:fs")).appendFileSync(process.env.LURK_HOOK_LOG, s + "\\n"); return next(s, c); }`;
      const actorUrl = new URL("../services/agent-runner/actor.js", import.meta.url).href;
      const registryUrl = new URL("../services/agent-runner/providers/registry.js", import.meta.url).href;
      const configUrl = new URL("../shared/runtime/config.js", import.meta.url).href;
      const script = `
        import { register } from "node:module";
        register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});
        await import(${JSON.stringify(actorUrl)});
        const { ProviderRegistry } = await import(${JSON.stringify(registryUrl)});
        const { parseConfig } = await import(${JSON.stringify(configUrl)});
        const registry = new ProviderRegistry(parseConfig({ providers: { anthropic: { apiKey: "k" }, openai: { apiKey: "k" } } }, {}));
        for (const ref of ["openai/gpt-4o-mini", "anthropic/claude-x", "ollama/llama3"]) registry.resolve(ref);
        console.log("resolved");`;
      const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", env: { ...process.env, LURK_HOOK_LOG: logFile }, timeout: 60_000 });
      assert.equal(child.status, 0, child.stderr);
      assert.match(child.stdout, /resolved/);
      const specifiers = readFileSync(logFile, "utf8").split("\n").filter(Boolean);
      assert.ok(specifiers.includes("pino") && specifiers.includes("lmdb"), `the hook saw the runner's imports: ${specifiers.join(", ")}`);
      const sdks = specifiers.filter((s) => /^(openai|@anthropic-ai\/sdk|ollama)(\/|$)/.test(s));
      assert.deepEqual(sdks, [], "no provider SDK was imported");
      const parsers = specifiers.filter((s) => /^(unpdf|mammoth|piscina)(\/|$)/.test(s));
      assert.deepEqual(parsers, [], "the document parsers (and their worker pool) load only when a document comes");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("every provider answers through the registry (SDK loaded on first call)", () => {
  let openai: FakeOpenAIServer;
  let anthropic: FakeAnthropicServer;
  let ollama: FakeOllamaServer;
  let registry: ProviderRegistry;
  before(async () => {
    [openai, anthropic, ollama] = await Promise.all([FakeOpenAIServer.start(), FakeAnthropicServer.start(), FakeOllamaServer.start({ models: ["llama-test"] })]);
    registry = new ProviderRegistry(parseConfig({}, {
      OPENAI_API_KEY: "sk-test-0123456789abcdef", OPENAI_BASE_URL: openai.baseUrl,
      ANTHROPIC_API_KEY: "sk-ant-test", ANTHROPIC_BASE_URL: anthropic.baseUrl,
      OLLAMA_HOST: ollama.url,
    }));
  });
  after(async () => {
    await Promise.all([openai?.close(), anthropic?.close(), ollama?.close()]);
  });

  it("openai", async () => {
    const { provider, model } = registry.resolve("openai/test-model");
    assert.ok(provider instanceof LazyProvider && !provider.loaded, "not loaded before its first call");
    assert.equal(provider.name, "openai");
    assert.equal(doneText(await collect(provider, model)), "echo: hi");
  });

  it("anthropic", async () => {
    anthropic.enqueue({ kind: "text", text: "Hello from Claude." });
    const { provider, model } = registry.resolve("anthropic/claude-test");
    assert.equal(provider.name, "anthropic");
    assert.equal(doneText(await collect(provider, model)), "Hello from Claude.");
  });

  it("ollama", async () => {
    ollama.enqueue({ kind: "text", text: "Hello from llama." });
    const { provider, model } = registry.resolve("ollama/llama-test");
    assert.equal(provider.name, "ollama");
    assert.equal(doneText(await collect(provider, model)), "Hello from llama.");
  });
});

describe("idle collections", () => {
  it("give back a young generation grown under load (the second collection, after 5 s of quiet)", () => {
    // a real V8 with the actors' flags: allocation grows the young generation, idleness shrinks it
    const script = `
      import v8 from "node:v8";
      import { startIdleGc } from ${JSON.stringify(join(DIST_ROOT, "shared/runtime/memory.js"))};
      const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size;
      const activity = { count: 0 };
      const log = { warn() {}, debug() {} };
      const idle = startIdleGc(activity, log, () => {}, { checkMs: 300, secondGcMs: 5500 });
      let keep = [];
      for (let r = 0; r < 200; r++) {
        const batch = [];
        for (let i = 0; i < 20000; i++) batch.push({ i, s: "x" + i });
        keep.push(batch.slice(0, 2000));
        if (keep.length > 20) keep.shift();
        activity.count++;
      }
      keep = [];
      const grown = young();
      // an idle actor still allocates a little (timers, pings)
      const trickle = setInterval(() => { const junk = []; for (let i = 0; i < 50; i++) junk.push({ i }); }, 50);
      setTimeout(() => { idle.stop(); clearInterval(trickle); console.log(JSON.stringify({ grown, after: young() })); }, 7000);
    `;
    const out = spawnSync(process.execPath, [...ACTOR_NODE_FLAGS, "--input-type=module", "-e", script], { encoding: "utf8", timeout: 30_000 });
    assert.equal(out.status, 0, out.stderr);
    const { grown, after } = JSON.parse(out.stdout) as { grown: number; after: number };
    assert.ok(grown >= 4 * 1048576, `the load grew the young generation (${grown} bytes)`);
    assert.ok(after <= 2 * 1048576, `idle gave it back (${after} bytes)`);
  });
});

/** Runs an ES module script in a child Node with the actors' flags and environment; returns its last stdout line as JSON. */
function runChild<T>(script: string): T {
  const out = spawnSync(process.execPath, [...ACTOR_NODE_FLAGS, "--input-type=module", "-e", script], { encoding: "utf8", timeout: 60_000, env: { ...process.env, ...ACTOR_ENV } });
  assert.equal(out.status, 0, out.stderr);
  return JSON.parse(out.stdout.trim().split("\n").at(-1)!) as T;
}

describe("the idle-memory addon", () => {
  it("is built by the install (npm ci runs node-gyp for it), V8's low-memory notification included", () => {
    const addon = loadIdleMemoryAddon();
    assert.ok(addon, "@lurkbot/idle-memory did not load: run `npm rebuild @lurkbot/idle-memory` and read its error");
    assert.equal(typeof addon.lowMemoryNotification, "function", "v8_low_memory.node did not load on this Node");
  });

  it("trim() gives back the free pages malloc keeps inside its heap", () => {
    // 60 MB of small malloc'd buffers, freed except one in 500, which keeps glibc from trimming the heap's top
    const { before, after, released } = runChild<{ before: number; after: number; released: boolean }>(`
      import { loadIdleMemoryAddon } from ${JSON.stringify(join(DIST_ROOT, "shared/runtime/memory.js"))};
      const addon = loadIdleMemoryAddon();
      const rss = () => process.memoryUsage().rss / 1048576;
      let buffers = [];
      for (let i = 0; i < 40000; i++) buffers.push(Buffer.allocUnsafeSlow(1500));
      const pinned = buffers.filter((_, i) => i % 500 === 499);
      buffers = null;
      gc(); await new Promise((r) => setTimeout(r, 200)); gc();
      const before = rss();
      const released = addon.trim();
      console.log(JSON.stringify({ before, after: rss(), released, pinned: pinned.length }));`);
    assert.equal(released, true);
    assert.ok(before - after >= 30, `RSS ${before.toFixed(1)} -> ${after.toFixed(1)} MB`);
  });

  it("lowMemoryNotification() compacts half-empty old-space pages a full collection leaves as they are", () => {
    // 400 000 objects promoted to the old space, then two in three dropped: every page stays a third full
    const r = runChild<{ afterGc: { size: number; used: number }; afterNotification: { size: number; used: number }; kept: number }>(`
      import v8 from "node:v8";
      import { loadIdleMemoryAddon } from ${JSON.stringify(join(DIST_ROOT, "shared/runtime/memory.js"))};
      const addon = loadIdleMemoryAddon();
      const old = () => { const s = v8.getHeapSpaceStatistics().find((x) => x.space_name === "old_space"); return { size: s.space_size / 1048576, used: s.space_used_size / 1048576 }; };
      let all = [];
      for (let i = 0; i < 400000; i++) all.push({ i, s: "v" + i, a: [i, i + 1] });
      gc(); gc();
      const kept = all.filter((_, i) => i % 3 === 0);
      all = null;
      gc(); gc();
      const afterGc = old();
      addon.lowMemoryNotification();
      console.log(JSON.stringify({ afterGc, afterNotification: old(), kept: kept.length }));`);
    const unused = (s: { size: number; used: number }) => s.size - s.used;
    assert.ok(unused(r.afterGc) >= 10, `the full collections left ${unused(r.afterGc).toFixed(1)} MB of old space unused`);
    assert.ok(unused(r.afterNotification) <= 3, `after the notification ${unused(r.afterNotification).toFixed(1)} MB (${r.afterNotification.size.toFixed(1)} committed)`);
  });

  it("an idle collection drops the LMDB file's mapped pages; the data reads back unchanged", () => {
    const dir = mkdtempSync(join(tmpdir(), "lurk-idle-lmdb-"));
    try {
      const r = runChild<{ mappedAfterReads: number; mappedAtIdle: number; mappedAfterRereads: number; same: boolean; released: number }>(`
        import { open } from "lmdb";
        import { readFileSync } from "node:fs";
        import { startIdleGc, loadIdleMemoryAddon } from ${JSON.stringify(join(DIST_ROOT, "shared/runtime/memory.js"))};
        const path = ${JSON.stringify(dir)};
        /** resident MB of this process's mappings of the store's data file */
        const mapped = () => {
          let kb = 0, inFile = false;
          for (const line of readFileSync("/proc/self/smaps", "utf8").split("\\n")) {
            const head = /^[0-9a-f]+-[0-9a-f]+ \\S+ \\S+ \\S+ \\S+\\s*(.*)$/.exec(line);
            if (head) { inFile = head[1] === path + "/data.mdb"; continue; }
            const rss = /^Rss:\\s+(\\d+) kB/.exec(line);
            if (rss && inFile) kb += Number(rss[1]);
          }
          return kb / 1024;
        };
        const db = open({ path, encoding: "binary" });
        const value = (i) => Buffer.alloc(8192, i % 251);
        await db.transaction(() => { for (let i = 0; i < 2000; i++) db.put(i, value(i)); });
        const readAll = () => { let same = true; for (let i = 0; i < 2000; i++) same &&= value(i).equals(db.get(i)); return same; };
        readAll();
        const mappedAfterReads = mapped();
        const activity = { count: 1 };
        const idle = startIdleGc(activity, { warn() {}, debug() {} }, () => {}, { checkMs: 200, secondGcMs: 60000 });
        await new Promise((r) => setTimeout(r, 700));
        idle.stop();
        const mappedAtIdle = mapped();
        const same = readAll();
        const mappedAfterRereads = mapped();
        const released = loadIdleMemoryAddon().releaseSharedFilePages("/no-such-file.mdb");
        await db.close();
        console.log(JSON.stringify({ mappedAfterReads, mappedAtIdle, mappedAfterRereads, same, released }));`);
      assert.ok(r.mappedAfterReads >= 12, `reading 16 MB mapped ${r.mappedAfterReads} MB`);
      assert.ok(r.mappedAtIdle <= 1, `at idle ${r.mappedAtIdle} MB stayed mapped`);
      assert.equal(r.same, true, "every value reads back unchanged");
      assert.ok(r.mappedAfterRereads >= 12, "reading maps the pages again");
      assert.equal(r.released, 0, "no mapping of another file is touched");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
