/**
 * The `status`, `tabs` and `downloads` texts that do not need a running browser: the actor's main thread
 * answers them itself while no browser worker runs (host.ts), the worker with its session
 * (actions.ts), in the same words.
 */
import type { BrowserConfig } from "../../shared/runtime/config-browser.js";
import { isExecutable } from "./chromium.js";

export const NOT_RUNNING_TABS = "no tabs: the browser is not running (open starts it)";
export const NOT_RUNNING_STOP = "the browser was not running";
export const NOT_RUNNING_DOWNLOADS = "no downloads: the browser is not running (downloads are listed while it runs; saved files stay in the workspace's downloads/ folder)";

/** The status line; `startedAt` when Chromium runs. */
export function statusText(config: BrowserConfig, profileDir: string, startedAt: number | undefined): string {
  const profile = config.persistentProfile ? `persistent profile ${profileDir}` : "fresh profile each start";
  if (startedAt === undefined) {
    const found = isExecutable(config.executablePath) ? "found" : "MISSING (install it: sudo apt-get install chromium; or set browser.executablePath)";
    return `browser: not running (it starts on the first call that needs it). Chromium ${config.executablePath}: ${found}; ${profile}.`;
  }
  return `browser: running since ${new Date(startedAt).toISOString()} (${config.executablePath}, ${config.headless ? "headless" : "headed"}, ${profile}); it stops after ${Math.round(config.idleStopMs / 1000)} s without calls.`;
}
