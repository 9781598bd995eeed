/**
 * The browser actor's thread boundary (services/browser/host.ts) with a fake worker: this file,
 * loaded as the worker script, answers like worker.ts would, without Chromium. Proves: status,
 * tabs, downloads and stop are answered without a worker; an upload's target question crosses; a call starts one; results, progress, LurkError
 * codes (with details) and transferred screenshot bytes cross the boundary; a cancellation
 * reaches the worker; the worker is ended once the browser stopped (and the actor's activity
 * counter sees it, for the idle collection); what the next worker needs (why the browser
 * ended, the next tab number) outlives it; a worker that runs out of memory or exits is a
 * crash: its call fails, the next call starts a new worker with the restart note.
 */
import assert from "node:assert/strict";
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { LurkError } from "../shared/contract/index.js";
import { browserConfigSchema } from "../shared/runtime/config-browser.js";
import { createLogger } from "../shared/runtime/logger.js";
import type { BrowserHost as Host } from "../services/browser/host.js";
import { serializeError, type FromWorker, type ToWorker, type WorkerInit } from "../services/browser/protocol.js";

/** The fake worker: the protocol of worker.ts, a pretend browser. */
function fakeWorker(): void {
  const port = parentPort!;
  const init = workerData as WorkerInit;
  let nextTabId = init.nextTabId;
  let ended = init.ended;
  let active = false;
  const aborts = new Map<number, () => void>();
  const post = (m: FromWorker, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);
  const state = () => ({ active, ended, nextTabId });
  const hog: number[][] = [];
  port.on("message", (m: ToWorker) => {
    if (m.type === "where") return post({ type: "where", id: m.id, text: "in tab t1 (about:blank): " });
    if (m.type === "uploadTarget") return post({ type: "uploadTarget", id: m.id, text: `element ${m.ref} of https://example.com/form (tab t1)`, origin: "https://example.com" });
    if (m.type === "stop") {
      active = false;
      return post({ type: "stopped", id: m.id, stopped: true, ...state() });
    }
    if (m.type === "abort") return aborts.get(m.id)?.();
    const a = m.work.args as { action: string; url?: string };
    const notice = !active && ended ? `Note: the browser had stopped (${ended}) and was started again` : undefined;
    if (!active) {
      active = true;
      ended = undefined;
    }
    switch (a.action) {
      case "open":
        return post({ type: "result", id: m.id, notice, ok: true, text: `opened tab t${nextTabId++}`, ...state() });
      case "snapshot":
        return post({ type: "result", id: m.id, notice, ok: false, error: serializeError(new LurkError("NOT_FOUND", "no tab t9", { details: { tabId: "t9" } })), ...state() });
      case "screenshot": {
        const bytes = new Uint8Array(100_000).map((_, i) => i % 251);
        return post({ type: "result", id: m.id, notice, ok: true, text: "shot", image: { mime: "image/png", bytes }, ...state() }, [bytes.buffer]);
      }
      case "focus":
        post({ type: "progress", id: m.id, message: "waiting to be cancelled" });
        aborts.set(m.id, () => post({ type: "result", id: m.id, notice, ok: false, error: serializeError(new LurkError("ABORTED", "cancelled in the worker")), ...state() }));
        return;
      case "stop":
        active = false;
        ended = "stopped by the stop action";
        post({ type: "ended", ...state() });
        return post({ type: "result", id: m.id, notice, ok: true, text: "the browser was stopped", ...state() });
      case "navigate":
        if (a.url === "about:exit") process.exit(3);
        for (;;) hog.push(Array.from({ length: 100_000 }, (_, i) => i + 0.5));
    }
  });
}

