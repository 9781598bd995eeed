/**
 * The `browser` tool's actions, each a short text result the model can act on (a screenshot
 * also carries an image block). Calls that touch a tab take the tab's turn (session.serial);
 * status, tabs, downloads and stop never start Chromium, every other action starts it when
 * needed. Downloads (download-actions.ts, downloads.ts) and uploads (uploads.ts) use the
 * calling agent's workspace; a download that ended after the call that started it is reported
 * by the next result of the same agent (another agent never sees it).
 */
import { LurkError } from "../../shared/contract/index.js";
import type { BrowserConfig } from "../../shared/runtime/config-browser.js";
import { act, resolveRef, type ActLimits } from "./act.js";
import { downloadByClick, downloadByUrl, downloadLinesSince, listDownloads } from "./download-actions.js";
import { downloadLine } from "./downloads.js";
import { blockedLines, loadUrl, toolError, type Loaded } from "./navigation.js";
import { captureScreenshot } from "./screenshot.js";
import type { BrowserArgs } from "./schema.js";
import type { BrowserSession, Tab } from "./session.js";
import { cut, describeTab, takeSnapshot } from "./snapshot.js";
import { NOT_RUNNING_DOWNLOADS, NOT_RUNNING_STOP, NOT_RUNNING_TABS, statusText } from "./status.js";
import { upload } from "./uploads.js";

export interface ActionContext {
  session: BrowserSession;
  config: BrowserConfig;
  profileDir: string;
  /** tools.web.allowPrivateHosts */
  allow: readonly string[];
  signal: AbortSignal;
  progress(message: string): void;
  /** the most bytes of one image (screenshot) */
  imageCapBytes: number;
  /** when the call's time is up (ms epoch): downloads are waited for until shortly before */
  deadlineAt: number;
  /** the calling agent's workspace (downloads saved there, uploads read from there) */
  workspace?: string | undefined;
  /** the calling agent: downloads its actions start are its own (listing, notes) */
  agentId: string;
  /** an upload needed a human approval: it runs only bound to approvedOrigin */
  approvalRequired?: boolean;
  /** an approved upload: the origin the approval is bound to */
  approvedOrigin?: string | undefined;
}

export interface ActionResult {
  text: string;
  /** a screenshot's bytes (the actor's main thread encodes them for the reply) */
  image?: { mime: string; bytes: Uint8Array };
}

/**
 * Runs `work` on a tab (the current one by default) when its earlier calls are done. `acting`:
 * the work may start a download (act, navigate, download, upload, evaluate), which is accepted
 * and saved for this call's agent (session.acting); a snapshot or screenshot is not.
 */
export async function onTab<T>(ctx: ActionContext, tabId: string | undefined, work: (tab: Tab) => Promise<T>, acting = true): Promise<T> {
  await ctx.session.ensure(ctx.progress);
  const id = ctx.session.tab(tabId).id;
  return ctx.session.serial.run(id, async () => {
    if (ctx.signal.aborted) throw new LurkError("ABORTED", "the call was cancelled before it ran");
    const tab = ctx.session.tab(id);
    if (!acting) return work(tab);
    const done = ctx.session.acting(tab, ctx.agentId, ctx.workspace);
    try {
      return await work(tab);
    } finally {
      done();
    }
  });
}

function actLimits(ctx: ActionContext): ActLimits {
  return { maxChars: maxChars(ctx), actionTimeoutMs: ctx.config.actionTimeoutMs, downloadLines: (tab, since) => downloadLinesSince(ctx, tab, since) };
}

function maxChars(ctx: ActionContext, asked?: number): number {
  return Math.min(asked ?? ctx.config.maxSnapshotChars, ctx.config.maxSnapshotChars);
}

function status(ctx: ActionContext): string {
  return statusText(ctx.config, ctx.profileDir, ctx.session.isRunning ? ctx.session.startedAt ?? Date.now() : undefined);
}

async function tabsText(ctx: ActionContext): Promise<string> {
  const tabs = ctx.session.list();
  if (!ctx.session.isRunning) return NOT_RUNNING_TABS;
  if (tabs.length === 0) return "no tabs are open (open one with action open)";
  const lines = await Promise.all(tabs.map(async (t) => `${t.id === ctx.session.currentTabId ? "*" : " "} ${await describeTab(t)}`));
  return [`${tabs.length} tab${tabs.length === 1 ? "" : "s"} (* current):`, ...lines].join("\n");
}

/** The result of loading a page: where it ended up, what was blocked, and its snapshot (or the download the URL was). */
async function loadedText(ctx: ActionContext, tab: Tab, loaded: Loaded, since: number, verb: string): Promise<string> {
  const lines = [`${verb} ${await describeTab(tab)}${loaded.status ? ` (HTTP ${loaded.status})` : ""}`];
  if (loaded.redirects.length) lines.push(`redirected from: ${loaded.redirects.join(" -> ")}`);
  if (loaded.download) {
    // the download event may follow the load's "Download is starting" by a moment
    if (!ctx.session.downloads?.startedSince(tab.id, since).length) await tab.page.waitForEvent("download", { timeout: 2_000 }).catch(() => undefined);
    lines.push("the URL is a file: the browser downloaded it and the tab stayed where it was", ...(await downloadLinesSince(ctx, tab, since)));
  }
  lines.push(...blockedLines(ctx.session, since));
  try {
    lines.push("snapshot:", cut((await takeSnapshot(tab, Number.MAX_SAFE_INTEGER, ctx.config.actionTimeoutMs)).text, maxChars(ctx)).text);
  } catch (err) {
    lines.push(`(no snapshot: ${toolError(err, "snapshot").message})`);
  }
  return lines.join("\n");
}

