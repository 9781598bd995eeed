/**
 * The CLI's SSH tunnel to a remote bus (config `nats.ssh`, `--ssh TARGET`, LURKBOT_NATS_SSH):
 * one tunnel per process, shared by its connections and closed when the last one closes (and
 * killed at exit in any case, ssh-tunnel.ts). Tunnel failures become CliErrors: exit 78 for what
 * the user must fix in ssh (key, host key, missing ssh), 2 for an unreachable server. Each
 * connection checks, before it sends its password, that ssh still holds the local port (Linux); when
 * another process took it, the tunnel breaks: its connections are closed and the command fails (exit 2).
 */
import type { LurkConfig } from "../../shared/runtime/config.js";
import { SshTunnel, SshTunnelError, type TunnelEvent } from "../../shared/runtime/ssh-tunnel.js";
import { CliError, EXIT } from "./errors.js";

type Ssh = NonNullable<LurkConfig["nats"]["ssh"]>;

interface Shared {
  key: string;
  tunnel: Promise<SshTunnel>;
  users: number;
}

let shared: Shared | undefined;

/**
 * What a broken tunnel does to the command: the error and exit 2 at once (the exit closes every
 * connection and kills ssh), before a command could end "successfully" on its closed connection.
 */
function onTunnelBroken(message: string): never {
  process.stderr.write(`lurkbot: ${message}\n`);
  process.exit(EXIT.busDown);
}

/** How to name the bus in messages: the URL, or where the tunnel leads. */
export function busLabel(config: LurkConfig): string {
  const ssh = config.nats.ssh;
  return ssh ? `nats://${ssh.remoteHost}:${ssh.remotePort} on ${ssh.target} (through ssh)` : config.nats.url;
}

/** The tunnel's settings: the config's plus the NATS greeting check. */
export function tunnelOptions(ssh: Ssh) {
  return { ...ssh, expectGreeting: true };
}

export function describeTunnelEvent(target: string, e: TunnelEvent): string {
  const wait = (ms: number) => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`);
  if (e.type === "exited") return `the ssh tunnel to ${target} ended (${e.signal ?? `code ${e.code}`}${e.stderr ? `: ${e.stderr.split("\n").pop()}` : ""}); reopening it ${e.restartInMs === 0 ? "now" : `in ${wait(e.restartInMs)}`}`;
  if (e.type === "restarted") return `the ssh tunnel to ${target} is open again (ssh pid ${e.pid})`;
  if (e.type === "broken") return `the ssh tunnel to ${target} is closed: ${e.error.message}`;
  return `could not reopen the ssh tunnel to ${target}: ${e.error.message} (next try in ${wait(e.restartInMs)})`;
}

export function tunnelCliError(err: unknown, target: string): CliError {
  if (err instanceof SshTunnelError) {
    const config = err.code === "CONFIG_INVALID";
    return new CliError(`cannot reach the bus through ssh ${target}: ${err.message}`, config ? EXIT.config : EXIT.busDown);
  }
  if (err instanceof CliError) return err;
  const e = err as { code?: string; message?: string };
  return new CliError(`cannot reach the bus through ssh ${target}: ${e?.message ?? String(err)}`, e?.code === "CONFIG_INVALID" ? EXIT.config : EXIT.busDown);
}

export interface TunnelHandle {
  /** nats://127.0.0.1:<local port> */
  url: string;
  /** throws unless ssh holds the local port: call before sending a password (a nats.js authenticator) */
  guard: () => void;
  release: () => Promise<void>;
}

/**
 * Opens (or shares) the tunnel of `config.nats.ssh`; returns its NATS URL and a release function
 * that closes the tunnel once its last user released it.
 */
export async function acquireTunnel(ssh: Ssh, report: (line: string) => void = (l) => process.stderr.write(`(${l})\n`)): Promise<TunnelHandle> {
  const key = JSON.stringify(ssh);
  if (!shared || shared.key !== key) {
    const tunnel = new SshTunnel(tunnelOptions(ssh), (e) => {
      if (e.type !== "broken") return report(describeTunnelEvent(ssh.target, e));
      onTunnelBroken(tunnelCliError(e.error, ssh.target).message);
    }).open();
    shared = { key, tunnel, users: 0 };
    tunnel.catch(() => {
      if (shared?.tunnel === tunnel) shared = undefined;
    });
  }
  const entry = shared;
  let tunnel: SshTunnel;
  try {
    tunnel = await entry.tunnel;
  } catch (err) {
    throw tunnelCliError(err, ssh.target);
  }
  entry.users++;
  let released = false;
  return {
    url: tunnel.natsUrl,
    guard: () => tunnel.verifyListener(),
    release: async () => {
      if (released) return;
      released = true;
      if (--entry.users > 0) return;
      if (shared === entry) shared = undefined;
      await tunnel.close();
    },
  };
}