if (!isMainThread) fakeWorker();
else {
  const { describe, it } = await import("node:test");
  const { BrowserHost } = await import("../services/browser/host.js");
  const { waitFor } = await import("./harness/actors.js");

  describe("the browser host: the worker thread boundary", () => {
    const activity = { count: 0 };
    const host: Host = new BrowserHost({
      config: browserConfigSchema.parse({ executablePath: "/nonexistent/chromium" }), profileDir: "/tmp/profile", allowPrivateHosts: [],
      log: createLogger("browser-host-test", "silent"), activity, workerUrl: new URL(import.meta.url), maxOldGenerationSizeMb: 64,
    });
    const browser = (action: string, extra: Record<string, unknown> = {}, signal = new AbortController().signal, progress: string[] = []) =>
      host.call({ tool: "browser", args: { action, ...extra } as never }, { timeoutMs: 10_000, imageCapBytes: 1 << 20, signal, progress: (p) => progress.push(p) });

    it("answers status, tabs and stop without a worker; a call starts one; results, errors, bytes, progress and cancellation cross", async () => {
      for (const [action, text] of [["status", /not running.*MISSING/s], ["tabs", /^no tabs: the browser is not running/], ["stop", /^the browser was not running$/]] as const) {
        const r = await browser(action);
        assert.ok(r.ok && text.test(r.text), JSON.stringify(r));
      }
      assert.equal(host.hasWorker, false);
      assert.equal(await host.where(undefined), "");
      assert.deepEqual(await host.uploadTarget(undefined, "e5"), { text: "no page: the browser is not running" });
      const listed = await browser("downloads");
      assert.ok(listed.ok && /^no downloads: the browser is not running/.test(listed.text), JSON.stringify(listed));
      assert.equal(host.hasWorker, false, "downloads is answered without a worker");
      const opened = await browser("open", { url: "http://example.com/" });
      assert.ok(opened.ok && opened.text === "opened tab t1" && opened.notice === undefined, JSON.stringify(opened));
      assert.equal(host.hasWorker, true);
      assert.equal(await host.where(undefined), "in tab t1 (about:blank): ");
      assert.deepEqual(await host.uploadTarget(undefined, "e5"), { text: "element e5 of https://example.com/form (tab t1)", origin: "https://example.com" });
      const failed = await browser("snapshot");
      assert.ok(!failed.ok && failed.error instanceof LurkError, JSON.stringify(failed));
      assert.equal(failed.error.code, "NOT_FOUND");
      assert.deepEqual(failed.error.details, { tabId: "t9" });
      const shot = await browser("screenshot");
      assert.ok(shot.ok && shot.image, JSON.stringify(shot.ok));
      assert.equal(shot.image.bytes.byteLength, 100_000);
      assert.equal(shot.image.bytes[252], 1);
      const cancel = new AbortController();
      const progress: string[] = [];
      const focusing = browser("focus", { tabId: "t1" }, cancel.signal, progress);
      await waitFor(() => progress.length > 0, 5_000, "progress from the worker");
      cancel.abort(new LurkError("ABORTED", "stop"));
      const aborted = await focusing;
      assert.ok(!aborted.ok && aborted.error.code === "ABORTED", JSON.stringify(aborted));
      assert.equal(host.hasWorker, true, "the browser still runs");
    });

    it("ends the worker once the browser stopped; the next worker carries the note and the tab numbers on", async () => {
      const before = activity.count;
      const stopped = await browser("stop");
      assert.ok(stopped.ok && stopped.text === "the browser was stopped");
      assert.equal(host.hasWorker, false);
      await waitFor(() => activity.count > before, 5_000, "the worker's exit counted as activity");
      const again = await browser("open", { url: "http://example.com/" });
      assert.ok(again.ok, JSON.stringify(again));
      assert.equal(again.text, "opened tab t2", "tab ids are not reused");
      assert.match(again.notice ?? "", /had stopped \(stopped by the stop action\)/);
      assert.equal(await host.stop("the test ends"), true);
      assert.equal(host.hasWorker, false);
    });

    it("a worker that runs out of memory or exits is a crash: its call fails, the next call starts a new one and says so", async () => {
      for (const [url, why] of [["about:oom", /ran out of memory \(over 64 MB\)/], ["about:exit", /exited unexpectedly/]] as const) {
        await browser("open", { url: "http://example.com/" });
        await assert.rejects(browser("navigate", { url }), (err: unknown) => LurkError.is(err) && err.code === "TOOL_FAILED" && why.test(err.message));
        assert.equal(host.hasWorker, false);
        const again = await browser("open", { url: "http://example.com/" });
        assert.ok(again.ok, JSON.stringify(again));
        assert.match(again.notice ?? "", new RegExp(`^Note: the browser had stopped \\(the browser.s thread ${why.source}`));
        await host.stop("next");
      }
    });
  });
}
