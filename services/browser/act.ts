/**
 * `act`: one interaction with an element of the last snapshot (its ref), then what changed: the
 * tab's URL and title, tabs the page opened, downloads it started, requests the proxy refused,
 * and the new snapshot (whole when the page navigated, else only the lines that changed when
 * that is shorter). `afterAction` reports the same for other actions on an element (upload).
 */
import type { Locator, Page } from "playwright-core";
import { LurkError } from "../../shared/contract/index.js";
import { blockedLines, toolError } from "./navigation.js";
import type { BrowserArgs } from "./schema.js";
import type { BrowserSession, Tab } from "./session.js";
import { changes, cut, describeTab, takeSnapshot } from "./snapshot.js";

const SETTLE_MS = 3_000;
/** how long a click or key press is given to open a popup (a target=_blank link, window.open) */
const POPUP_WAIT_MS = 400;

export interface ActLimits {
  maxChars: number;
  actionTimeoutMs: number;
  /** the lines about downloads the tab started since `since` (waited for within the call's time) */
  downloadLines(tab: Tab, since: number): Promise<string[]>;
}

/** What an action on a tab left to report. */
export interface ActionDone {
  since: number;
  urlBefore: string;
  /** the result's first line */
  head: string;
  /** a popup the action may have opened */
  popup?: Promise<Page | undefined> | undefined;
  /** a download the action may have started (waited for as briefly as a popup) */
  download?: Promise<unknown> | undefined;
}

/** The element a ref names in the tab's latest snapshot; NOT_FOUND when it names none. */
export async function resolveRef(tab: Tab, ref: string): Promise<Locator> {
  const locator = tab.page.getByRef(ref);
  const count = await locator.count().catch(() => 0);
  if (count === 0) throw new LurkError("NOT_FOUND", `no element ${ref} in tab ${tab.id}: refs come from the tab's latest snapshot; take a snapshot and use a ref from it`);
  return locator;
}

async function perform(page: Page, tab: Tab, a: BrowserArgs, timeout: number): Promise<string | undefined> {
  const el = a.ref ? await resolveRef(tab, a.ref) : undefined;
  switch (a.kind) {
    case "click": await el!.click({ timeout }); return;
    case "doubleClick": await el!.dblclick({ timeout }); return;
    case "hover": await el!.hover({ timeout }); return;
    case "type":
      await el!.pressSequentially(a.text!, { timeout });
      if (a.submit) await el!.press("Enter", { timeout });
      return;
    case "fill":
      await el!.fill(a.text!, { timeout });
      if (a.submit) await el!.press("Enter", { timeout });
      return;
    case "press":
      if (el) await el.press(a.key!, { timeout });
      else await page.keyboard.press(a.key!);
      return;
    case "selectOption": {
      const chosen = await el!.selectOption(a.values!, { timeout });
      return `selected: ${chosen.join(", ") || "(nothing matched)"}`;
    }
    case "drag": await el!.dragTo(await resolveRef(tab, a.targetRef!), { timeout }); return;
    case "wait":
      if (a.text !== undefined) await page.getByText(a.text).first().waitFor({ state: "visible", timeout: a.timeMs ?? timeout });
      else if (el) await el.waitFor({ state: "visible", timeout: a.timeMs ?? timeout });
      else await page.waitForTimeout(a.timeMs!);
      return;
    default: throw new LurkError("TOOL_INVALID_ARGS", `unknown act kind ${String(a.kind)}`);
  }
}

/** Runs the act call on `tab` (the caller holds the tab's turn). */
export async function act(session: BrowserSession, tab: Tab, a: BrowserArgs, limits: ActLimits): Promise<string> {
  const { page } = tab;
  const since = Date.now();
  const urlBefore = page.url();
  const what = `${a.kind}${a.ref ? ` ${a.ref}` : ""}`;
  let note: string | undefined;
  const mayOpenPopup = a.kind === "click" || a.kind === "doubleClick" || a.kind === "press" || a.submit === true;
  const popup = mayOpenPopup ? page.waitForEvent("popup", { timeout: POPUP_WAIT_MS }).catch(() => undefined) : undefined;
  const download = mayOpenPopup ? page.waitForEvent("download", { timeout: POPUP_WAIT_MS }).catch(() => undefined) : undefined;
  try {
    note = await perform(page, tab, a, limits.actionTimeoutMs);
  } catch (err) {
    throw toolError(err, `act ${what} on tab ${tab.id}`);
  }
  return afterAction(session, tab, { since, urlBefore, head: `act ${what} on tab ${tab.id}: done${note ? ` (${note})` : ""}`, popup, download }, limits);
}

/** The result of an action on `tab`: where the tab is now, new tabs, downloads, refusals, the snapshot or its changes. */
export async function afterAction(session: BrowserSession, tab: Tab, done: ActionDone, limits: ActLimits): Promise<string> {
  const { page } = tab;
  const { since, urlBefore } = done;
  // a navigation the action started: wait for it to load (briefly), as a user would; a popup it opened
  await page.waitForLoadState("load", { timeout: SETTLE_MS }).catch(() => undefined);
  const opened = await done.popup;
  if (opened) session.register(opened);
  await done.download;
  const lines = [done.head];
  const navigated = page.url() !== urlBefore;
  lines.push(`${navigated ? "now" : "still"}: ${await describeTab(tab)}${navigated ? ` (was ${urlBefore})` : ""}`);
  for (const t of session.openedSince(since)) {
    if (t.id === tab.id) continue;
    await t.page.waitForLoadState("domcontentloaded", { timeout: SETTLE_MS }).catch(() => undefined);
    lines.push(`the page opened a new tab: ${await describeTab(t)}${session.currentTabId === t.id ? " (now the current tab)" : ""}`);
  }
  lines.push(...(await limits.downloadLines(tab, since)));
  lines.push(...blockedLines(session, since));
  const before = tab.lastSnapshot;
  let after: string;
  try {
    after = (await takeSnapshot(tab, Number.MAX_SAFE_INTEGER, limits.actionTimeoutMs)).text;
  } catch (err) {
    lines.push(`(no snapshot: ${toolError(err, "snapshot").message})`);
    return lines.join("\n");
  }
  const diff = before === undefined || navigated ? undefined : changes(before, after);
  if (diff === "") lines.push("no change in the page's snapshot");
  else if (diff !== undefined && diff.length < after.length / 2) lines.push("changes since the last snapshot:", cut(diff, limits.maxChars).text);
  else lines.push("snapshot:", cut(after, limits.maxChars).text);
  return lines.join("\n");
}
