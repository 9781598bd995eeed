/**
 * Starting Chromium with playwright-core (imported on the first start, not before: it costs the
 * actor ~90 MB): the executable is checked first (a missing one is an
 * UNAVAILABLE error naming `apt-get install chromium` and `browser.executablePath`, never a
 * crash), then either a persistent context on the profile directory (logins kept) or a fresh
 * browser with an empty context. Every start uses the egress proxy (egress-proxy.ts), has
 * downloads written into the session's staging folder (downloads.ts takes them from there; with
 * `browser.downloads.enabled: false` they are refused), disables non-proxied UDP (WebRTC) and
 * background component updates, and applies the
 * configured viewport and timeouts; Chromium's environment has no secrets (no NATS password).
 * Launch failures become short, actionable messages.
 */
import { accessSync, constants, mkdirSync, statSync } from "node:fs";
import type { Browser, BrowserContext } from "playwright-core";
import { LurkError } from "../../shared/contract/index.js";
import type { BrowserConfig } from "../../shared/runtime/config-browser.js";
import { chromiumSandboxOn } from "../../shared/runtime/chromium-sandbox.js";

export interface Launched {
  context: BrowserContext;
  /** the browser of a fresh (non-persistent) start; a persistent context owns its browser */
  browser?: Browser;
}

/** Whether `path` is an executable file (for status and before a start). */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function missing(path: string): LurkError {
  return new LurkError("UNAVAILABLE", `the browser is not available: no Chromium at ${path}. Tell the user to install it (Debian/Ubuntu: \`sudo apt-get install chromium\`) or to set browser.executablePath in LurkBot's config.json to a Chromium or Chrome binary.`, { retryable: false });
}

/** A launch failure as a message the agent (and the user) can act on. */
function launchError(err: unknown, cfg: BrowserConfig, profileDir: string): LurkError {
  const text = (err as Error)?.message ?? String(err);
  if (/ENOENT|EACCES|spawn/i.test(text) && !isExecutable(cfg.executablePath)) return missing(cfg.executablePath);
  if (/ProcessSingleton|profile.*in use|SingletonLock/i.test(text)) {
    return new LurkError("UNAVAILABLE", `Chromium could not open its profile ${profileDir}: another Chromium process uses it (a second browser actor on this host, or a leftover process). Stop that one, or set browser.profileDir (or browser.persistentProfile: false) for this actor.`, { retryable: false });
  }
  if (/No usable sandbox|sandbox/i.test(text) && cfg.sandbox !== false) {
    return new LurkError("UNAVAILABLE", `Chromium could not start its sandbox on this host; set browser.sandbox to false in config.json (less isolation) or enable unprivileged user namespaces. (${text.split("\n")[0]})`, { retryable: false });
  }
  return new LurkError("TOOL_FAILED", `Chromium (${cfg.executablePath}) did not start: ${text.split("\n")[0]?.slice(0, 500)}`);
}

/** The actor's environment without secrets (its NATS password above all): what Chromium runs with. */
function chromiumEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !name.startsWith("LURKBOT_NATS_PASS_") && !/(API_KEY|_TOKEN|_SECRET|_PASSWORD|_PASSWD)$/i.test(name)) env[name] = value;
  }
  return env;
}

/** Starts Chromium through the proxy on 127.0.0.1:`proxyPort`, downloading into `downloadsPath`. */
export async function launchChromium(cfg: BrowserConfig, profileDir: string, proxyPort: number, downloadsPath: string): Promise<Launched> {
  if (!isExecutable(cfg.executablePath)) throw missing(cfg.executablePath);
  const common = {
    executablePath: cfg.executablePath,
    headless: cfg.headless,
    // Chromium refuses its sandbox when run as root (one rule with the metadata and the audit)
    chromiumSandbox: chromiumSandboxOn(cfg.sandbox),
    proxy: { server: `http://127.0.0.1:${proxyPort}` },
    downloadsPath,
    args: ["--force-webrtc-ip-handling-policy=disable_non_proxied_udp", "--disable-component-update", "--disable-background-networking"],
    env: chromiumEnv(),
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
  };
  const contextOptions = { viewport: cfg.viewport, acceptDownloads: cfg.downloads.enabled };
  let launched: Launched;
  try {
    // loaded with the first start only: playwright-core costs ~90 MB of the actor's memory
    const { chromium } = await import("playwright-core");
    if (cfg.persistentProfile) {
      mkdirSync(profileDir, { recursive: true, mode: 0o700 });
      launched = { context: await chromium.launchPersistentContext(profileDir, { ...common, ...contextOptions }) };
    } else {
      const browser = await chromium.launch(common);
      launched = { browser, context: await browser.newContext(contextOptions) };
    }
  } catch (err) {
    throw launchError(err, cfg, profileDir);
  }
  launched.context.setDefaultNavigationTimeout(cfg.navigationTimeoutMs);
  launched.context.setDefaultTimeout(cfg.actionTimeoutMs);
  return launched;
}
