/**
 * The downloads of one running Chromium (one browser session). Chromium writes every download
 * (through the egress proxy, like any request) into a staging folder of its own outside the
 * workspace (`downloadsPath`, session.ts, staging.ts; `<guid>.crdownload` while it runs, then
 * `<guid>`). When one starts, who it belongs to is fixed (`DownloadStart`, session.ts): the agent
 * and workspace of the model action on its tab, and whether it started while that action ran or
 * within ACTION_WINDOW_MS after it; one a page started on its own is cancelled ("not started by
 * an action"). An accepted one is watched while it runs (fs.watch on the folder, and a poll)
 * and cancelled once it passes `browser.downloads.maxBytes`, once this session's downloads
 * together would pass `maxTotalBytes`, or when it lasts longer than `timeoutMs`; more than
 * `maxFiles` in one session are refused, and so is one whose agent's `downloads/` folder already
 * holds `maxFolderBytes` or would pass it with this file (a lasting quota: it counts the files
 * there, whoever put them). A finished one within the caps is copied into
 * `<workspace>/downloads/<safe name>` (workspace-files.ts: never over an existing file, never a
 * partial one); the staged file is removed either way. Each download is a record (`d1`,
 * `d2`...) with its outcome, which results of its own agent report: the action that started it
 * (act, navigate, open, download), else that agent's next call (`takeUnreported`); `downloads`
 * lists an agent's own.
 * The MIME type is the one the server sent when Chromium saw the response (a navigation that
 * became a download), else guessed from the saved name.
 */
