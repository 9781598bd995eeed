/**
 * The `browser` tool's download actions, and the download lines of other results:
 *  - `download {ref}`: clicks the element and waits (`timeMs`, else browser.navigationTimeoutMs)
 *    for the download it starts, then for its end: the saved path, size and MIME type, or the
 *    failure as an error result (LIMIT_EXCEEDED over the cap, TIMEOUT over the time cap...);
 *  - `download {url}`: the same for a file's URL, loaded in a tab of its own that is closed
 *    afterwards (a URL that is a page is TOOL_INVALID_ARGS: open it instead);
 *  - `downloads {tabId?}`: the calling agent's recent downloads in this browser (all tabs, or one);
 *  - `downloadLinesSince`: what an act, open or navigate result says about the downloads it
 *    started.
 * A download is waited for only within the call's own time (its deadline less a margin for
 * the rest of the result); one still running then is reported as such, and its end comes with
 * a later result (downloads.ts).
 */
import type { Download } from "playwright-core";
import { LurkError } from "../../shared/contract/index.js";
import { resolveRef } from "./act.js";
import type { ActionContext, ActionResult } from "./actions.js";
import { downloadLine, settle, type DownloadRecord, type Downloads } from "./downloads.js";
import { loadUrl, toolError } from "./navigation.js";
import type { BrowserArgs } from "./schema.js";
import type { Tab } from "./session.js";
import { describeTab } from "./snapshot.js";

/** what is left of a call's time for the rest of its result (the snapshot) after waiting for downloads */
const RESULT_MARGIN_MS = 3_000;
/** how long a download event may follow the "Download is starting" of a load */
const EVENT_GRACE_MS = 5_000;
/** how long a click's download may still start after the proxy refused a request (which may have been it) */
const REFUSAL_GRACE_MS = 2_000;
const REFUSAL_POLL_MS = 100;

/** How long this call may still wait for downloads. */
function downloadWaitMs(ctx: ActionContext): number {
  return Math.max(0, Math.min(ctx.config.downloads.timeoutMs + 1_000, ctx.deadlineAt - Date.now() - RESULT_MARGIN_MS));
}

function downloadsOf(ctx: ActionContext): Downloads {
  if (!ctx.config.downloads.enabled) throw new LurkError("FORBIDDEN", "downloads are turned off (browser.downloads.enabled: false)");
  const downloads = ctx.session.downloads;
  if (!downloads) throw new LurkError("TOOL_FAILED", "the browser stopped meanwhile; tabs shows what is open");
  return downloads;
}

/** Lines about the downloads `tab` started since `since`, once they ended (or the call's time is up). */
export async function downloadLinesSince(ctx: ActionContext, tab: Tab, since: number): Promise<string[]> {
  const started = ctx.session.downloads?.startedSince(tab.id, since) ?? [];
  await settle(started, downloadWaitMs(ctx));
  return started.map(downloadLine);
}

/** A `download` action's result: the saved file, the failure as an error, or "still running". */
async function outcome(ctx: ActionContext, record: DownloadRecord): Promise<ActionResult> {
  await settle([record], downloadWaitMs(ctx));
  if (record.state === "failed") {
    record.reported = true;
    throw new LurkError(record.code ?? "TOOL_FAILED", `download ${record.id} ("${record.suggested.slice(0, 120)}" from ${record.url.slice(0, 300)}) failed: ${record.error}`);
  }
  return { text: downloadLine(record) };
}

