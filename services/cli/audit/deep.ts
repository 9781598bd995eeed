/**
 * `--deep`: the running system, over the bus as the CLI's own `cli` user (bus.ts connectCli):
 *  - which actor instances answer `$SRV.PING/INFO` (status.ts gatherStatus), their versions (a
 *    mismatch between instances or with this CLI is a warning), a tools instance on any host
 *    running exec without a sandbox, a browser instance running Chromium without its sandbox
 *    (browser-deep.ts);
 *  - nats-server refuses a connection without credentials;
 *  - the `cli` user may do no more than its contract grant (bus-permissions.ts);
 *  - nats-server listening off loopback without TLS (its INFO);
 *  - small models answering strangers with tools (shared/runtime/models.ts; info, from the config).
 * Without a bus it returns one warning instead, and `reachable: false`.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Env, LurkConfig } from "../../../shared/runtime/config.js";
import { LURKBOT_VERSION } from "../../../shared/runtime/version.js";
import { CHANNEL_ACTORS, LAUNCHER_ACTORS } from "../actors.js";
import { connectCli } from "../bus.js";
import { toCliError } from "../errors.js";
import { isLoopbackHost } from "../../../shared/runtime/loopback-host.js";
import { gatherStatus, type InstanceStatus } from "../status.js";
import { browserDeepChecks } from "./browser-deep.js";
import { permissionChecks } from "./bus-permissions.js";
import { finding, type AuditFinding } from "./finding.js";
import { modelChecks } from "./models.js";

export interface DeepResult {
  findings: AuditFinding[];
  /** false when the bus could not be reached or logged into (the command's exit code 2) */
  reachable: boolean;
}

/** Whether agents may call exec or process, and the browser tools (the findings' levels). */
export interface ToolUse {
  execUsed: boolean;
  browserUsed: boolean;
}

export async function deepChecks(config: LurkConfig, env: Env, use: ToolUse): Promise<DeepResult> {
  const findings = modelChecks(config);
  let nc: NatsConnection;
  try {
    nc = await connectCli(config, env);
  } catch (err) {
    findings.push(finding({
      id: "deep.bus-unreachable", level: "warning",
      title: "the running system could not be checked",
      detail: `--deep needs the bus as the cli user: ${toCliError(err).message}`,
      fix: "start LurkBot (`npx lurkbot start`) or fix what the message says, then run `lurkbot security audit --deep` again",
    }));
    return { findings, reachable: false };
  }
  try {
    findings.push(...await actorsOnBus(nc, config.nats.url, use.execUsed));
    findings.push(...await browserDeepChecks(nc, use.browserUsed));
    findings.push(...serverChecks(nc, config.nats.url));
    findings.push(...await anonymousCheck(config.nats.url));
    findings.push(...await permissionChecks(nc, config.nats.prefix));
  } finally {
    await nc.close().catch(() => undefined);
  }
  return { findings, reachable: true };
}

/** The actor checks on what `$SRV` reports (no service on the bus at all: no instances). */
async function actorsOnBus(nc: NatsConnection, url: string, execUsed: boolean): Promise<AuditFinding[]> {
  let instances: InstanceStatus[];
  try {
    instances = (await gatherStatus(nc, url)).instances;
  } catch (err) {
    return [finding({
      id: "deep.actors.unknown", level: "warning",
      title: "could not list the actors on the bus",
      detail: `$SRV.PING/INFO failed: ${(err as Error)?.message ?? String(err)}`,
      fix: "run `lurkbot status` to see what answers, then run the audit again",
    })];
  }
  return actorChecks(instances, execUsed);
}

const label = (i: InstanceStatus) => `${i.name}@${i.host ?? "?"}${i.pid ? `:${i.pid}` : ""}`;

