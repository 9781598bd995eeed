/**
 * The browser in a worker thread, seen from the actor's main thread. The main thread keeps the
 * NATS side (serveTools: validation, policy, approvals) and this host; the worker (worker.ts)
 * has playwright-core, the session with its Chromium, the actions and the egress proxy. The
 * worker is started by the first call that needs the browser and terminated as soon as Chromium
 * has stopped and no call is left in it (idle stop, `stop`, a Chromium crash, a failed start,
 * the actor stopping): its heap, its module cache (playwright-core) and what its driver
 * allocated go with it. After it exited the activity counter is bumped, so the actor's idle
 * collection (shared/runtime/memory.ts: gc, malloc_trim) runs once more and gives the freed
 * pages back to the system (measured: ~105 MB RSS after an idle stop before, ~75-78 MB now
 * against ~61 MB before the first use; test/browser-memory.test.ts).
 * While no worker runs, `status`, `tabs`, `downloads` and `stop` are answered here (they never start
 * Chromium). A worker that dies on its own (out of memory: its old generation is bounded at
 * WORKER_MAX_OLD_GENERATION_MB) is a crash: its calls fail, leftover Chromium processes are
 * killed, and the next call starts a new worker whose result says the browser had stopped.
 * What outlives a worker: why the browser last ended (the next start's note) and the next tab
 * number (tab ids are never reused within the process).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Worker } from "node:worker_threads";
import { LurkError } from "../../shared/contract/index.js";
import type { BrowserConfig } from "../../shared/runtime/config-browser.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { rebuildError, type CallScope, type CallWork, type FromWorker, type SessionState, type ToWorker, type WorkerInit } from "./protocol.js";
import { NOT_RUNNING_DOWNLOADS, NOT_RUNNING_STOP, NOT_RUNNING_TABS, statusText } from "./status.js";

/** the worker's V8 old generation at most (a page that makes the driver hold more is a crash, not the actor's) */
export const WORKER_MAX_OLD_GENERATION_MB = 512;
const WORKER_URL = new URL("./worker.js", import.meta.url);
/** how long the actor's stop waits for Chromium to close before the worker is terminated anyway */
const STOP_WAIT_MS = 10_000;
const WHERE_WAIT_MS = 2_000;

export interface HostOptions {
  config: BrowserConfig;
  profileDir: string;
  /** where each Chromium's staging folder is made (staging.ts); tests with a fake worker may leave it out */
  stagingRoot?: string;
  allowPrivateHosts: readonly string[];
  log: Logger;
  /** the actor's activity counter (ActorRuntime.activity): bumped when a worker has exited */
  activity: { count: number };
  /** tests: another worker script, another heap bound */
  workerUrl?: URL;
  maxOldGenerationSizeMb?: number;
}

export interface HostCall extends CallScope {
  timeoutMs: number;
  imageCapBytes: number;
  signal: AbortSignal;
  progress(message: string): void;
}

export type HostResult = { notice: string | undefined } & ({ ok: true; text: string; image?: { mime: string; bytes: Uint8Array } } | { ok: false; error: LurkError });

interface Pending {
  resolve(result: HostResult): void;
  reject(err: LurkError): void;
  progress(message: string): void;
}

interface Live {
  worker: Worker;
  /** calls posted and not answered yet */
  calls: Map<number, Pending>;
  /** where/stop questions waiting for their answer */
  questions: Map<number, (m: FromWorker | undefined) => void>;
  /** Chromium runs or is starting there (its last word) */
  active: boolean;
  /** terminated by us */
  retiring: boolean;
  error?: Error;
}

/** Chromium processes the actor process started (children of this process), killed after a worker died without closing them. */
function killChromiumChildren(): number {
  let killed = 0;
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === process.pid && /chrom/i.test(stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")))) {
        process.kill(Number(d), "SIGKILL");
        killed++;
      }
    } catch {
      // gone meanwhile
    }
  }
  return killed;
}

export class BrowserHost {
  private live: Live | undefined;
  private ended: string | undefined;
  private nextTabId = 1;
  private nextId = 1;