import { watch, type FSWatcher } from "node:fs";
import { readdir, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { Download, Response } from "playwright-core";
import { LurkError, type ErrorCode } from "../../shared/contract/index.js";
import { formatBytes, mimeFromName } from "../../shared/runtime/media.js";
import { KeyedSerial } from "../../shared/runtime/keyed-serial.js";
import { safeFileName } from "./file-name.js";
import { FOLDER_WALK_MAX_ENTRIES, folderUsage } from "./folder-usage.js";
import type { BrowserLog } from "./protocol.js";
import { saveIntoWorkspace } from "./workspace-files.js";

/** the workspace folder downloads are saved in */
export const DOWNLOADS_FOLDER = "downloads";
/** how often a running download's size is looked at besides fs.watch's notes */
const POLL_MS = 100;
/** records kept for `downloads` (the oldest finished ones go first) */
const KEEP_RECORDS = 30;
const KEEP_TYPES = 50;

/** Who a download belongs to, fixed when it starts (session.ts downloadStart). */
export interface DownloadStart {
  agentId: string | undefined;
  /** where it is saved */
  workspace: string | undefined;
  /** it started during a model action on its tab or within ACTION_WINDOW_MS after it */
  byAction: boolean;
}

export interface DownloadsOptions {
  /** where Chromium writes downloads (created by the session, removed after Chromium) */
  stagingDir: string;
  /** false: every download is refused (browser.downloads.enabled) */
  enabled: boolean;
  maxBytes: number;
  /** bytes of all downloads of this session together (saved and running) */
  maxTotalBytes: number;
  /** downloads saved (or running) in this session at most */
  maxFiles: number;
  /** bytes an agent's `<workspace>/downloads/` folder may hold, across browser sessions */
  maxFolderBytes: number;
  timeoutMs: number;
  log: BrowserLog;
  /** the next record id (`d1`, `d2`...) */
  nextId(): string;
}

export interface DownloadRecord {
  id: string;
  tabId: string;
  /** the agent it belongs to (known once its start was resolved) */
  agentId?: string | undefined;
  url: string;
  /** the name the page suggested */
  suggested: string;
  startedAt: number;
  state: "downloading" | "saved" | "failed";
  /** bytes so far, or saved */
  bytes: number;
  /** workspace-relative, when saved */
  path?: string;
  mime?: string;
  /** why it failed, and its code */
  error?: string;
  code?: ErrorCode;
  /** a result has said how it ended */
  reported: boolean;
  /** resolves once it is saved or failed; never rejects */
  ended: Promise<void>;
}

/** The staged file of a download: playwright-core's artifact path (`<staging>/<guid>`), when it exposes one inside the staging folder. */
function stagedPath(download: Download, stagingDir: string): string | undefined {
  const path = (download as unknown as { _artifact?: { _initializer?: { absolutePath?: unknown } } })._artifact?._initializer?.absolutePath;
  return typeof path === "string" && path.startsWith(`${stagingDir}/`) ? path : undefined;
}

async function sizeOf(path: string): Promise<number> {
  return stat(path).then((s) => s.size, () => 0);
}

export class Downloads {
  private readonly records: DownloadRecord[] = [];
  private readonly byDownload = new WeakMap<Download, DownloadRecord>();
  /** running downloads: a size check each */
  private readonly checks = new Map<DownloadRecord, () => void>();
  /** MIME types of navigation responses by URL (a download's, when Chromium saw it) */
  private readonly types = new Map<string, string>();
  private watcher: FSWatcher | undefined;
  /** this session's saved downloads: how many, how many bytes (maxFiles, maxTotalBytes) */
  private savedFiles = 0;
  private savedBytes = 0;
  /** one quota check and save at a time per workspace: the check sees every earlier save whole */
  private readonly folderSaves = new KeyedSerial();

  constructor(private readonly opts: DownloadsOptions) {
    try {
      // a write to a staged file: its size is looked at at once (the poll is the fallback)
      this.watcher = watch(opts.stagingDir, () => {
        for (const check of this.checks.values()) check();
      });
      this.watcher.on("error", () => this.watcher?.close());
    } catch {
      this.watcher = undefined;
    }
  }

  /** a download is running (the idle stop waits for it) */
  get busy(): boolean {
    return this.checks.size > 0;
  }

  /** Remembers the MIME type of a navigation response that is not a page (it may become a download). */
  noteResponse(response: Response): void {
    const type = response.headers()["content-type"]?.split(";")[0]?.trim().toLowerCase();
    if (!type || type === "text/html" || !response.request().isNavigationRequest()) return;
    this.types.delete(response.url());
    this.types.set(response.url(), type);
    if (this.types.size > KEEP_TYPES) this.types.delete(this.types.keys().next().value!);
  }

  /** Takes a download a page of tab `tabId` started; `start()` says whose it is (asked at once). */
  track(tabId: string, download: Download, start: () => Promise<DownloadStart>): DownloadRecord {
    const record: DownloadRecord = {
      id: this.opts.nextId(), tabId, url: download.url(), suggested: download.suggestedFilename(), startedAt: Date.now(),
      state: "downloading", bytes: 0, reported: false, ended: Promise.resolve(),
    };
    this.byDownload.set(download, record);
    this.records.push(record);
    this.trim();
    record.ended = this.follow(record, download, start()).catch((err: unknown) => {
      this.fail(record, LurkError.from(err).code, `it could not be saved: ${LurkError.from(err).message}`);
    });
    return record;
  }

  /** The record of a download this object tracks. */
  recordOf(download: Download): DownloadRecord | undefined {
    return this.byDownload.get(download);
  }

  /** Downloads of a tab started at or after `since`. */
  startedSince(tabId: string, since: number): DownloadRecord[] {
    return this.records.filter((r) => r.tabId === tabId && r.startedAt >= since);
  }

  /** An agent's recent downloads (of one tab), oldest first. */
  list(agentId: string, tabId?: string): DownloadRecord[] {
    return this.records.filter((r) => r.agentId === agentId && (tabId === undefined || r.tabId === tabId));
  }

  /** An agent's ended downloads no result has reported yet (they are reported now). */
  takeUnreported(agentId: string): DownloadRecord[] {
    return this.records.filter((r) => r.agentId === agentId && r.state !== "downloading" && !r.reported);
  }

  /** Bytes of this session's downloads: saved, and running (all of them, or all but `except`). */
  private usedBytes(except?: DownloadRecord): number {
    let used = this.savedBytes;
    for (const r of this.checks.keys()) if (r !== except) used += r.bytes;
    return used;
  }

  close(): void {
    this.watcher?.close();
  }

  private trim(): void {
    while (this.records.length > KEEP_RECORDS) {
      const old = this.records.findIndex((r) => r.state !== "downloading");
      if (old < 0) return;
      this.records.splice(old, 1);
    }
  }

  private fail(record: DownloadRecord, code: ErrorCode, why: string): void {
    record.state = "failed";
    record.code = code;
    record.error = why;
    this.opts.log.info({ download: record.id, tabId: record.tabId, code }, "browser download failed");
  }

  /** Watches a download to its end, then saves it (or says why not). */
  private async follow(record: DownloadRecord, download: Download, started: Promise<DownloadStart>): Promise<void> {
    const { stagingDir, maxBytes, maxTotalBytes, maxFiles, timeoutMs } = this.opts;
    const staged = stagedPath(download, stagingDir);
    const start = await started;
    record.agentId = start.agentId;
    // the record says "failed" only once the staged bytes are gone (a listing that shows the failure shows its end)
    const refuse = async (code: ErrorCode, why: string) => {
      await download.cancel().catch(() => undefined);
      await download.delete().catch(() => undefined);
      if (staged) await Promise.all([unlink(staged), unlink(`${staged}.crdownload`)].map((p) => p.catch(() => undefined)));
      this.fail(record, code, why);
    };
    if (!this.opts.enabled) return refuse("FORBIDDEN", "downloads are turned off (browser.downloads.enabled: false): nothing was saved");
    if (!start.byAction) return refuse("FORBIDDEN", "it was not started by an action (the page started it on its own, not within a few seconds of an action on its tab): it was cancelled and nothing was saved");
    if (this.savedFiles + this.checks.size >= maxFiles) {
      return refuse("LIMIT_EXCEEDED", `this browser session already saved ${this.savedFiles} downloads${this.checks.size ? ` (${this.checks.size} running)` : ""}, the most allowed (browser.downloads.maxFiles, until the browser stops): it was cancelled and nothing was saved`);
    }
    const overTotal = `this browser session's downloads together would pass ${formatBytes(maxTotalBytes)} (browser.downloads.maxTotalBytes, until the browser stops): it was cancelled and nothing was saved`;
    let stopped: { code: ErrorCode; why: string } | undefined;
    const cancel = (code: ErrorCode, why: string) => {
      if (stopped) return;
      stopped = { code, why };
      void download.cancel().catch(() => undefined);
    };
    let checking = false;
    const check = () => {
      if (checking || stopped) return;
      checking = true;
      void this.stagedSize(staged).then((size) => {
        checking = false;
        record.bytes = Math.max(record.bytes, size);
        if (size > maxBytes) cancel("LIMIT_EXCEEDED", `it is larger than ${formatBytes(maxBytes)} (browser.downloads.maxBytes): it was cancelled and nothing was saved`);
        else if (this.usedBytes() > maxTotalBytes) cancel("LIMIT_EXCEEDED", overTotal);
      });
    };
    this.checks.set(record, check);
    const poll = setInterval(check, POLL_MS);
    const timer = setTimeout(() => cancel("TIMEOUT", `it took longer than ${Math.round(timeoutMs / 1000)} s (browser.downloads.timeoutMs): it was cancelled and nothing was saved`), timeoutMs);
    // a folder full already stops it now (counted as running meanwhile, so maxFiles holds)
    if (start.workspace) {
      const full = await this.folderFull(start.workspace, 0).catch(() => undefined);
      if (full) cancel("LIMIT_EXCEEDED", full);
    }
    let failure: string | null;
    try {
      failure = await download.failure().catch((err: unknown) => (err as Error)?.message ?? String(err));
    } finally {
      clearInterval(poll);
      clearTimeout(timer);
      this.checks.delete(record);
    }
    try {
      if (stopped) return this.fail(record, stopped.code, stopped.why);
      if (failure) return this.fail(record, "TOOL_FAILED", `the download failed (${failure.split("\n")[0]!.slice(0, 200)}): nothing was saved`);
      const file = staged ?? (await download.path());
      const size = await sizeOf(file);
      record.bytes = size;
      if (size > maxBytes) return this.fail(record, "LIMIT_EXCEEDED", `it is ${formatBytes(size)}, larger than ${formatBytes(maxBytes)} (browser.downloads.maxBytes): nothing was saved`);
      if (this.usedBytes(record) + size > maxTotalBytes) return this.fail(record, "LIMIT_EXCEEDED", overTotal);
      const to = start.workspace;
      if (!to) return this.fail(record, "TOOL_FAILED", "no workspace is known for it: nothing was saved");
      const serverType = this.types.get(record.url);
      const name = safeFileName(record.suggested, serverType);
      // counted from now (a download ending meanwhile sees it), given back when the save fails
      this.savedFiles++;
      this.savedBytes += size;
      let saved: Awaited<ReturnType<typeof saveIntoWorkspace>> | undefined;
      let full: string | undefined;
      try {
        ({ saved, full } = await this.folderSaves.run(to, async () => {
          const over = await this.folderFull(to, size);
          return over ? { saved: undefined, full: over } : { saved: await saveIntoWorkspace(to, DOWNLOADS_FOLDER, name, file), full: undefined };
        }));
      } finally {
        if (!saved) {
          this.savedFiles--;
          this.savedBytes -= size;
        }
      }
      if (!saved) return this.fail(record, "LIMIT_EXCEEDED", full!);
      this.savedBytes += saved.bytes - size;
      record.state = "saved";
      record.path = saved.path;
      record.bytes = saved.bytes;
      record.mime = serverType ?? mimeFromName(name);
      this.opts.log.info({ download: record.id, tabId: record.tabId, bytes: saved.bytes }, "browser download saved");
    } finally {
      await download.delete().catch(() => undefined);
      if (staged) await Promise.all([unlink(staged), unlink(`${staged}.crdownload`)].map((p) => p.catch(() => undefined)));
    }
  }

  /**
   * Why `<workspace>/downloads/` has no room for a file of `size` bytes, or undefined. With `size`
   * 0 (a download starting): whether the folder is full already.
   */
  private async folderFull(workspace: string, size: number): Promise<string | undefined> {
    const max = this.opts.maxFolderBytes;
    const usage = await folderUsage(join(workspace, DOWNLOADS_FOLDER));
    const held = usage.bytes;
    if (usage.complete && (size === 0 ? held < max : held + size <= max)) return undefined;
    const holds = usage.complete ? formatBytes(held) : `more than ${FOLDER_WALK_MAX_ENTRIES} files and folders`;
    const would = size === 0 ? "" : ` and this file of ${formatBytes(size)} would pass it`;
    return `the workspace's ${DOWNLOADS_FOLDER}/ folder holds ${holds}, the most allowed being ${formatBytes(max)} (browser.downloads.maxFolderBytes)${would}: it was cancelled and nothing was saved; delete files from ${DOWNLOADS_FOLDER}/ to make room`;
  }

  /** A running download's staged bytes; without its path, the largest file being written in the folder. */
  private async stagedSize(staged: string | undefined): Promise<number> {
    if (staged) return Math.max(await sizeOf(`${staged}.crdownload`), await sizeOf(staged));
    const names = await readdir(this.opts.stagingDir).catch(() => [] as string[]);
    const sizes = await Promise.all(names.filter((n) => n.endsWith(".crdownload")).map((n) => sizeOf(join(this.opts.stagingDir, n))));
    return Math.max(0, ...sizes);
  }
}

/** One line about a download, for a result (an ended one counts as reported from now on). */
export function downloadLine(r: DownloadRecord): string {
  if (r.state !== "downloading") r.reported = true;
  const from = `from ${r.url.slice(0, 300)}`;
  switch (r.state) {
    case "saved":
      return `downloaded ${r.id}: ${r.path} (${formatBytes(r.bytes)}, ${r.mime}) ${from}`;
    case "failed":
      return `download ${r.id} ("${r.suggested.slice(0, 120)}" ${from}) failed: ${r.error}`;
    case "downloading":
      return `download ${r.id} ("${r.suggested.slice(0, 120)}" ${from}) is still running (${formatBytes(r.bytes)} so far): it is saved into ${DOWNLOADS_FOLDER}/ when done; the downloads action shows it`;
  }
}

/** Waits up to `waitMs` for `records` to end. */
export async function settle(records: readonly DownloadRecord[], waitMs: number): Promise<void> {
  if (records.length === 0 || waitMs <= 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(records.map((r) => r.ended)), new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
  clearTimeout(timer);
}
