/**
 * The one Chromium of this browser actor instance and its tabs. Chromium (with its egress proxy)
 * starts on the first call that needs it (`ensure`), and stops after `browser.idleStopMs`
 * without calls, on the `stop` action and when the actor stops. If it exits on its own (a crash,
 * a kill), the next call starts it again; that call's result says so, since the tabs and refs
 * are gone. Tabs have stable ids (t1, t2, ... never reused within the process), including tabs a
 * page opens itself (popups, target=_blank); the last opened or focused one is current. Calls
 * on one tab are serialized (`serial`), other tabs run side by side. It lives in the browser
 * worker thread (worker.ts), which ends after `onEnded`; the next worker's session gets
 * `ended` and `nextTabId` from the last one (host.ts).
 */
import type { BrowserContext, Page } from "playwright-core";
import { LurkError } from "../../shared/contract/index.js";
import type { BrowserConfig } from "../../shared/runtime/config-browser.js";
import { launchChromium, type Launched } from "./chromium.js";
import { EgressProxy, type Refusal } from "./egress-proxy.js";
import type { BrowserLog } from "./protocol.js";
import { KeyedSerial } from "../../shared/runtime/keyed-serial.js";

export interface Tab {
  id: string;
  page: Page;
  openedAt: number;
  crashed: boolean;
  /** the blank page Chromium starts with, not used yet: the first `open` takes it */
  fresh: boolean;
  /** the last snapshot's text (snapshot.ts diffs against it) */
  lastSnapshot?: string;
}

interface Running {
  launched: Launched;
  proxy: EgressProxy;
  startedAt: number;
}

export interface SessionOptions {
  config: BrowserConfig;
  profileDir: string;
  allowPrivateHosts: readonly string[];
  log: BrowserLog;
  /** why an earlier browser ended (a session in a new worker thread carries it on: the next start says so) */
  ended?: string | undefined;
  /** the next tab number (tab ids are never reused within the actor process, across worker threads) */
  nextTabId?: number;
  /** called when Chromium has stopped (by stop(), or on its own), after its proxy closed */
  onEnded?: () => void;
}

export class BrowserSession {
  private running: Running | undefined;
  private starting: Promise<Running> | undefined;
  private readonly tabs = new Map<string, Tab>();
  private readonly ids = new WeakMap<Page, string>();
  private nextId: number;
  private current: string | undefined;
  private inflight = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  /** why the last browser ended (idle, asked, crashed): said once by the next start */
  private ended: string | undefined;
  private notice: string | undefined;
  readonly serial = new KeyedSerial();

  constructor(readonly opts: SessionOptions) {
    this.ended = opts.ended;
    this.nextId = opts.nextTabId ?? 1;
  }

  /** why the last browser ended, until the next start says so */
  get endedReason(): string | undefined {
    return this.ended;
  }

  get nextTabId(): number {
    return this.nextId;
  }

  /** Chromium runs or is starting */
  get isActive(): boolean {
    return this.running !== undefined || this.starting !== undefined;
  }

  get isRunning(): boolean {
    return this.running !== undefined;
  }

  get startedAt(): number | undefined {
    return this.running?.startedAt;
  }

  get currentTabId(): string | undefined {
    return this.current;
  }

