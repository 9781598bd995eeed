/**
 * `upload {ref, paths}` (in the worker): files of the calling agent's workspace set on a page's
 * file input, or on the file chooser that clicking the element opens (a styled button over a
 * hidden input). The files are read through workspace-files.ts (inside the workspace, no
 * symlink out, regular files, `browser.uploads.maxBytes` for all of them together) and handed
 * to the page as bytes, so what the page gets is exactly what was checked. When a human
 * approved the upload (upload-approval.ts), the element must still be on the origin the notice
 * named, else nothing is uploaded (FORBIDDEN). The result is an act result: where the tab is,
 * what changed (the page may send the files itself).
 */
import type { FileChooser, Locator } from "playwright-core";
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

/** The URL of the document an element is in (its frame's, for an element in an iframe). */
export async function elementPageUrl(element: Locator, timeoutMs: number): Promise<string | undefined> {
  return element.evaluate((e) => (e as unknown as { ownerDocument: { location: { href: string } } }).ownerDocument.location.href, undefined, { timeout: timeoutMs })
    .catch(() => undefined);
}

/** What an approval notice says about where an upload to `ref` would go (worker side of host.uploadTarget). */
export async function uploadTarget(session: BrowserSession, tabId: string | undefined, ref: string, timeoutMs: number): Promise<{ text: string; origin?: string }> {
  try {
    const tab = session.isRunning ? session.tab(tabId) : undefined;
    if (!tab) return { text: "no open tab" };
    const element = tab.page.getByRef(ref);
    if ((await element.count().catch(() => 0)) === 0) return { text: `tab ${tab.id} (${tab.page.url().slice(0, 300)}), which has no element ${ref}` };
    const url = await elementPageUrl(element, timeoutMs);
    if (url === undefined) return { text: `tab ${tab.id}, a page that could not be read` };
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
  // the page the human approved: the element's (or, when it is gone, the tab's) origin must be the one the notice named
  const located = tab.page.getByRef(a.ref!);
  const pageUrl = (await located.count().catch(() => 0)) > 0 ? await elementPageUrl(located, timeout) : undefined;
  const origin = pageUrl === undefined ? undefined : originOf(pageUrl);
  const seenOrigin = origin ?? originOf(tab.page.url());
  if (ctx.approvedOrigin !== undefined && seenOrigin !== ctx.approvedOrigin) {
    throw new LurkError("FORBIDDEN", `the upload was approved for ${ctx.approvedOrigin}, but ${pageUrl === undefined ? `tab ${tab.id}` : a.ref} is now on ${pageUrl ?? tab.page.url()}: nothing was uploaded`);
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
