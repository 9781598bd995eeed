/**
 * Publishing the web chat with Tailscale (`channels.web.tailscale`, seeds 001 §10.5): "serve"
 * (the tailnet) or "funnel" (the internet) at `https://<MagicDNS name>[:httpsPort]/`, proxied by
 * tailscaled to the chat's loopback port (it keeps the Host header, so the page's same-origin
 * socket check holds).
 * Contract: runs in the background after the chat listens, so start-up never waits on Tailscale;
 * whatever fails (refused by the rules below, no binary, not logged in, a failing or hanging
 * command) is logged and published as `lurk.evt.channel-web.tailscale_failed` (level error, with
 * `problem` and a `message` saying what to do) and the chat keeps serving locally. Success: log
 * and `lurk.evt.channel-web.tailscale_published` with the URL. `stop()` aborts a command still
 * running and, with `resetOnExit`, turns the serve/funnel off (`tailscale_reset`).
 * Rules (shared/runtime/tailscale-policy.ts, also the security audit's): only a chat listening
 * on loopback is published; funnel only when every token is strong.
 */
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import type { WebChannelConfig } from "../../shared/runtime/config-channels.js";
import type { Logger } from "../../shared/runtime/logger.js";
import {
  findTailscale, INSTALL_HINT, publishArgs, runTailscale, tailnetNode, tailnetUrl, TailscaleError, unpublishArgs, type TailscaleMode,
} from "../../shared/runtime/tailscale.js";
import { tailscalePublishRefusal, type WebToken } from "../../shared/runtime/tailscale-policy.js";

export type { WebToken };

/** the longest the reset at shutdown may take (the process is stopped 10 s after SIGTERM) */
const RESET_TIMEOUT_MS = 5_000;

export interface TailscaleExposure {
  stop(): Promise<void>;
}

export interface ExposureOptions {
  rt: ActorRuntime;
  log: Logger;
  settings: WebChannelConfig;
  /** the port the chat listens on */
  port: number;
  tokens: readonly WebToken[];
  /** PATH to look for `tailscale` in (default: this process's) */
  pathVar?: string;
}

/** Starts publishing in the background (see the file comment); never throws. */
export function exposeWithTailscale(opts: ExposureOptions): TailscaleExposure {
  const { rt, log, settings, port } = opts;
  const ts = settings.tailscale;
  if (ts.mode === "off") return { stop: async () => undefined };
  const mode: TailscaleMode = ts.mode;
  const local = `http://${settings.host === "::1" ? "[::1]" : settings.host}:${port}/`;
  const fail = (problem: string, message: string) => {
    log.error({ mode, problem }, `tailscale ${mode} not set up: ${message}; the web chat still serves on ${local}`);
    rt.emit("tailscale_failed", { mode, problem, message, local }, "error");
  };
  const refusal = tailscalePublishRefusal(settings, opts.tokens);
  if (refusal) {
    fail("refused", `${refusal.reason}; ${refusal.fix}`);
    return { stop: async () => undefined };
  }
  const abort = new AbortController();
  /** set once the publish command was started: from then on there may be something to reset */
  let published: { bin: string } | undefined;
  const running = (async () => {
    const bin = await findTailscale(opts.pathVar ?? process.env.PATH);
    if (!bin) throw new TailscaleError("not-installed", `no \`tailscale\` on PATH (nor the macOS app): ${INSTALL_HINT}, or set channels.web.tailscale.mode to "off"`);
    const node = await tailnetNode(bin, ts.timeoutMs, abort.signal);
    const url = tailnetUrl(node.dnsName, ts.httpsPort);
    published = { bin };
    await runTailscale(bin, publishArgs(mode, ts.httpsPort, local), ts.timeoutMs, abort.signal);
    const where = mode === "funnel" ? "on the internet (Tailscale Funnel)" : "on the tailnet (Tailscale Serve)";
    log.info({ mode, url, httpsPort: ts.httpsPort, local }, `web chat published ${where}: ${url}`);
    rt.emit("tailscale_published", { mode, url, httpsPort: ts.httpsPort, local });
  })().catch((err: unknown) => {
    if (abort.signal.aborted) return;
    const e = err instanceof TailscaleError ? err : new TailscaleError("failed", err instanceof Error ? err.message : String(err));
    fail(e.problem, e.message);
  });
  return {
    async stop() {
      abort.abort();
      await running;
      if (!published || !ts.resetOnExit) return;
      try {
        await runTailscale(published.bin, unpublishArgs(mode, ts.httpsPort), Math.min(ts.timeoutMs, RESET_TIMEOUT_MS));
        log.info({ mode, httpsPort: ts.httpsPort }, `tailscale ${mode} on https port ${ts.httpsPort} turned off`);
        rt.emit("tailscale_reset", { mode, httpsPort: ts.httpsPort });
      } catch (err) {
        log.warn({ mode, err: err instanceof Error ? err.message : String(err) }, `could not turn tailscale ${mode} off: run \`tailscale ${unpublishArgs(mode, ts.httpsPort).join(" ")}\``);
      }
    },
  };
}