  constructor(private readonly opts: HostOptions) {}

  private get maxOldMb(): number {
    return this.opts.maxOldGenerationSizeMb ?? WORKER_MAX_OLD_GENERATION_MB;
  }

  /** a worker thread runs (with or without Chromium) */
  get hasWorker(): boolean {
    return this.live !== undefined;
  }

  /** Runs a validated call in the worker (started when needed); rejects only when the worker dies under it. */
  call(work: CallWork, c: HostCall): Promise<HostResult> {
    if (!this.live && work.tool === "browser") {
      const { config, profileDir } = this.opts;
      if (work.args.action === "status") return Promise.resolve({ ok: true, notice: undefined, text: `${statusText(config, profileDir, undefined)}\n${NOT_RUNNING_TABS}` });
      if (work.args.action === "tabs") return Promise.resolve({ ok: true, notice: undefined, text: NOT_RUNNING_TABS });
      if (work.args.action === "stop") return Promise.resolve({ ok: true, notice: undefined, text: NOT_RUNNING_STOP });
      if (work.args.action === "downloads") return Promise.resolve({ ok: true, notice: undefined, text: NOT_RUNNING_DOWNLOADS });
    }
    const live = this.live ?? this.spawn();
    const id = this.nextId++;
    return new Promise<HostResult>((resolve, reject) => {
      const onAbort = () => this.post(live, { type: "abort", id, reason: c.signal.reason instanceof Error ? c.signal.reason.message : "the tool call was cancelled" });
      const settle = () => c.signal.removeEventListener("abort", onAbort);
      live.calls.set(id, {
        resolve: (r) => (settle(), resolve(r)),
        reject: (e) => (settle(), reject(e)),
        progress: c.progress,
      });
      const scope: CallScope = {
        ...(c.workspace !== undefined ? { workspace: c.workspace } : {}), ...(c.agentId !== undefined ? { agentId: c.agentId } : {}),
        ...(c.approvalRequired ? { approvalRequired: true } : {}), ...(c.approvedOrigin !== undefined ? { approvedOrigin: c.approvedOrigin } : {}),
      };
      this.post(live, { type: "call", id, work, timeoutMs: c.timeoutMs, imageCapBytes: c.imageCapBytes, ...scope });
      if (c.signal.aborted) onAbort();
      else c.signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** `in tab t1 (URL): ` for an approval notice, or "" (no browser, no such tab). */
  async where(tabId: string | undefined): Promise<string> {
    const live = this.live;
    if (!live?.active) return "";
    const answer = await this.ask(live, (id) => ({ type: "where", id, tabId }), WHERE_WAIT_MS);
    return answer?.type === "where" ? answer.text : "";
  }

  /** Where an upload to `ref` would go, for its approval notice: a text, and the origin of the element's frame when found. */
  async uploadTarget(tabId: string | undefined, ref: string): Promise<{ text: string; origin?: string }> {
    const live = this.live;
    if (!live?.active) return { text: "no page: the browser is not running" };
    const answer = await this.ask(live, (id) => ({ type: "uploadTarget", id, tabId, ref }), WHERE_WAIT_MS);
    if (answer?.type !== "uploadTarget") return { text: "a page that did not answer in time" };
    return answer.origin === undefined ? { text: answer.text } : { text: answer.text, origin: answer.origin };
  }

  /** Stops Chromium and ends the worker (the actor is stopping); false when it was not running. */
  async stop(why: string): Promise<boolean> {
    const live = this.live;
    if (!live) return false;
    const answer = await this.ask(live, (id) => ({ type: "stop", id, why }), STOP_WAIT_MS);
    if (answer?.type === "stopped") this.apply(live, answer);
    this.retire(live);
    await live.worker.terminate().catch(() => undefined);
    return answer?.type === "stopped" && answer.stopped;
  }

  private post(live: Live, message: ToWorker): void {
    live.worker.postMessage(message);
  }

  private ask(live: Live, message: (id: number) => ToWorker, waitMs: number): Promise<FromWorker | undefined> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(undefined), waitMs);
      const done = (m: FromWorker | undefined) => {
        clearTimeout(timer);
        live.questions.delete(id);
        resolve(m);
      };
      live.questions.set(id, done);
      this.post(live, message(id));
    });
  }

  private spawn(): Live {
    const init: WorkerInit = { config: this.opts.config, profileDir: this.opts.profileDir, stagingRoot: this.opts.stagingRoot ?? join(dirname(this.opts.profileDir), "staging"), allowPrivateHosts: this.opts.allowPrivateHosts, ended: this.ended, nextTabId: this.nextTabId };
    const worker = new Worker(this.opts.workerUrl ?? WORKER_URL, { workerData: init, name: "browser", resourceLimits: { maxOldGenerationSizeMb: this.maxOldMb } });
    // not unref'd: a call waiting for the worker holds the event loop; the actor's stop ends the worker (stop())
    const live: Live = { worker, calls: new Map(), questions: new Map(), active: false, retiring: false };
    this.live = live;
    worker.on("message", (m: FromWorker) => this.onMessage(live, m));
    worker.on("error", (err) => (live.error = err));
    worker.on("exit", (code) => this.onExit(live, code));
    this.opts.log.debug("browser worker thread started");
    return live;
  }

  private onMessage(live: Live, m: FromWorker): void {
    switch (m.type) {
      case "result": {
        const pending = live.calls.get(m.id);
        live.calls.delete(m.id);
        this.apply(live, m);
        if (pending) {
          if (m.ok) pending.resolve(m.image ? { ok: true, notice: m.notice, text: m.text, image: m.image } : { ok: true, notice: m.notice, text: m.text });
          else pending.resolve({ ok: false, notice: m.notice, error: rebuildError(m.error) });
        }
        this.retireWhenDone(live);
        return;
      }
      case "progress":
        live.calls.get(m.id)?.progress(m.message);
        return;
      case "where":
      case "uploadTarget":
      case "stopped":
        live.questions.get(m.id)?.(m);
        this.retireWhenDone(live);
        return;
      case "ended":
        this.apply(live, m);
        this.retireWhenDone(live);
        return;
      case "log":
        this.opts.log[m.level](m.obj, m.msg);
        return;
    }
  }

  /** The worker's session state, kept for the next worker (only the current worker's counts). */
  private apply(live: Live, s: SessionState): void {
    live.active = s.active;
    if (this.live !== live) return;
    this.ended = s.ended;
    this.nextTabId = Math.max(this.nextTabId, s.nextTabId);
  }

  /** No Chromium and no call left: the worker goes (its memory with it). */
  private retireWhenDone(live: Live): void {
    if (this.live === live && !live.active && live.calls.size === 0 && live.questions.size === 0) {
      this.retire(live);
      void live.worker.terminate().catch(() => undefined);
    }
  }

  private retire(live: Live): void {
    live.retiring = true;
    if (this.live === live) this.live = undefined;
  }

  private onExit(live: Live, code: number): void {
    if (this.live === live) this.live = undefined;
    let failure = "the browser was stopped";
    if (!live.retiring) {
      const oom = (live.error as NodeJS.ErrnoException | undefined)?.code === "ERR_WORKER_OUT_OF_MEMORY";
      failure = oom ? `the browser's thread ran out of memory (over ${this.maxOldMb} MB)` : "the browser's thread exited unexpectedly";
      this.ended = failure;
      const killed = killChromiumChildren();
      this.opts.log.warn({ code, err: live.error, killedChromium: killed }, "the browser worker thread exited unexpectedly: the next call starts a new one");
    } else {
      this.opts.log.debug({ code }, "browser worker thread ended");
    }
    for (const pending of live.calls.values()) pending.reject(new LurkError("TOOL_FAILED", `the browser call failed: ${failure}; the next call starts the browser again`));
    live.calls.clear();
    for (const answer of [...live.questions.values()]) answer(undefined);
    // the idle collection (memory.ts) runs once more after this: the worker's memory goes back
    this.opts.activity.count++;
  }
}
