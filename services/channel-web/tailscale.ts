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
 * running and, with `resetOnExit`, turns the serve/funnel off (`tailscale_reset`) when the publish
 * succeeded or timed out (it may have taken effect), never after one that failed (that port may
 * serve something else of the user's).
 * Whatever the mode, when a `tailscale` binary is found, the start first reads `tailscale serve
 * status --json` (shared/runtime/tailscale-stale.ts): a serve or funnel to this chat's port that
 * the config does not want (mode off, refused, another https port; `--bg` outlives an unclean
 * exit) is a warning and `tailscale_stale` (level warn) with the command that turns it off; it
 * is never removed automatically.
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
import { describeStale, serveStatus, staleServes, type ServeConfig } from "../../shared/runtime/tailscale-stale.js";


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
  const local = `http://${settings.host === "::1" ? "[::1]" : settings.host}:${port}/`;
  const fail = (mode: TailscaleMode, problem: string, message: string) => {
    log.error({ mode, problem }, `tailscale ${mode} not set up: ${message}; the web chat still serves on ${local}`);
    rt.emit("tailscale_failed", { mode, problem, message, local }, "error");
  };
  const refusal = ts.mode === "off" ? undefined : tailscalePublishRefusal(settings, opts.tokens);
  if (refusal && ts.mode !== "off") fail(ts.mode, "refused", `${refusal.reason}; ${refusal.fix}`);
  /** what this start publishes: nothing when off or refused */
  const mode: TailscaleMode | undefined = ts.mode === "off" || refusal ? undefined : ts.mode;
  const abort = new AbortController();
  /** set once a publish succeeded or timed out (it may have taken effect): from then on there is something to reset */
  let published: { bin: string } | undefined;
  const running = (async () => {
    const bin = await findTailscale(opts.pathVar ?? process.env.PATH);
    if (!bin) {
      // mode off (or refused) without Tailscale: nothing to check, nothing to say
      if (!mode) return;
      throw new TailscaleError("not-installed", `no \`tailscale\` on PATH (nor the macOS app): ${INSTALL_HINT}, or set channels.web.tailscale.mode to "off"`);
    }
    await checkStale(bin, mode);
    if (!mode) return;
    const node = await tailnetNode(bin, ts.timeoutMs, abort.signal);
    const url = tailnetUrl(node.dnsName, ts.httpsPort);
    try {
      await runTailscale(bin, publishArgs(mode, ts.httpsPort, local), ts.timeoutMs, abort.signal);
    } catch (err) {
      // killed by the time limit or the stop: tailscaled may have applied it all the same
      if (err instanceof TailscaleError && err.problem === "timeout") published = { bin };
      throw err;
    }
    published = { bin };
    const where = mode === "funnel" ? "on the internet (Tailscale Funnel)" : "on the tailnet (Tailscale Serve)";
    log.info({ mode, url, httpsPort: ts.httpsPort, local }, `web chat published ${where}: ${url}`);
    rt.emit("tailscale_published", { mode, url, httpsPort: ts.httpsPort, local });
  })().catch((err: unknown) => {
    if (abort.signal.aborted || !mode) return;
    const e = err instanceof TailscaleError ? err : new TailscaleError("failed", err instanceof Error ? err.message : String(err));
    fail(mode, e.problem, e.message);
  });

  /**
   * A serve or funnel tailscaled keeps (`--bg`) to this chat's port that the config does not
   * want (an earlier run killed before its reset, or one set by hand): a warning and
   * `tailscale_stale` each, with the command that turns it off; never removed here. A failing
   * check is only logged at debug level (the publish reports Tailscale's problems).
   */
  async function checkStale(bin: string, publishing: TailscaleMode | undefined): Promise<void> {
    let config: ServeConfig;
    try {
      config = await serveStatus(bin, ts.timeoutMs, abort.signal);
    } catch (err) {
      log.debug({ err: err instanceof Error ? err.message : String(err) }, "could not read `tailscale serve status --json`; no check for a stale serve");
      return;
    }
    const why = ts.mode === "off" ? "channels.web.tailscale.mode is \"off\""
      : !publishing ? `the channel refuses to publish it (channels.web.tailscale.mode "${ts.mode}")`
        : `channels.web.tailscale.httpsPort is ${ts.httpsPort}`;
    for (const s of staleServes(config, port, publishing ? ts.httpsPort : undefined)) {
      const command = `tailscale ${s.offArgs.join(" ")}`;
      const message = describeStale(s, why);
      log.warn({ servedPort: s.servedPort, funnel: s.funnel, target: s.target, command }, message);
      rt.emit("tailscale_stale", { mode: ts.mode, servedPort: s.servedPort, kind: s.kind, funnel: s.funnel, mount: s.mount, target: s.target, command, message, local }, "warn");
    }
  }

  return {
    async stop() {
      abort.abort();
      await running;
      if (!published || !mode || !ts.resetOnExit) return;
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
