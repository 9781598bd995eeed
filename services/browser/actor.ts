/**
 * The browser actor: a real Chromium for the agent (playwright-core), served as the `browser` and
 * `browser_evaluate` tools through serveTools in its own queue group ("browser"), so the
 * agent-runners merge them into the catalog next to the built-in tools (the pattern of
 * test/fixtures/ext-tools). Its NATS user `browser` may answer only these two call subjects.
 * One Chromium per instance (session.ts): started on the first call, stopped when idle, started
 * again after a crash; every request it makes passes the egress proxy (egress-proxy.ts). All of
 * that runs in a worker thread (host.ts, worker.ts) that ends with Chromium, so an idle actor
 * holds neither playwright-core nor what it allocated.
 * `browser.enabled: false` keeps the actor running without tools.
 */
import { BROWSER_TOOLS } from "../../shared/contract/index.js";
import type { ActorDefinition } from "../../shared/runtime/actor.js";
import { chromiumSandboxOn } from "../../shared/runtime/chromium-sandbox.js";
import { browserProfileDir } from "../../shared/runtime/config-browser.js";
import { serveTools } from "../../shared/runtime/tool-serve.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { isExecutable } from "./chromium.js";
import { BrowserHost } from "./host.js";
import { browserPolicy } from "./policy.js";
import { removeStale, stagingRoot } from "./staging.js";
import { browserTools } from "./tools.js";

export const BROWSER_QUEUE = "browser";

export const definition: ActorDefinition = {
  name: "browser",
  version: LURKBOT_VERSION,
  description: "the browser tools: a Chromium driven by playwright-core, behind an egress proxy",
  /** `$SRV.INFO` metadata: whether the tools are on, Chromium is where the config says, and runs with its sandbox (`lurkbot security audit --deep`) */
  metadata(config) {
    return { browserEnabled: String(config.browser.enabled), chromium: config.browser.executablePath, chromiumFound: String(isExecutable(config.browser.executablePath)), chromiumSandbox: String(chromiumSandboxOn(config.browser.sandbox)) };
  },
  async start(rt) {
    const config = rt.config.browser;
    if (!config.enabled) {
      rt.log.info("browser.enabled is false: no browser tools are served");
      return;
    }
    if (!isExecutable(config.executablePath)) {
      rt.log.warn({ executablePath: config.executablePath }, "no Chromium at browser.executablePath: calls will say how to install it (sudo apt-get install chromium)");
    }
    const profileDir = browserProfileDir(config, rt.config.home, rt.config.dataDir);
    // the browser (playwright-core, Chromium, the proxy) runs in a worker thread while it is used (host.ts)
    // downloads are staged under the data dir; what a killed actor left there goes now (staging.ts)
    const staging = stagingRoot(rt.config.dataDir);
    const stale = await removeStale(staging);
    if (stale.length) rt.log.info({ removed: stale.length, staging }, "removed download staging folders an earlier browser actor left behind");
    const host = new BrowserHost({ config, profileDir, stagingRoot: staging, allowPrivateHosts: rt.config.tools.web.allowPrivateHosts, log: rt.log, activity: rt.activity });
    const tools = browserTools(rt, host);
    if (tools.map((t) => t.definition.name).join() !== BROWSER_TOOLS.join()) throw new Error("the browser tools and the contract's BROWSER_TOOLS differ");
    serveTools(rt, tools, { queue: BROWSER_QUEUE, policy: browserPolicy(rt.config) });
    return { stop: async () => void (await host.stop("the browser actor is stopping")) };
  },
};
