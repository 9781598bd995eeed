/**
 * What tailscaled serves to a local port now (`tailscale serve status --json`, the ServeConfig
 * tailscaled keeps: `TCP` keyed by port, `Web` and `AllowFunnel` keyed by "<host>:<port>", a Web
 * entry's `Handlers` keyed by mount point with `Proxy: "http://127.0.0.1:8790"`), for the web
 * chat's check of a stale serve or funnel: `--bg` persists in tailscaled, so after an unclean
 * exit (SIGKILL, OOM, reboot) a publish outlives the channel, and `mode: "off"` alone does not
 * remove it. `staleServes` lists the handlers that proxy (or forward TCP) to the chat's loopback
 * port while the config says nothing should (mode off, refused) or on another HTTPS port than
 * `httpsPort`; each with the exact command that turns it off. Nothing is removed here: the user
 * may have set it up by hand. Foreground entries (a `tailscale serve` without `--bg` that is
 * still running) are not read: they end with their command.
 */
import { z } from "zod";
import { safeParseJson } from "../contract/index.js";
import { runTailscale, TailscaleError, trimOutput } from "./tailscale.js";

export const SERVE_STATUS_ARGS = ["serve", "status", "--json"] as const;

const handlerSchema = z.object({ Proxy: z.string().optional() }).loose();
const serveConfigSchema = z.object({
  TCP: z.record(z.string(), z.object({ HTTPS: z.boolean().optional(), TCPForward: z.string().optional() }).loose().nullable()).nullish(),
  Web: z.record(z.string(), z.object({ Handlers: z.record(z.string(), handlerSchema.nullable()).nullish() }).loose().nullable()).nullish(),
  AllowFunnel: z.record(z.string(), z.boolean()).nullish(),
}).loose();
export type ServeConfig = z.infer<typeof serveConfigSchema>;

/** A serve or funnel of tailscaled that reaches the chat's port. */
export interface ChatServe {
  /** the node's port it is served on (HTTPS for a Web handler) */
  servedPort: number;
  kind: "https" | "tcp";
  /** on the internet (AllowFunnel) as well as the tailnet */
  funnel: boolean;
  /** the Web handler's mount point ("/" for the whole site) */
  mount: string;
  /** where it proxies to, as tailscaled has it */
  target: string;
  /** the command that turns it off (argv after `tailscale`) */
  offArgs: string[];
}

/** `tailscale serve status --json`, parsed; throws TailscaleError when it fails or prints no ServeConfig. */
export async function serveStatus(bin: string, timeoutMs: number, signal?: AbortSignal): Promise<ServeConfig> {
  const out = await runTailscale(bin, SERVE_STATUS_ARGS, timeoutMs, signal);
  // nothing served: `{}` (older versions print nothing)
  if (!out.stdout.trim()) return {};
  try {
    return serveConfigSchema.parse(safeParseJson(out.stdout, { maxBytes: 4 * 1024 * 1024 }));
  } catch {
    throw new TailscaleError("failed", `\`tailscale ${SERVE_STATUS_ARGS.join(" ")}\` printed no usable serve config: ${trimOutput(out.stdout).slice(0, 200) || "(nothing)"}`);
  }
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);

/** Whether a proxy target ("http://127.0.0.1:8790", "localhost:8790", "127.0.0.1:8790/x") is the loopback port `port`. */
export function targetsLoopbackPort(target: string, port: number): boolean {
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(target) ? target : `http://${target}`);
  } catch {
    return false;
  }
  const given = url.port ? Number(url.port) : url.protocol === "https:" ? 443 : url.protocol === "http:" ? 80 : NaN;
  return LOOPBACK.has(url.hostname.toLowerCase()) && given === port;
}

const portOf = (hostPort: string): number => Number(/:(\d{1,5})$/.exec(hostPort)?.[1] ?? NaN);
/** a mount point safe to show in a command line (anything else is named, not quoted into one) */
const SAFE_MOUNT = /^\/[A-Za-z0-9._~%\/-]{0,200}$/;

/** Every handler of `config` that reaches the loopback port `port`. */
export function servesTo(config: ServeConfig, port: number): ChatServe[] {
  const out: ChatServe[] = [];
  const funnelPorts = new Set(Object.entries(config.AllowFunnel ?? {}).filter(([, on]) => on).map(([hp]) => portOf(hp)));
  for (const [hostPort, web] of Object.entries(config.Web ?? {})) {
    const servedPort = portOf(hostPort);
    if (!Number.isInteger(servedPort)) continue;
    for (const [mount, handler] of Object.entries(web?.Handlers ?? {})) {
      if (!handler?.Proxy || !targetsLoopbackPort(handler.Proxy, port)) continue;
      const funnel = config.AllowFunnel?.[hostPort] === true;
      const path = mount !== "/" && SAFE_MOUNT.test(mount) ? [`--set-path=${mount}`] : [];
      out.push({ servedPort, kind: "https", funnel, mount, target: handler.Proxy, offArgs: [funnel ? "funnel" : "serve", `--https=${servedPort}`, ...path, "off"] });
    }
  }
  for (const [key, tcp] of Object.entries(config.TCP ?? {})) {
    const servedPort = Number(key);
    if (!Number.isInteger(servedPort) || !tcp?.TCPForward || !targetsLoopbackPort(tcp.TCPForward, port)) continue;
    const funnel = funnelPorts.has(servedPort);
    out.push({ servedPort, kind: "tcp", funnel, mount: "/", target: tcp.TCPForward, offArgs: [funnel ? "funnel" : "serve", `--tcp=${servedPort}`, "off"] });
  }
  return out;
}

/**
 * The serves of `config` that reach the chat's port but should not be there: all of them when
 * nothing is to be published (`httpsPort` undefined: mode off, or a setting the channel refuses),
 * else those on another port than `httpsPort`.
 */
export function staleServes(config: ServeConfig, port: number, httpsPort: number | undefined): ChatServe[] {
  return servesTo(config, port).filter((s) => httpsPort === undefined || s.servedPort !== httpsPort);
}

/** One line about a stale serve: where it is, what reaches it, and how to turn it off. */
export function describeStale(s: ChatServe, why: string): string {
  const reach = s.funnel ? "on the internet (Tailscale Funnel)" : "on the tailnet (Tailscale Serve)";
  const where = s.kind === "tcp" ? `TCP port ${s.servedPort}` : `https port ${s.servedPort}${s.mount === "/" ? "" : ` path ${JSON.stringify(s.mount)}`}`;
  return `tailscaled still publishes this web chat ${reach} on ${where} (to ${s.target}) while ${why}: run \`tailscale ${s.offArgs.join(" ")}\` to turn it off (LurkBot does not remove it: it may be yours)`;
}