  /** Marks a call as running (no idle stop meanwhile); the returned function ends it. */
  begin(): () => void {
    this.inflight++;
    clearTimeout(this.idleTimer);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      if (--this.inflight === 0 && this.running) this.armIdle();
    };
  }

  private armIdle(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.inflight === 0) void this.stop(`idle for ${Math.round(this.opts.config.idleStopMs / 1000)} s`);
    }, this.opts.config.idleStopMs);
    this.idleTimer.unref();
  }

  /** Chromium, started when it is not running; `progress` hears about a start. */
  async ensure(progress: (message: string) => void = () => {}): Promise<BrowserContext> {
    if (this.running) return this.running.launched.context;
    this.starting ??= this.launch(progress).finally(() => (this.starting = undefined));
    return (await this.starting).launched.context;
  }

  private async launch(progress: (message: string) => void): Promise<Running> {
    const { config, profileDir, allowPrivateHosts, log } = this.opts;
    progress("starting Chromium");
    const proxy = await EgressProxy.start(allowPrivateHosts, log);
    let launched: Launched;
    try {
      launched = await launchChromium(config, profileDir, proxy.port);
    } catch (err) {
      await proxy.close();
      throw err;
    }
    const running: Running = { launched, proxy, startedAt: Date.now() };
    this.running = running;
    const { context } = launched;
    context.on("page", (page) => this.register(page));
    context.on("close", () => this.onClosed(running));
    launched.browser?.on("disconnected", () => this.onClosed(running));
    for (const page of context.pages()) this.register(page).fresh = page.url() === "about:blank";
    if (this.ended) this.notice = `Note: the browser had stopped (${this.ended}) and was started again: earlier tabs and refs are gone.`;
    this.ended = undefined;
    log.info({ executable: config.executablePath, persistent: config.persistentProfile, proxyPort: proxy.port }, "Chromium started");
    if (this.inflight === 0) this.armIdle();
    return running;
  }

  /** Chromium went away: by stop(), or on its own (then the next call starts it again). */
  private onClosed(running: Running): void {
    if (this.running !== running) return;
    this.running = undefined;
    this.tabs.clear();
    this.current = undefined;
    clearTimeout(this.idleTimer);
    this.ended ??= "Chromium exited unexpectedly";
    this.opts.log.warn({ reason: this.ended }, "Chromium is gone");
    void running.proxy.close().finally(() => this.opts.onEnded?.());
  }

  /** Stops Chromium; false when it was not running. */
  async stop(why: string): Promise<boolean> {
    const running = this.running ?? (this.starting ? await this.starting.catch(() => undefined) : undefined);
    if (!running || this.running !== running) return false;
    this.ended = why;
    this.running = undefined;
    this.tabs.clear();
    this.current = undefined;
    clearTimeout(this.idleTimer);
    await running.launched.context.close().catch(() => undefined);
    await running.launched.browser?.close().catch(() => undefined);
    await running.proxy.close();
    this.opts.log.info({ why }, "Chromium stopped");
    this.opts.onEnded?.();
    return true;
  }

  /** The note for this call about a restart, once. */
  takeNotice(): string | undefined {
    const n = this.notice;
    this.notice = undefined;
    return n;
  }

  refusalsSince(since: number): Refusal[] {
    return this.running?.proxy.refusalsSince(since) ?? [];
  }

  /** The tab of a page (registered now if the context's event has not done it yet). */
  register(page: Page): Tab {
    const known = this.ids.get(page);
    if (known && this.tabs.has(known)) return this.tabs.get(known)!;
    const tab: Tab = { id: `t${this.nextId++}`, page, openedAt: Date.now(), crashed: false, fresh: false };
    this.ids.set(page, tab.id);
    this.tabs.set(tab.id, tab);
    this.current = tab.id;
    page.on("crash", () => (tab.crashed = true));
    page.on("close", () => {
      this.tabs.delete(tab.id);
      if (this.current === tab.id) this.current = [...this.tabs.keys()].pop();
    });
    return tab;
  }

  list(): Tab[] {
    return [...this.tabs.values()];
  }

  /** Tabs opened since `since` (by a page, or by us). */
  openedSince(since: number): Tab[] {
    return this.list().filter((t) => t.openedAt >= since);
  }

  /** A tab by id, or the current one; NOT_FOUND with what to do otherwise. */
  tab(tabId?: string): Tab {
    const id = tabId ?? this.current;
    const tab = id === undefined ? undefined : this.tabs.get(id);
    if (tab) return tab;
    if (tabId === undefined) throw new LurkError("NOT_FOUND", "no tab is open: use action open with a url");
    const open = this.list().map((t) => t.id).join(", ") || "none";
    throw new LurkError("NOT_FOUND", `no tab ${tabId} (open tabs: ${open}); tabs lists them`);
  }

  focus(tabId: string): Tab {
    const tab = this.tab(tabId);
    this.current = tab.id;
    void tab.page.bringToFront().catch(() => undefined);
    return tab;
  }

  /** A new tab (about:blank; the start page when unused), current from now on; LIMIT_EXCEEDED past browser.maxTabs. */
  async newTab(): Promise<Tab> {
    const context = await this.ensure();
    const blank = this.list().find((t) => t.fresh && t.page.url() === "about:blank");
    if (blank) {
      blank.fresh = false;
      this.current = blank.id;
      return blank;
    }
    if (this.tabs.size >= this.opts.config.maxTabs) {
      throw new LurkError("LIMIT_EXCEEDED", `${this.tabs.size} tabs are open, the most allowed (browser.maxTabs); close one first`);
    }
    return this.register(await context.newPage());
  }

  async closeTab(tabId: string): Promise<void> {
    const tab = this.tab(tabId);
    await tab.page.close();
    this.tabs.delete(tab.id);
  }
}
