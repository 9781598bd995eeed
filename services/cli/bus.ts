/**
 * The CLI's own NATS connection: the `cli` user (or `admin` for `streams`), its own inbox
 * prefix, and no retrying of the first connect, so a stopped bus is reported at once (exit
 * code 2: the port refuses the connection). The first-connect timeout, 5 s, only bounds a
 * server that accepts TCP but does not answer; it is generous because a loaded machine can
 * take seconds to finish a handshake with a running one. With `nats.ssh` (`--ssh TARGET`) the
 * connection goes through the process's SSH tunnel (ssh-bus.ts), closed with the last connection;
 * it (and a launcher's connection to its own tunnel, LURKBOT_NATS_TUNNEL_PARENT) sends the password
 * only after checking that ssh holds the tunnel's port (port-owner.ts).
 */
import { hostname } from "node:os";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { inboxPrefix, passwordEnvName, STREAMS } from "../../shared/contract/index.js";
import type { Env, LurkConfig } from "../../shared/runtime/config.js";
import { BusClient } from "../../shared/runtime/client.js";
import { checkTransportSecurity, passwordFor } from "../../shared/runtime/credentials.js";
import { guardedAuthenticator, tunnelGuard } from "../../shared/runtime/port-owner.js";
import { SshTunnelError } from "../../shared/runtime/ssh-tunnel.js";
import { CliError, EXIT } from "./errors.js";
import { acquireTunnel, busLabel, tunnelCliError } from "./ssh-bus.js";

export interface CliConnectOptions {
  user?: string;
  /** keep reconnecting after the first connect (tail, chat); default: no reconnect */
  reconnect?: boolean;
  /** first-connect timeout, ms */
  timeoutMs?: number;
}

const FIRST_CONNECT_TIMEOUT_MS = 5_000;

export function busDownMessage(url: string): string {
  return `cannot reach NATS at ${url} — is LurkBot running? Start it with \`npx lurkbot start\`.`;
}

export async function connectCli(config: LurkConfig, env: Env, opts: CliConnectOptions = {}): Promise<NatsConnection> {
  const user = opts.user ?? "cli";
  checkTransportSecurity(config);
  const password = cliPassword(user, config, env);
  const tunnel = config.nats.ssh ? await acquireTunnel(config.nats.ssh) : undefined;
  const servers = tunnel ? [tunnel.url] : config.nats.url.split(",").map((s) => s.trim()).filter(Boolean);
  const guard = tunnel?.guard ?? tunnelGuard(config.nats.url, env);
  try {
    const nc = await connect({
      servers,
      // through a tunnel: the password only to ssh's own port, and no server addresses from INFO
      ...(guard ? { authenticator: guardedAuthenticator(user, password, guard), ignoreClusterUpdates: true } : { user, pass: password }),
      name: `lurkbot-${user}@${hostname()}:${process.pid}`,
      inboxPrefix: inboxPrefix(user),
      timeout: opts.timeoutMs ?? FIRST_CONNECT_TIMEOUT_MS,
      waitOnFirstConnect: false,
      reconnect: opts.reconnect === true,
      maxReconnectAttempts: opts.reconnect ? -1 : 0,
      reconnectTimeWait: 500,
    });
    if (tunnel) void nc.closed().then(tunnel.release, tunnel.release);
    return nc;
  } catch (err) {
    await tunnel?.release();
    if (err instanceof SshTunnelError && config.nats.ssh) throw tunnelCliError(err, config.nats.ssh.target);
    if (err instanceof SshTunnelError || (guard && (err as { code?: string })?.code === "UNAVAILABLE")) throw new CliError((err as Error).message, EXIT.busDown);
    throw connectError(err, busLabel(config), user, tunnel !== undefined);
  }
}

/** The user's password; through ssh, a missing one is the server's to copy, not a new one to create. */
function cliPassword(user: string, config: LurkConfig, env: Env): string {
  try {
    return passwordFor(user, config, env);
  } catch (err) {
    if (!config.nats.ssh || !/no NATS password|has no password/.test((err as Error).message)) throw err;
    throw new CliError(
      `no NATS password for "${user}" on this machine: the bus on ${config.nats.ssh.target} checks the passwords of that server's LurkBot. ` +
        `Copy users.${user} from its $LURKBOT_HOME/credentials/nats.json into ${passwordEnvName(user)}, or copy the whole file to ${config.nats.credentialsFile} (mode 600). ` +
        "Do not run `lurkbot setup` here for this: it would create other passwords.",
      EXIT.config,
    );
  }
}

/** Runs `fn` with a request client on a fresh `cli` connection, closed afterwards. */
export async function withCliBus<T>(config: LurkConfig, env: Env, fn: (bus: BusClient) => Promise<T>): Promise<T> {
  const nc = await connectCli(config, env);
  try {
    return await fn(new BusClient(nc, config.nats.prefix, config.bus.requestTimeoutMs));
  } finally {
    await nc.close().catch(() => undefined);
  }
}

export function connectError(err: unknown, url: string, user: string, viaSsh = false): CliError {
  const e = err as { name?: string; message?: string; code?: string };
  const text = `${e?.name ?? ""} ${e?.message ?? ""} ${e?.code ?? ""}`;
  const authFailed = /authori[sz]ation|auth(entication)? (violation|failed)|permission/i.test(text);
  if (authFailed && viaSsh) {
    return new CliError(
      `NATS at ${url} refused the "${user}" user's password: this machine needs the server's. Copy it from the server's ` +
        `$LURKBOT_HOME/credentials/nats.json (users.${user}) into ${passwordEnvName(user)}, or copy that file to this LURKBOT_HOME (mode 600).`,
      EXIT.config,
    );
  }
  if (authFailed) {
    return new CliError(
      `NATS at ${url} refused the "${user}" user's password: that server was started with other credentials. ` +
        "Use the LURKBOT_HOME that started it (its credentials/nats.json), or stop it and run `npx lurkbot start`.",
      EXIT.config,
    );
  }
  return new CliError(busDownMessage(url), EXIT.busDown);
}

/**
 * The replica count the streams have now (1 when they do not exist yet), so re-running
 * ensureStreams on start keeps a cluster's `lurkbot streams --replicas 3`.
 */
export async function currentStreamReplicas(nc: NatsConnection): Promise<number> {
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(STREAMS.inbound);
    return info.config.num_replicas || 1;
  } catch {
    return 1;
  }
}
