/**
 * The agent-runner's tool catalog cache (ToolsClient, in process, as the agent-runner user)
 * against a real nats-server, the real tools actor process and the extension fixture process:
 * - with no catalog, a run waits for the gather; a stale catalog is returned at once while it
 *   is gathered again in the background (the order of events shows list() did not wait);
 * - a tools actor that starts announces `lurk.tools.catalog`, and its tools are in the cached
 *   catalog without waiting for the refresh interval (set to an hour here);
 * - a stopped actor's tools leave the catalog at the next background refresh; a refresh that
 *   no tools actor answers at all keeps the catalog;
 * - a background refresh waits 2 s after the latest reply (no run waits for it), so an actor
 *   that answers late keeps its tools.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { subjects, toolsCatalogChangedSchema, type ToolsCatalogChanged } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { createLogger } from "../shared/runtime/logger.js";
import { ToolsClient, type CatalogGatherEvent } from "../services/agent-runner/tools-client.js";
import { startActorProcess, startModuleActor, waitFor, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";

const S = subjects();
const log = createLogger("test-tools-catalog", "silent");
const SESSION = "agent:main:main";
const HOUR = 3_600_000;

describe("the tool catalog cache and announcements", () => {
  let workspace: string;
  let nats: TestNats;
  let nc: NatsConnection;
  let tools: ActorProcess;
  let ext: ActorProcess | undefined;
  let announcementsSub: Subscription;
  const announcements: ToolsCatalogChanged[] = [];
  /** refreshMs 0: every cached catalog is stale at once */
  let eager: ToolsClient;
  const eagerEvents: string[] = [];
  /** refreshMs one hour: only announcements refresh it */
  let patient: ToolsClient;
  const patientEvents: CatalogGatherEvent[] = [];
  const label = (e: CatalogGatherEvent) => `${e.background ? "background" : "foreground"} ${e.phase}`;

  before(async () => {
    workspace = mkdtempSync(join(tmpdir(), "lurk-catalog-ws-"));
    nats = await TestNats.start({ streams: false });
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({}));
    nc = await nats.connect("agent-runner");
    const client = new BusClient(nc);
    // listening before any tools actor starts: every announcement is seen
    announcementsSub = nc.subscribe(S.toolsCatalogChanged, {
      callback: (err, msg) => {
        if (!err) announcements.push(toolsCatalogChangedSchema.parse(msg.json()));
      },
    });
    eager = new ToolsClient(nc, client, S, log, 30_000, { refreshMs: 0, announceDelayMs: 50, onGather: (e) => eagerEvents.push(label(e)) });
    patient = new ToolsClient(nc, client, S, log, 30_000, { refreshMs: HOUR, onGather: (e) => patientEvents.push(e) });
    await nc.flush();
    tools = await startActorProcess("tools", nats, { LURKBOT_WORKSPACE: workspace });
    const builtin = await waitFor(() => announcements.find((a) => a.actor === "tools"), 10_000, "the tools actor's announcement");
    assert.equal(builtin.instance.pid, tools.child.pid);
    // nothing was cached yet, so the announcement refreshes nothing; let its timer pass
    await waitFor(() => !eager.refreshPending && !patient.refreshPending, 10_000, "the announcement to be handled");
    assert.equal(eagerEvents.length + patientEvents.length, 0);
  });
  after(async () => {
    eager?.close();
    patient?.close();
    announcementsSub?.unsubscribe();
    await ext?.stop();
    await nc?.close();
    await tools?.stop();
    await nats?.stop();
    rmSync(workspace, { recursive: true, force: true });
  });

  it("waits for the first gather, then serves a stale catalog at once while gathering again", async () => {
    const first = await eager.list("main", SESSION);
    eagerEvents.push("first list returned");
    assert.ok(first.some((t) => t.name === "read"), first.map((t) => t.name).join(","));
    assert.deepEqual(eagerEvents, ["foreground start", "foreground end", "first list returned"]);

    const second = await eager.list("main", SESSION);
    eagerEvents.push("second list returned");
    assert.deepEqual(second, first, "the cached catalog is served");
    await waitFor(() => eagerEvents.includes("background end"), 10_000, "the background refresh to end");
    assert.deepEqual(eagerEvents.slice(3), ["background start", "second list returned", "background end"],
      "list() returned before the background gather ended");

    // a caller during the running refresh shares it: no second gather starts
    eagerEvents.length = 0;
    const [a, b] = await Promise.all([eager.list("main", SESSION), eager.list("main", SESSION)]);
    eagerEvents.push("both returned");
    assert.deepEqual(a, first);
    assert.deepEqual(b, first);
    await waitFor(() => eagerEvents.includes("background end"), 10_000, "the background refresh to end");
    assert.deepEqual(eagerEvents, ["background start", "both returned", "background end"]);
  });

  it("a tools actor that starts announces itself, and its tools are cached without waiting for the interval", async () => {
    const before = await patient.list("main", SESSION);
    assert.ok(!before.some((t) => t.name === "weather_lookup"));
    assert.deepEqual(patientEvents.map(label), ["foreground start", "foreground end"]);
    assert.deepEqual(await patient.list("main", SESSION), before, "fresh: served from the cache");
    assert.equal(patientEvents.length, 2, "no gather for a fresh catalog");

    ext = await startModuleActor("test/fixtures/ext-tools/main.js", "tools-ext", nats);
    const announced = await waitFor(() => announcements.find((a) => a.actor === "tools-ext"), 10_000, "the extension's announcement");
    assert.equal(announced.type, "lurk.tools.catalog.v1");
    assert.equal(announced.instance.pid, ext.child.pid);

    const refreshed = await waitFor(() => patientEvents.find((e) => e.phase === "end" && e.background), 10_000, "the refresh after the announcement");
    assert.ok(refreshed.tools?.includes("weather_lookup") && refreshed.tools.includes("read"), refreshed.tools?.join(","));
    const now = await patient.list("main", SESSION);
    assert.ok(now.some((t) => t.name === "weather_lookup" && t.actor === "tools-ext"), now.map((t) => t.name).join(","));
    assert.deepEqual(patientEvents.map(label), ["foreground start", "foreground end", "background start", "background end"],
      "one background refresh, and no run waited");
  });

  it("a stopped actor's tools leave the catalog at the next background refresh", async () => {
    await ext!.stop();
    ext = undefined;
    // the extension's announcement refreshed this client too: let that end first
    await waitFor(() => !eager.refreshPending, 10_000, "the announced refresh to end");
    eagerEvents.length = 0;
    // served from the cache (still with the stopped tool) while the refresh runs
    const stale = await eager.list("main", SESSION);
    eagerEvents.push("returned");
    assert.ok(stale.some((t) => t.name === "weather_lookup"), stale.map((t) => t.name).join(","));
    await waitFor(() => eagerEvents.includes("background end"), 10_000, "the background refresh to end");
    assert.deepEqual(eagerEvents, ["background start", "returned", "background end"]);
    const fresh = await eager.list("main", SESSION);
    assert.ok(!fresh.some((t) => t.name === "weather_lookup") && fresh.some((t) => t.name === "read"), fresh.map((t) => t.name).join(","));
  });

  it("a background refresh keeps the tools of an actor that answers late (a busy host); they leave once it stops answering", async () => {
    await waitFor(() => !eager.refreshPending, 10_000, "earlier refreshes to end");
    // an actor kind that answers lurk.tools.list 700 ms after the built-in tools actor (over the 250 ms a run's gather waits)
    const slowNc = await nats.connect("admin");
    const slowTool = { name: "slow_lookup", description: "A tool of an actor that answers late.", parameters: { type: "object", properties: {} }, actor: "slow-ext", sideEffects: false, parallelSafe: true, groups: [], needsApproval: false };
    const slowSub = slowNc.subscribe(S.op("tools", "list"), {
      queue: "slow-ext",
      callback: (_err, msg) => void setTimeout(() => msg.respond(JSON.stringify({ actor: "slow-ext", tools: [slowTool] })), 700),
    });
    await slowNc.flush();
    try {
      eagerEvents.length = 0;
      await eager.list("main", SESSION); // stale at once (refreshMs 0): a background refresh
      await waitFor(() => eagerEvents.includes("background end"), 10_000, "the background refresh to end");
      const refreshed = await eager.list("main", SESSION);
      assert.ok(refreshed.some((t) => t.name === "slow_lookup") && refreshed.some((t) => t.name === "read"), refreshed.map((t) => t.name).join(","));
    } finally {
      slowSub.unsubscribe();
      await slowNc.close();
    }
    await waitFor(() => !eager.refreshPending, 10_000, "the refresh the last list started to end");
    eagerEvents.length = 0;
    await eager.list("main", SESSION);
    await waitFor(() => eagerEvents.includes("background end"), 10_000, "a refresh after the late actor stopped");
    const after = await eager.list("main", SESSION);
    assert.ok(!after.some((t) => t.name === "slow_lookup") && after.some((t) => t.name === "read"), after.map((t) => t.name).join(","));
  });

  it("a background refresh that no tools actor answers keeps the catalog; the next one after a restart replaces it", async () => {
    const cached = await eager.list("main", SESSION);
    assert.ok(cached.some((t) => t.name === "read"));
    await waitFor(() => !eager.refreshPending, 10_000, "earlier refreshes to end");
    await tools.stop();
    eagerEvents.length = 0;
    // stale at once (refreshMs 0): served from the cache while a refresh nobody answers runs
    assert.deepEqual(await eager.list("main", SESSION), cached);
    await waitFor(() => eagerEvents.includes("background end"), 10_000, "the unanswered refresh to end");
    assert.deepEqual(await eager.list("main", SESSION), cached, "no tools actor answered: the catalog is kept, not emptied");
    tools = await startActorProcess("tools", nats, { LURKBOT_WORKSPACE: workspace });
    const again = await waitFor(async () => {
      await waitFor(() => !eager.refreshPending, 10_000, "a refresh to end");
      const list = await eager.list("main", SESSION);
      return eagerEvents.filter((e) => e === "background end").length >= 2 && list.some((t) => t.name === "read") ? list : undefined;
    }, 20_000, "a refresh answered by the restarted actor");
    assert.deepEqual(again.map((t) => t.name), cached.map((t) => t.name));
  });
});
