/**
 * `upload {ref, paths}` (in the worker): files of the calling agent's workspace set on a page's
 * file input, or on the file chooser that clicking the element opens (a styled button over a
 * hidden input). The files are read through workspace-files.ts (inside the workspace, no
 * symlink out, regular files, `browser.uploads.maxBytes` for all of them together) and handed
 * to the page as bytes, so what the page gets is exactly what was checked. When the upload
 * needed a human approval (upload-approval.ts), the element (and a chooser's input) must still
 * be on the origin the approval is bound to, and an approval without an origin runs nothing
 * (FORBIDDEN). Where an element is comes from Playwright's own records, never from the page's
 * JavaScript (which can redefine `ownerDocument`, `location`...): the tab's URL for a ref of the
 * main frame's first document, else the URL of the frame Playwright says owns the element. The
 * result is an act result: where the tab is, what changed (the page may send the files itself).
 */
import type { ElementHandle, FileChooser, Locator } from "playwright-core";
import { LurkError } from "../../shared/contract/index.js";
import { formatBytes, mimeFromName } from "../../shared/runtime/media.js";
import { afterAction, resolveRef, type ActLimits } from "./act.js";
import type { ActionContext } from "./actions.js";
import { toolError } from "./navigation.js";
import type { BrowserArgs } from "./schema.js";
import type { BrowserSession, Tab } from "./session.js";
import { readWorkspaceFile, type WorkspaceFile } from "./workspace-files.js";

/** The origin of a URL (`null` for about:blank and the like). */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "null";
  }
}

/** refs of the main frame's first document (`e12`); refs of other frames and documents have a frame prefix (`f3e7`) */
const MAIN_FRAME_REF = /^e\d+$/;

/**
 * The URL of the frame an element is in, from Playwright's records (never the page's
 * JavaScript): a main-frame ref is on the tab's URL; any other ref, on the URL of the frame that
 * owns its element (`ownerFrame`); undefined when that cannot be told (no such element, no frame,
 * no answer within `timeoutMs`).
 */
export async function elementPageUrl(tab: Tab, ref: string, element: Locator, timeoutMs: number): Promise<string | undefined> {
  if (MAIN_FRAME_REF.test(ref)) return tab.page.url();
  return frameUrlOf(element.elementHandle({ timeout: timeoutMs }), timeoutMs, true);
}

