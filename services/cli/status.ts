/**
 * `lurkbot status`: every actor instance on the bus, from the services framework's
 * `$SRV.PING/INFO/STATS` (all hosts of a cluster answer), one row per instance; for the actors
 * with one active instance (LEASED_ACTORS) the role of each, from the lease holder's service
 * instance id in `lurk_leases`.
 */
import { Svcm, type ServiceIdentity, type ServiceInfo, type ServiceStats } from "@nats-io/services";
import type { NatsConnection } from "@nats-io/transport-node";
import type { McpServerStatus } from "../../shared/contract/index.js";
import { BusClient, isNoResponders } from "../../shared/runtime/client.js";
import { readLeases, type LeaseHolder } from "../../shared/runtime/lease.js";
import { LAUNCHER_ACTORS, launcherActors } from "./actors.js";
import { table } from "./format.js";

/** the actors that keep one active instance through a lease named after them */
export const LEASED_ACTORS = ["cron", "heartbeat", "subagents", "approvals", "router", "sessions"] as const;
/** actors that hold a lease only in some setups (sessions: with `sessions.replication`); no lease: no role */
const OPTIONAL_LEASE: readonly string[] = ["sessions"];

export interface InstanceStatus {
  name: string;
  id: string;
  version: string;
  host: string | null;
  pid: number | null;
  node: string | null;
  /** ISO time the instance started */
  started: string | null;
  uptimeSec: number | null;
  description: string | null;
  endpoints: number;
  requests: number;
  errors: number;
  lastError: string | null;
  /** the tools actor's exec sandbox mode (bwrap, none, unavailable), from its service metadata */
  sandbox: string | null;
  /** the web channel's Tailscale publishing as configured, "serve:443" or "funnel:8443", from its service metadata */
  tailscale: string | null;
  /** for a leased actor: "active" (holds the live lease) or "standby"; null for the others or when the leases cannot be read */
  role: "active" | "standby" | null;
}

export interface StatusReport {
  url: string;
  instances: InstanceStatus[];
  /** launcher actors this config runs (`opts.expected`) with no instance on the bus */
  missing: string[];
  /** the MCP servers of a running mcp actor (`lurk.mcp.status`; absent when none answers) */
  mcp?: McpServerStatus[];
}

/** Every answer to a `$SRV` request; none when no service is on the bus (nats.js then says "no responders"). */
async function collect<T>(iter: Promise<AsyncIterable<T>>): Promise<T[]> {
  const out: T[] = [];
  try {
    for await (const item of await iter) out.push(item);
  } catch (err) {
    if (!isNoResponders(err)) throw err;
  }
  return out;
}

/** `opts.expected`: the launcher actors that should run (launcherActors(config)); default: the ones that always run. */
export async function gatherStatus(nc: NatsConnection, url: string, now = Date.now(), opts: { prefix?: string; expected?: readonly string[] } = {}): Promise<StatusReport> {
  const client = new Svcm(nc).client({ strategy: "stall", maxWait: 2_000, stall: 300 });
  const [pings, infos, stats] = await Promise.all([
    collect<ServiceIdentity>(client.ping()),
    collect<ServiceInfo>(client.info()),
    collect<ServiceStats>(client.stats()),
  ]);
  const ids = new Map<string, ServiceIdentity>();
  for (const x of [...pings, ...infos, ...stats]) if (!ids.has(x.id)) ids.set(x.id, x);
  const instances: InstanceStatus[] = [];
  for (const [id, identity] of ids) {
    const info = infos.find((i) => i.id === id);
    const stat = stats.find((s) => s.id === id);
    const meta = info?.metadata ?? identity.metadata ?? {};
    const started = meta.started ?? stat?.started ?? null;
    const startedMs = started ? Date.parse(started) : NaN;
    const endpoints = stat?.endpoints ?? [];
    const lastError = endpoints.map((e) => e.last_error).filter((e): e is string => !!e).pop() ?? null;
    instances.push({
      name: identity.name,
      id,
      version: identity.version,
      host: meta.host ?? null,
      pid: meta.pid && /^\d+$/.test(meta.pid) ? Number(meta.pid) : null,
      node: meta.node ?? null,
      started,
      uptimeSec: Number.isFinite(startedMs) ? Math.max(0, Math.round((now - startedMs) / 1000)) : null,
      description: info?.description ?? null,
      endpoints: info?.endpoints.length ?? endpoints.length,
      requests: endpoints.reduce((n, e) => n + e.num_requests, 0),
      errors: endpoints.reduce((n, e) => n + e.num_errors, 0),
      lastError,
      sandbox: meta.sandbox ?? null,
      tailscale: meta.tailscale ?? null,
      role: null,
    });
  }
  const leased = LEASED_ACTORS.filter((name) => instances.some((i) => i.name === name));
  const leases = leased.length ? await readLeases(nc, leased).catch(() => undefined) : undefined;
  if (leases) for (const i of instances) i.role = roleOf(i, leases.get(i.name));
  const order = (name: string) => {
    const i = (LAUNCHER_ACTORS as readonly string[]).indexOf(name);
    return i === -1 ? 100 : i;
  };
  instances.sort((a, b) => order(a.name) - order(b.name) || a.name.localeCompare(b.name) || (a.host ?? "").localeCompare(b.host ?? "") || (a.pid ?? 0) - (b.pid ?? 0));
  const running = new Set(instances.map((i) => i.name));
  const mcp = running.has("mcp") ? await mcpServers(nc, opts.prefix) : undefined;
  return { url, instances, missing: (opts.expected ?? launcherActors()).filter((a) => !running.has(a)), ...(mcp ? { mcp } : {}) };
}