export async function runBrowserAction(a: BrowserArgs, ctx: ActionContext): Promise<ActionResult> {
  const result = await runAction(a, ctx);
  // downloads that ended after the call that started them returned
  const ended = a.action === "downloads" ? [] : ctx.session.downloads?.takeUnreported(ctx.agentId) ?? [];
  if (ended.length) result.text += `\ndownloads that ended since:\n${ended.map(downloadLine).join("\n")}`;
  return result;
}

async function runAction(a: BrowserArgs, ctx: ActionContext): Promise<ActionResult> {
  const { session, config } = ctx;
  const since = Date.now();
  switch (a.action) {
    case "status":
      return { text: `${status(ctx)}\n${await tabsText(ctx)}` };
    case "start":
      await session.ensure(ctx.progress);
      return { text: `${status(ctx)}\n${await tabsText(ctx)}` };
    case "stop":
      return { text: (await session.stop("stopped by the stop action")) ? "the browser was stopped; its tabs are closed" : NOT_RUNNING_STOP };
    case "tabs":
      return { text: await tabsText(ctx) };
    case "open": {
      await session.ensure(ctx.progress);
      const tab = await session.newTab();
      ctx.progress(`loading ${a.url!.slice(0, 200)}`);
      return session.serial.run(tab.id, async () => {
        const done = session.acting(tab, ctx.agentId, ctx.workspace);
        try {
          return { text: await loadedText(ctx, tab, await loadUrl(session, tab, a.url!, ctx.allow), since, "opened tab") };
        } finally {
          done();
        }
      });
    }
    case "focus": {
      await session.ensure(ctx.progress);
      return { text: `current tab: ${await describeTab(session.focus(a.tabId!))}` };
    }
    case "close": {
      await session.ensure(ctx.progress);
      await session.serial.run(session.tab(a.tabId).id, () => session.closeTab(a.tabId!));
      const current = session.currentTabId;
      return { text: `closed tab ${a.tabId}; ${current ? `current tab: ${current}` : "no tab is open"}` };
    }
    case "navigate": {
      await session.ensure(ctx.progress);
      if (a.tabId === undefined && session.currentTabId === undefined) await session.newTab();
      ctx.progress(`loading ${a.url!.slice(0, 200)}`);
      return onTab(ctx, a.tabId, async (tab) => ({ text: await loadedText(ctx, tab, await loadUrl(session, tab, a.url!, ctx.allow), since, "tab") }));
    }
    case "snapshot":
      return onTab(ctx, a.tabId, async (tab) => {
        const snap = await takeSnapshot(tab, maxChars(ctx, a.maxChars), config.actionTimeoutMs).catch((err: unknown) => Promise.reject(toolError(err, "snapshot")));
        return { text: `tab ${await describeTab(tab)}\n${snap.text}` };
      }, false);
    case "act":
      return onTab(ctx, a.tabId, async (tab) => ({ text: await act(session, tab, a, actLimits(ctx)) }));
    case "download":
      return a.url !== undefined ? downloadByUrl(ctx, a.url) : onTab(ctx, a.tabId, (tab) => downloadByClick(ctx, tab, a));
    case "downloads":
      return { text: session.isRunning ? listDownloads(ctx, a.tabId) : NOT_RUNNING_DOWNLOADS };
    case "upload":
      return onTab(ctx, a.tabId, async (tab) => ({ text: await upload(ctx, tab, a, actLimits(ctx)) }));
    case "screenshot":
      return onTab(ctx, a.tabId, async (tab) => {
        const target = a.ref ? await resolveRef(tab, a.ref) : undefined;
        const maxBytes = Math.min(config.screenshotMaxBytes, ctx.imageCapBytes);
        const shot = await captureScreenshot(tab.page, target, { fullPage: a.fullPage === true, maxBytes, timeoutMs: config.actionTimeoutMs })
          .catch((err: unknown) => Promise.reject(toolError(err, "screenshot")));
        const size = shot.width ? `${shot.width}x${shot.height} ` : "";
        const what = a.ref ? `element ${a.ref}` : a.fullPage ? "the whole page" : "the viewport";
        return {
          text: `screenshot of ${what} of tab ${await describeTab(tab)}: ${size}${shot.mime === "image/png" ? "PNG" : "JPEG"}, ${shot.bytes.length} bytes${shot.fitted ? ` (${shot.fitted} to fit ${maxBytes} bytes)` : ""}`,
          image: { mime: shot.mime, bytes: shot.bytes },
        };
      }, false);
  }
}