/** The URL of the frame that owns an element handle (Playwright's record); undefined when unknown. `dispose`: the handle is ours, let go after. */
async function frameUrlOf(handle: Promise<ElementHandle | null>, timeoutMs: number, dispose: boolean): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)));
  const found = (async () => {
    const h = await handle;
    if (!h) return undefined;
    try {
      return (await h.ownerFrame())?.url();
    } finally {
      if (dispose) void h.dispose().catch(() => undefined);
    }
  })().catch(() => undefined);
  try {
    return await Promise.race([found, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** What an approval notice says about where an upload to `ref` would go (worker side of host.uploadTarget); no origin: unknown. */
export async function uploadTarget(session: BrowserSession, tabId: string | undefined, ref: string, timeoutMs: number): Promise<{ text: string; origin?: string }> {
  try {
    const tab = session.isRunning ? session.tab(tabId) : undefined;
    if (!tab) return { text: "no open tab" };
    const element = tab.page.getByRef(ref);
    if ((await element.count().catch(() => 0)) === 0) return { text: `tab ${tab.id} (${tab.page.url().slice(0, 300)}) has no element ${ref}` };
    const url = await elementPageUrl(tab, ref, element, timeoutMs);
    if (url === undefined) return { text: `the frame of ${ref} in tab ${tab.id} could not be told` };
    return { text: `element ${ref} of ${url.slice(0, 300)} (tab ${tab.id})`, origin: originOf(url) };
  } catch {
    return { text: "a page that could not be read" };
  }
}

/** The files of an upload, read from the workspace, all of them together within browser.uploads.maxBytes. */
async function readFiles(ctx: ActionContext, paths: readonly string[]): Promise<WorkspaceFile[]> {
  if (!ctx.workspace) throw new LurkError("TOOL_FAILED", "no workspace is known for this call: nothing can be uploaded");
  const cap = ctx.config.uploads.maxBytes;
  const files: WorkspaceFile[] = [];
  let used = 0;
  for (const path of paths) {
    try {
      const file = await readWorkspaceFile(ctx.workspace, path, cap - used);
      used += file.bytes.length;
      files.push(file);
    } catch (err) {
      if (LurkError.is(err) && err.code === "LIMIT_EXCEEDED") {
        throw new LurkError("LIMIT_EXCEEDED", `${err.message}: one upload sends ${formatBytes(cap)} at most, all files together (browser.uploads.maxBytes); nothing was uploaded`);
      }
      throw err;
    }
  }
  return files;
}

/** Runs `upload` on `tab` (the caller holds the tab's turn). */
export async function upload(ctx: ActionContext, tab: Tab, a: BrowserArgs, limits: ActLimits): Promise<string> {
  if (!ctx.config.uploads.enabled) throw new LurkError("FORBIDDEN", "uploads are turned off (browser.uploads.enabled: false)");
  const files = await readFiles(ctx, a.paths!);
  const timeout = limits.actionTimeoutMs;
  // the page the human approved: the element's origin must be the one the approval is bound to
  const located = tab.page.getByRef(a.ref!);
  const present = (await located.count().catch(() => 0)) > 0;
  const pageUrl = present ? await elementPageUrl(tab, a.ref!, located, timeout) : undefined;
  const origin = pageUrl === undefined ? undefined : originOf(pageUrl);
  if (ctx.approvalRequired) {
    if (ctx.approvedOrigin === undefined) throw new LurkError("FORBIDDEN", "the upload needed an approval, and none bound to a page's origin came with it: nothing was uploaded");
    if (present && origin !== ctx.approvedOrigin) {
      throw new LurkError("FORBIDDEN", `the upload was approved for ${ctx.approvedOrigin}, but ${a.ref} is now ${pageUrl === undefined ? "on a page whose origin cannot be told" : `on ${pageUrl.slice(0, 300)}`}: nothing was uploaded`);
    }
    if (!present && originOf(tab.page.url()) !== ctx.approvedOrigin) {
      throw new LurkError("FORBIDDEN", `the upload was approved for ${ctx.approvedOrigin}, but tab ${tab.id} is now on ${tab.page.url().slice(0, 300)}: nothing was uploaded`);
    }
  }
  const element = await resolveRef(tab, a.ref!);
  const payloads = files.map((f) => ({ name: f.name, mimeType: mimeFromName(f.name), buffer: f.bytes }));
  const since = Date.now();
  const urlBefore = tab.page.url();
  const isFileInput = await element.evaluate((e) => {
    const input = e as unknown as { tagName: string; type?: string };
    return input.tagName === "INPUT" && String(input.type).toLowerCase() === "file";
  }, undefined, { timeout }).catch(() => false);
  const many = `${files.length} files were given`;
  try {
    if (isFileInput) {
      await element.setInputFiles(payloads, { timeout });
    } else {
      const opened = tab.page.waitForEvent("filechooser", { timeout });
      opened.catch(() => undefined);
      await element.click({ timeout });
      let chooser: FileChooser;
      try {
        chooser = await opened;
      } catch {
        throw new LurkError("TOOL_INVALID_ARGS", `${a.ref} is not a file input and clicking it opened no file chooser: give the ref of the file input, or of the button that opens the file dialog`);
      }
      if (payloads.length > 1 && !chooser.isMultiple()) throw new LurkError("TOOL_INVALID_ARGS", `the file chooser ${a.ref} opened takes one file; ${many}`);
      if (ctx.approvalRequired) {
        // the chooser's input may be in another frame than the button: it is held to the approved origin too
        const inputUrl = await frameUrlOf(Promise.resolve(chooser.element()), timeout, false);
        if (inputUrl === undefined || originOf(inputUrl) !== ctx.approvedOrigin) {
          throw new LurkError("FORBIDDEN", `the upload was approved for ${ctx.approvedOrigin}, but the file chooser ${a.ref} opened belongs to ${inputUrl === undefined ? "a page whose origin cannot be told" : inputUrl.slice(0, 300)}: nothing was uploaded`);
        }
      }
      await chooser.setFiles(payloads, { timeout });
    }
  } catch (err) {
    if (LurkError.is(err)) throw err;
    if (/Non-multiple file input can only accept single file/.test((err as Error)?.message ?? "")) throw new LurkError("TOOL_INVALID_ARGS", `${a.ref} takes one file; ${many}`);
    throw toolError(err, `upload to ${a.ref} on tab ${tab.id}`);
  }
  const list = files.map((f) => `${f.path} (${formatBytes(f.bytes.length)})`).join(", ");
  const head = `upload to ${a.ref} on tab ${tab.id}: done: ${list} set on ${isFileInput ? "the file input" : "the file chooser it opened"} of ${origin ?? "the page"}; submit the form unless the page sends them itself`;
  return afterAction(ctx.session, tab, { since, urlBefore, head }, limits);
}