function actorChecks(instances: InstanceStatus[], execUsed: boolean): AuditFinding[] {
  const out: AuditFinding[] = [];
  const ours = new Set<string>([...LAUNCHER_ACTORS, ...CHANNEL_ACTORS]);
  out.push(finding({
    id: "deep.actors", level: "info",
    title: `${instances.length} actor instance${instances.length === 1 ? "" : "s"} answer on the bus`,
    detail: instances.length ? instances.map((i) => `${label(i)} ${i.version}${ours.has(i.name) ? "" : " (not a LurkBot actor: an extension)"}`).join(", ") : "no actor answered $SRV.PING",
    fix: "none needed; `lurkbot status` shows them with their counters",
  }));
  const own = instances.filter((i) => ours.has(i.name));
  const versions = new Set(own.map((i) => i.version));
  if (versions.size > 1 || (versions.size === 1 && !versions.has(LURKBOT_VERSION))) {
    const odd = own.filter((i) => i.version !== LURKBOT_VERSION);
    out.push(finding({
      id: "deep.actors.version-mismatch", level: "warning",
      title: "actors of different LurkBot versions share the bus",
      detail: `This CLI is ${LURKBOT_VERSION}; ${odd.map((i) => `${label(i)} is ${i.version}`).join(", ")}. A host left on an old version keeps its old fixes and contract.`,
      fix: "update those hosts to the same LurkBot version (git pull && npm ci there), then restart their actors",
    }));
  }
  const bare = instances.filter((i) => i.sandbox === "none");
  if (bare.length) {
    out.push(finding({
      id: "deep.tools.unsandboxed", level: execUsed ? "critical" : "warning",
      title: "a running tools actor executes commands without a sandbox",
      detail: `${bare.map(label).join(", ")} report exec mode "none": bubblewrap does not work on ${bare.length === 1 ? "that host" : "those hosts"} and tools.exec.allowUnsandboxed is set there, so commands run with that user's full rights and network.`,
      fix: "on that host install bubblewrap and set tools.exec.allowUnsandboxed to false, then restart its tools actor",
    }));
  }
  return out;
}

function serverChecks(nc: NatsConnection, url: string): AuditFinding[] {
  const info = nc.info;
  if (!info || isLoopbackHost(info.host) || info.tls_required) return [];
  return [finding({
    id: "deep.nats.server-plaintext", level: "warning",
    title: `nats-server listens on ${info.host}:${info.port} without requiring TLS`,
    detail: `The server at ${url} accepts plaintext clients on a non-loopback address: any client connecting from another host sends its password and messages in clear.`,
    fix: "set LURKBOT_NATS_HOST to 127.0.0.1 on a single host, or give the server a tls { } block (deploy/MULTI_HOST.md) and connect with tls:// URLs",
  })];
}

async function anonymousCheck(url: string): Promise<AuditFinding[]> {
  const servers = url.split(",").map((s) => s.trim()).filter(Boolean);
  try {
    const anon = await connect({ servers, reconnect: false, maxReconnectAttempts: 0, timeout: 3_000, waitOnFirstConnect: false, name: "lurkbot-audit-anonymous-probe" });
    await anon.close().catch(() => undefined);
    return [finding({
      id: "deep.nats.anonymous-access", level: "critical",
      title: "nats-server lets clients in without credentials",
      detail: `A connection to ${url} without a user and password was accepted: anyone who reaches the port can use the bus with whatever the default user may (the generated nats.conf has no anonymous user).`,
      fix: "start nats-server with the nats.conf `lurkbot setup` generates (no no_auth_user, no authorization-less listener), then reload it",
    })];
  } catch (err) {
    const text = `${(err as Error)?.name ?? ""} ${(err as Error)?.message ?? ""}`;
    if (/authori[sz]ation|auth/i.test(text)) return [];
    return [finding({
      id: "deep.nats.anonymous-unknown", level: "info",
      title: "could not tell whether nats-server refuses anonymous clients",
      detail: `A connection without credentials failed for another reason than a refused login: ${(err as Error)?.message ?? String(err)}`,
      fix: "check by hand: `nats --server <url> pub x y` without credentials must fail with Authorization Violation",
    })];
  }
}

