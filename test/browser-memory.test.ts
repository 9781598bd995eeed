/**
 * The browser actor gives its memory back after an idle stop: playwright-core, Chromium's driver
 * and everything they allocated live in a worker thread (services/browser/host.ts) that ends with
 * the browser, and the actor's idle collections (shared/runtime/memory.ts: gc, malloc_trim) then
 * return the freed pages. Measured on the actor process (/proc/<pid>/status VmRSS): after its
 * start-up idle collection, and again after using the browser (pages, snapshots, acts,
 * screenshots), its idle stop and the idle collection after it: ~75-78 MB against ~61 MB before
 * use. Before the worker thread the actor stayed ~44 MB above its pre-use RSS (~105 MB). Skipped when
 * /usr/bin/chromium is missing. Takes ~1 minute: the idle checks run every 10 s.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { toolCallReply, type ToolCallReply } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { chromiumChildren, startBrowserSite, type BrowserSite } from "./harness/browser-site.js";
import { TestNats } from "./harness/nats.js";
import { textOf } from "./harness/tools-actor.js";

const CHROMIUM = "/usr/bin/chromium";
/** the most RSS an idle actor may have (LurkBot's target is 80 MB; a little room for the host) */
const MAX_IDLE_RSS_MB = 85;
/**
 * the most the RSS after an idle stop may be above the RSS before the first use: measured +15 to
 * +18 MB, of which ~10 MB file-backed (pages of the node binary the worker thread ran, shared
 * and reclaimable) and ~5 MB anonymous; before the worker thread it was +44 MB
 */
const MAX_GROWTH_MB = 25;
/** the second (compacting) idle collection comes 6 s after the first (memory.ts) */
const SECOND_COLLECTION_MS = 7_000;

/** a VmRSS-like line of /proc/<pid>/status, in MB */
function statusMb(pid: number, key = "VmRSS"): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith(`${key}:`));
  return Number(/(\d+)/.exec(line ?? "")?.[1] ?? Number.NaN) / 1024;
}
const rssMb = (pid: number): number => statusMb(pid);
/** anonymous / file-backed parts, for the diagnostic line */
const parts = (pid: number): string => `anon ${statusMb(pid, "RssAnon").toFixed(1)}, file ${statusMb(pid, "RssFile").toFixed(1)}`;


/**
 * The 80 MB idle target is the machines' Node's (20): on Node 22 and 24 the actor reads 92-106 MB
 * after an idle stop (70-74 before use), a known limit in the README, so there it is not asserted.
 */
const NODE_MAJOR = Number(process.versions.node.split(".")[0]);
const skipReason = !existsSync(CHROMIUM)
  ? `${CHROMIUM} is missing (apt-get install chromium)`
  : NODE_MAJOR !== 20 ? `the idle-memory target is measured on Node 20; Node ${NODE_MAJOR} keeps 92-106 MB after an idle stop (README, known limits)` : false;

describe("the browser actor: memory after an idle stop", { skip: skipReason }, () => {
  let site: BrowserSite;
  let nats: TestNats;
  let browser: ActorProcess;
  let runner: NatsConnection;
  let bus: BusClient;
  let n = 0;

  const call = (args: Record<string, unknown>): Promise<ToolCallReply> => bus.callSubject("lurk.tools.call.browser", "lurk.tools.call.v1", {
    toolCallId: `m-${++n}`, runId: "run-memory", sessionKey: "agent:main:main", agentId: "main", tool: "browser", args,
  }, toolCallReply, { timeoutMs: 90_000 });
  const ok = async (args: Record<string, unknown>): Promise<string> => {
    const reply = await call(args);
    assert.equal(reply.isError, false, textOf(reply));
    return textOf(reply);
  };
  /** the actor's idle collections so far (its debug log line) */
  const collections = (): number => browser.output().split("\n").filter((l) => l.includes("idle: collected garbage")).length;
  /** waits for an idle collection after `seen` (up to `timeoutMs`) and the compacting one after it */
  const afterCollection = async (seen: number, timeoutMs: number): Promise<boolean> => {
    const happened = await waitFor(() => collections() > seen, timeoutMs, "an idle collection").then(() => true, () => false);
    await sleep(SECOND_COLLECTION_MS);
    return happened;
  };

  before(async () => {
    site = await startBrowserSite();
    nats = await TestNats.start();
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({
      agents: [{ id: "main", default: true, toolProfile: "full" }],
      tools: { web: { allowPrivateHosts: ["127.0.0.1"] } },
      browser: { idleStopMs: 1_500 },
    }));
    // debug: the actor logs its idle collections
    browser = await startActorProcess("browser", nats, { LURKBOT_LOG_LEVEL: "debug" });
    runner = await nats.connect("agent-runner");
    bus = new BusClient(runner);
  });
  after(async () => {
    await runner?.close().catch(() => undefined);
    await browser?.stop();
    await nats?.stop();
    await site?.close();
  });

  it("after the browser stopped for idleness, the actor's RSS is back near its pre-use level", { timeout: 150_000 }, async () => {
    const pid = browser.child.pid!;
    // the collection after start-up (10 s) and the compacting one 6 s later
    assert.ok(await afterCollection(0, 25_000), "the actor collected after start-up");
    const beforeUse = rssMb(pid);
    const beforeParts = parts(pid);

    await ok({ action: "open", url: `${site.main}/` });
    for (let i = 0; i < 3; i++) {
      const snap = await ok({ action: "snapshot" });
      const count = /button "Count" \[ref=((?:f\d+)?e\d+)\]/.exec(snap)?.[1];
      assert.ok(count, snap);
      await ok({ action: "act", kind: "click", ref: count });
      await ok({ action: "screenshot" });
      await ok({ action: "open", url: `${site.main}/tall` });
      await ok({ action: "screenshot", fullPage: true });
      await ok({ action: "navigate", url: `${site.main}/noise` });
      await ok({ action: "screenshot" });
      await ok({ action: "navigate", url: `${site.main}/` });
    }
    const inUse = rssMb(pid);
    await waitFor(() => chromiumChildren(pid).length === 0, 20_000, "Chromium gone after the idle stop");
    const stoppedAt = collections();
    const collected = await afterCollection(stoppedAt, 30_000);
    const afterStop = rssMb(pid);
    process.stderr.write(`browser actor RSS: ${beforeUse.toFixed(1)} MB before use (${beforeParts}), ${inUse.toFixed(1)} MB in use, ${afterStop.toFixed(1)} MB after the idle stop (${parts(pid)}; collected after it: ${collected})\n`);
    assert.ok(afterStop < MAX_IDLE_RSS_MB, `RSS after the idle stop ${afterStop.toFixed(1)} MB, at most ${MAX_IDLE_RSS_MB} MB (before use: ${beforeUse.toFixed(1)} MB)`);
    assert.ok(afterStop - beforeUse < MAX_GROWTH_MB, `RSS after the idle stop ${afterStop.toFixed(1)} MB, before use ${beforeUse.toFixed(1)} MB: grew by more than ${MAX_GROWTH_MB} MB`);
    // and the browser still works afterwards, saying it had stopped
    assert.match(await ok({ action: "open", url: `${site.main}/next` }), /^Note: the browser had stopped \(idle for 2 s\) and was started again/);
  });
});
