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
 * Each Chromium downloads into a staging folder of its own (`<dataDir>/browser/staging/<pid>-<random>`,
 * mode 700, removed when Chromium is gone; staging.ts). A download is accepted only while a
 * model action runs on its tab or within ACTION_WINDOW_MS after it (`acting`; a popup counts
 * as its opener's), and it goes to the workspace of the agent whose action that was, fixed when
 * it starts (downloads.ts); any other is cancelled. The idle stop waits for a download still
 * running.
 */
import { rm } from "node:fs/promises";
import type { BrowserContext, Page } from "playwright-core";
import { LurkError } from "../../shared/contract/index.js";
import type { BrowserConfig } from "../../shared/runtime/config-browser.js";
import { launchChromium, type Launched } from "./chromium.js";
import { Downloads, type DownloadStart } from "./downloads.js";
import { createStagingDir } from "./staging.js";
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
  /** the agent and workspace of the last model action on this tab: its downloads are theirs */
  agentId?: string;
  workspace?: string;
  /** model actions running on this tab now */
  acting: number;
  /** when the last one ended (ms epoch; 0: none yet) */
  actedAt: number;
  /** the tab whose page opened this one (a popup), once `inherited` resolved */
  opener?: Tab | undefined;
  inherited: Promise<void>;
}

/** how long after a model action on a tab a download it starts is still accepted as the action's */
export const ACTION_WINDOW_MS = 5_000;

interface Running {
  launched: Launched;
  proxy: EgressProxy;
  startedAt: number;
  /** Chromium's own download folder (outside every workspace), removed after Chromium */
  stagingDir: string;
  downloads: Downloads;
}

export interface SessionOptions {
  config: BrowserConfig;
  profileDir: string;
  /** where the staging folder of each Chromium is made (staging.ts) */
  stagingRoot: string;
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
  private nextDownload = 1;
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

  /** the running Chromium's downloads (undefined while it does not run) */
  get downloads(): Downloads | undefined {
    return this.running?.downloads;
  }

  /**
   * A model action of `agentId` (with its workspace) on `tab` begins: downloads the tab starts
   * from now until ACTION_WINDOW_MS after the returned function is called are accepted and go
   * to that workspace.
   */
  acting(tab: Tab, agentId: string, workspace: string | undefined): () => void {
    tab.agentId = agentId;
    tab.workspace = workspace;
    tab.acting++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      tab.acting--;
      tab.actedAt = Date.now();
    };
  }

  /** Who a download `tab` starts now belongs to, and whether a model action started it (see acting). */
  private async downloadStart(tab: Tab): Promise<DownloadStart> {
    const at = Date.now();
    await tab.inherited;
    // a tab no model action touched yet acts for the tab that opened it (a popup, target=_blank)
    const from = tab.acting === 0 && tab.actedAt === 0 && tab.opener ? tab.opener : tab;
    const byAction = from.acting > 0 || (from.actedAt > 0 && at - from.actedAt <= ACTION_WINDOW_MS);
    return { agentId: from.agentId, workspace: from.workspace, byAction };
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
      // a download still running holds the browser (it has a time cap of its own)
      if (this.inflight === 0 && this.running?.downloads.busy) this.armIdle();
      else if (this.inflight === 0) void this.stop(`idle for ${Math.round(this.opts.config.idleStopMs / 1000)} s`);
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
    // mode 700, outside every workspace: a download is copied into one only once it is complete and within the cap
    const stagingDir = await createStagingDir(this.opts.stagingRoot);
    let proxy: EgressProxy | undefined;
    let launched: Launched;
    try {
      proxy = await EgressProxy.start(allowPrivateHosts, log);
      launched = await launchChromium(config, profileDir, proxy.port, stagingDir);
    } catch (err) {
      await proxy?.close();
      await rm(stagingDir, { recursive: true, force: true });
      throw err;
    }
    const downloads = new Downloads({ stagingDir, ...config.downloads, log, nextId: () => `d${this.nextDownload++}` });
    const running: Running = { launched, proxy, startedAt: Date.now(), stagingDir, downloads };
    this.running = running;
    const { context } = launched;
    context.on("response", (response) => downloads.noteResponse(response));
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
    void this.release(running).finally(() => this.opts.onEnded?.());
  }

  /** What a Chromium leaves behind once it is gone: its proxy, its download folder. */
  private async release(running: Running): Promise<void> {
    running.downloads.close();
    await running.proxy.close();
    await rm(running.stagingDir, { recursive: true, force: true }).catch(() => undefined);
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
    await this.release(running);
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
    const tab: Tab = { id: `t${this.nextId++}`, page, openedAt: Date.now(), crashed: false, fresh: false, acting: 0, actedAt: 0, inherited: Promise.resolve() };
    this.ids.set(page, tab.id);
    this.tabs.set(tab.id, tab);
    this.current = tab.id;
    // a popup acts for its opener: the agent, workspace and action time of the opener's tab
    tab.inherited = page.opener().then((opener) => {
      tab.opener = opener ? this.tabs.get(this.ids.get(opener) ?? "") : undefined;
    }, () => undefined);
    page.on("crash", () => (tab.crashed = true));
    page.on("download", (download) => void this.running?.downloads.track(tab.id, download, () => this.downloadStart(tab)));
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

  /** Makes `tabId` current again when it is still open (after a tab of our own was closed). */
  restoreCurrent(tabId: string | undefined): void {
    if (tabId !== undefined && this.tabs.has(tabId)) this.current = tabId;
  }

  async closeTab(tabId: string): Promise<void> {
    const tab = this.tab(tabId);
    await tab.page.close();
    this.tabs.delete(tab.id);
  }
}