/** `download {ref}` on `tab` (the caller holds the tab's turn). */
export async function downloadByClick(ctx: ActionContext, tab: Tab, a: BrowserArgs): Promise<ActionResult> {
  const downloads = downloadsOf(ctx);
  const element = await resolveRef(tab, a.ref!);
  const waitMs = a.timeMs ?? ctx.config.navigationTimeoutMs;
  const since = Date.now();
  const started = tab.page.waitForEvent("download", { timeout: waitMs });
  started.catch(() => undefined);
  try {
    await element.click({ timeout: ctx.config.actionTimeoutMs });
  } catch (err) {
    throw toolError(err, `download: clicking ${a.ref} on tab ${tab.id}`);
  }
  const download = await untilStartedOrRefused(ctx, started, since);
  if (!download) {
    const refused = ctx.session.refusalsSince(since).filter((r) => r.kind === "forbidden").pop();
    if (refused) throw new LurkError("FORBIDDEN", `clicking ${a.ref} started no download: it led to ${refused.origin}, which was refused: ${refused.reason}`);
    throw new LurkError("TOOL_FAILED", `clicking ${a.ref} started no download within ${waitMs} ms; the tab is now ${await describeTab(tab)}: take a snapshot to see what the click did`);
  }
  const record = downloads.recordOf(download);
  if (!record) throw new LurkError("TOOL_FAILED", `clicking ${a.ref} started a download that could not be followed`);
  return outcome(ctx, record);
}

/**
 * The download a click started, or undefined: none within its wait, or none within
 * REFUSAL_GRACE_MS of the proxy refusing a request (the file's, most likely: Chromium starts
 * no download for a refused one).
 */
async function untilStartedOrRefused(ctx: ActionContext, started: Promise<Download>, since: number): Promise<Download | undefined> {
  let poll: NodeJS.Timeout | undefined;
  const refused = new Promise<undefined>((resolve) => {
    poll = setInterval(() => {
      const at = ctx.session.refusalsSince(since).find((r) => r.kind === "forbidden")?.at;
      if (at !== undefined && Date.now() - at >= REFUSAL_GRACE_MS) resolve(undefined);
    }, REFUSAL_POLL_MS);
  });
  try {
    return await Promise.race([started.catch(() => undefined), refused]);
  } finally {
    clearInterval(poll);
  }
}

/** `download {url}`: the file loaded in a tab of its own, closed afterwards (the current tab stays current). */
export async function downloadByUrl(ctx: ActionContext, url: string): Promise<ActionResult> {
  const { session } = ctx;
  await session.ensure(ctx.progress);
  const downloads = downloadsOf(ctx);
  const previous = session.currentTabId;
  const since = Date.now();
  const tab = await session.newTab();
  ctx.progress(`downloading ${url.slice(0, 200)}`);
  const acted = session.acting(tab, ctx.agentId, ctx.workspace);
  try {
    return await session.serial.run(tab.id, async () => {
      const event = tab.page.waitForEvent("download", { timeout: EVENT_GRACE_MS }).catch(() => undefined);
      const loaded = await loadUrl(session, tab, url, ctx.allow);
      if (!loaded.download) {
        throw new LurkError("TOOL_INVALID_ARGS", `${url} is a page (${await describeTab(tab)}), not a file: open it, and use download with the ref of its download link`);
      }
      const seen = downloads.startedSince(tab.id, since)[0];
      const download = seen ? undefined : await event;
      const record = seen ?? (download ? downloads.recordOf(download) : undefined);
      if (!record) throw new LurkError("TOOL_FAILED", `${url} started a download that could not be followed`);
      return outcome(ctx, record);
    });
  } finally {
    acted();
    // closing the tab does not stop its download (Chromium's downloads belong to the browser)
    await session.closeTab(tab.id).catch(() => undefined);
    session.restoreCurrent(previous);
  }
}

/** `downloads {tabId?}`: the calling agent's recent downloads (ended ones count as reported). */
export function listDownloads(ctx: ActionContext, tabId: string | undefined): string {
  const records = ctx.session.downloads?.list(ctx.agentId, tabId) ?? [];
  const whose = tabId ? ` of tab ${tabId}` : "";
  if (records.length === 0) return `no downloads${whose} since the browser started${ctx.config.downloads.enabled ? "" : " (downloads are turned off: browser.downloads.enabled is false)"}`;
  return [`${records.length} download${records.length === 1 ? "" : "s"}${whose} (oldest first):`, ...records.map((r) => `${r.tabId}: ${downloadLine(r)}`)].join("\n");
}