/** The mcp actor's servers, or undefined when it does not answer (or this user may not ask). */
async function mcpServers(nc: NatsConnection, prefix: string | undefined): Promise<McpServerStatus[] | undefined> {
  try {
    return (await new BusClient(nc, prefix).call("mcp", "status", {}, { timeoutMs: 2_000 })).servers;
  } catch {
    return undefined;
  }
}

function roleOf(instance: InstanceStatus, lease: LeaseHolder | undefined): InstanceStatus["role"] {
  if (!(LEASED_ACTORS as readonly string[]).includes(instance.name)) return null;
  if (!lease && OPTIONAL_LEASE.includes(instance.name)) return null;
  return lease?.live && lease.instance === instance.id ? "active" : "standby";
}

export function formatUptime(sec: number | null): string {
  if (sec === null) return "-";
  if (sec < 60) return `${sec}s`;
  if (sec < 3600) return `${Math.floor(sec / 60)}m${String(sec % 60).padStart(2, "0")}s`;
  if (sec < 86400) return `${Math.floor(sec / 3600)}h${String(Math.floor((sec % 3600) / 60)).padStart(2, "0")}m`;
  return `${Math.floor(sec / 86400)}d${String(Math.floor((sec % 86400) / 3600)).padStart(2, "0")}h`;
}

export function formatStatus(report: StatusReport): string {
  const header = ["NAME", "HOST", "PID", "VERSION", "UPTIME", "ENDPOINTS", "REQUESTS", "ERRORS", "ROLE"];
  const rows = report.instances.map((i) => [i.name, i.host ?? "-", i.pid === null ? "-" : String(i.pid), i.version, formatUptime(i.uptimeSec), String(i.endpoints), String(i.requests), String(i.errors), i.role ?? "-"]);
  for (const name of report.missing) rows.push([name, "-", "-", "-", "not running", "-", "-", "-", "-"]);
  const lines = [`NATS ${report.url}: ${report.instances.length} instance${report.instances.length === 1 ? "" : "s"}`, "", table(header, rows, [5, 6, 7]).trimEnd()];
  const errors = report.instances.filter((i) => i.lastError);
  if (errors.length) {
    lines.push("", "last errors:");
    for (const i of errors) lines.push(`  ${i.name}@${i.host ?? "?"}:${i.pid ?? "?"}: ${i.lastError}`);
  }
  for (const i of report.instances.filter((x) => x.sandbox)) {
    const what = i.sandbox === "bwrap" ? "bubblewrap" : i.sandbox === "none" ? "NONE (tools.exec.allowUnsandboxed is set)" : "unavailable: exec is refused (install bubblewrap)";
    lines.push("", `exec sandbox of ${i.name}@${i.host ?? "?"}:${i.pid ?? "?"}: ${what}`);
  }
  for (const i of report.instances.filter((x) => x.tailscale)) {
    const [mode, port] = i.tailscale!.split(":");
    const reach = mode === "funnel" ? "the internet" : "the tailnet";
    lines.push("", `${i.name}@${i.host ?? "?"}:${i.pid ?? "?"} publishes the web chat on ${reach} (tailscale ${mode}, https port ${port}); its URL, or why it failed: the channel's log`);
  }
  if (report.mcp?.length) {
    lines.push("", "MCP servers (`npx lurkbot mcp list --tools` for their tools):");
    for (const m of report.mcp) lines.push(`  ${m.name}: ${m.state}, ${m.tools.length} tool${m.tools.length === 1 ? "" : "s"}${m.lastError ? `; last error: ${m.lastError.slice(0, 200)}` : ""}`);
  }
  if (report.missing.length) lines.push("", `not running: ${report.missing.join(", ")} — start them with \`npx lurkbot start\`.`);
  return lines.join("\n") + "\n";
}
