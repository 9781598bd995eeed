/**
 * The `browser` key of the configuration: the browser actor (services/browser/), which serves the
 * `browser` and `browser_evaluate` tools with a real Chromium driven by playwright-core.
 *   "browser": { "executablePath": "/usr/bin/chromium", "idleStopMs": 600000, "viewport": { "width": 1280, "height": 800 } }
 * Chromium is started on the first call and stopped after `idleStopMs` without calls. With
 * `persistentProfile` (the default) cookies and logins are kept in `profileDir`
 * (`<dataDir>/browser/profile`); without it every start is a fresh, empty profile.
 * `enabled: false` keeps the actor running but serving no tool. A missing Chromium is not a
 * configuration error: a call answers with how to install it (`apt-get install chromium`).
 * Which hosts the browser may reach follows `tools.web.allowPrivateHosts` (config.ts), as web_fetch does.
 * Files: `downloads` (what a model action downloads is saved under `<workspace>/downloads/`,
 * capped per file in size and time, and per browser session in bytes and files) and `uploads` (workspace files set on a page's file input, capped, and by
 * default each upload approved by a human).
 */
import { isAbsolute, join, resolve } from "node:path";
import { z } from "zod";

export const BROWSER_DEFAULTS = {
  enabled: true,
  executablePath: "/usr/bin/chromium",
  headless: true,
  persistentProfile: true,
  idleStopMs: 10 * 60_000,
  viewport: { width: 1280, height: 800 },
  navigationTimeoutMs: 30_000,
  actionTimeoutMs: 10_000,
  maxSnapshotChars: 20_000,
  screenshotMaxBytes: 300 * 1024,
  maxTabs: 8,
  downloads: { enabled: true, maxBytes: 50 * 1024 * 1024, maxTotalBytes: 500 * 1024 * 1024, maxFiles: 100, maxFolderBytes: 2 * 1024 * 1024 * 1024, timeoutMs: 5 * 60_000 },
  uploads: { enabled: true, maxBytes: 25 * 1024 * 1024, requireApproval: true },
};

/** playwright-core refuses file buffers of 50 MB and more; uploads are passed as buffers (uploads.ts) */
const UPLOAD_MAX_BYTES_LIMIT = 48 * 1024 * 1024;

export const browserConfigSchema = z.object({
  /** serve the browser tools (false: the actor runs but offers none) */
  enabled: z.boolean().default(BROWSER_DEFAULTS.enabled),
  /** the Chromium (or Chrome) binary; Debian's package `chromium` installs /usr/bin/chromium */
  executablePath: z.string().min(1).max(4096).default(BROWSER_DEFAULTS.executablePath),
  /** false shows a window (needs a display) */
  headless: z.boolean().default(BROWSER_DEFAULTS.headless),
  /** keep cookies, logins and storage between starts in profileDir; false: a fresh profile each start */
  persistentProfile: z.boolean().default(BROWSER_DEFAULTS.persistentProfile),
  /** the persistent profile's directory (relative: to LURKBOT_HOME); absent: <dataDir>/browser/profile */
  profileDir: z.string().min(1).max(4096).optional(),
  /** Chromium's own sandbox; absent: on, except when the actor runs as root (Chromium refuses it then) */
  sandbox: z.boolean().optional(),
  /** Chromium is stopped after this long without a call (the next call starts it again) */
  idleStopMs: z.number().int().min(1_000).max(7 * 24 * 3600_000).default(BROWSER_DEFAULTS.idleStopMs),
  viewport: z.object({
    width: z.number().int().min(200).max(7680).default(BROWSER_DEFAULTS.viewport.width),
    height: z.number().int().min(200).max(4320).default(BROWSER_DEFAULTS.viewport.height),
  }).prefault({}),
  /** the most a navigation (open, navigate, a click that loads a page) waits for the page's load */
  navigationTimeoutMs: z.number().int().min(1_000).max(300_000).default(BROWSER_DEFAULTS.navigationTimeoutMs),
  /** the most an action (click, fill, ...) waits for its element */
  actionTimeoutMs: z.number().int().min(500).max(120_000).default(BROWSER_DEFAULTS.actionTimeoutMs),
  /** characters of a page snapshot returned at most (a call's maxChars may ask for fewer) */
  maxSnapshotChars: z.number().int().min(500).max(500_000).default(BROWSER_DEFAULTS.maxSnapshotChars),
  /** bytes of one screenshot at most (also capped by bus.maxPayloadBytes); larger ones are re-encoded and scaled down */
  screenshotMaxBytes: z.number().int().min(16 * 1024).max(8 * 1024 * 1024).default(BROWSER_DEFAULTS.screenshotMaxBytes),
  /** open tabs at most (`open` refuses more) */
  maxTabs: z.number().int().min(1).max(100).default(BROWSER_DEFAULTS.maxTabs),
  /** files pages download: saved under <workspace>/downloads/ (false: every download is cancelled) */
  downloads: z.object({
    enabled: z.boolean().default(BROWSER_DEFAULTS.downloads.enabled),
    /** bytes of one download at most; a larger one is cancelled and nothing is saved */
    maxBytes: z.number().int().min(1024).max(4 * 1024 * 1024 * 1024).default(BROWSER_DEFAULTS.downloads.maxBytes),
    /** bytes of all downloads of one browser session together (until Chromium stops); one that would pass it is cancelled */
    maxTotalBytes: z.number().int().min(1024).max(64 * 1024 * 1024 * 1024).default(BROWSER_DEFAULTS.downloads.maxTotalBytes),
    /** downloads one browser session saves at most (until Chromium stops); more are cancelled */
    maxFiles: z.number().int().min(1).max(100_000).default(BROWSER_DEFAULTS.downloads.maxFiles),
    /** bytes an agent's <workspace>/downloads/ folder may hold (every file there, across browser sessions); a download that would pass it is cancelled */
    maxFolderBytes: z.number().int().min(1024).max(1024 * 1024 * 1024 * 1024).default(BROWSER_DEFAULTS.downloads.maxFolderBytes),
    /** the most one download may take; a slower one is cancelled and nothing is saved */
    timeoutMs: z.number().int().min(1_000).max(3600_000).default(BROWSER_DEFAULTS.downloads.timeoutMs),
  }).prefault({}),
  /** workspace files the `upload` action sets on a page's file input */
  uploads: z.object({
    enabled: z.boolean().default(BROWSER_DEFAULTS.uploads.enabled),
    /** bytes of one upload's files together at most */
    maxBytes: z.number().int().min(1024).max(UPLOAD_MAX_BYTES_LIMIT).default(BROWSER_DEFAULTS.uploads.maxBytes),
    /** every upload waits for a human approval (the notice names the files and the page's origin); false: none */
    requireApproval: z.boolean().default(BROWSER_DEFAULTS.uploads.requireApproval),
  }).prefault({}),
});
export type BrowserConfig = z.infer<typeof browserConfigSchema>;

/** The profile directory in effect (absolute). */
export function browserProfileDir(browser: BrowserConfig, home: string, dataDir: string): string {
  if (!browser.profileDir) return join(dataDir, "browser", "profile");
  return isAbsolute(browser.profileDir) ? browser.profileDir : resolve(home, browser.profileDir);
}
