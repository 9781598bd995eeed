/**
 * What `lurkbot daemon` manages, on either platform (seeds 001 §7.3): a per-user service that
 * runs `lurkbot start` in the foreground (the launcher: nats-server and every actor; SIGTERM
 * stops them in order and exits 0). The service holds no secret: the launcher reads them from
 * $LURKBOT_HOME/credentials/ as it does in a terminal.
 */
import { homedir, userInfo } from "node:os";
import { join } from "node:path";
import type { Env, LurkConfig } from "../../shared/runtime/config.js";
import { DIST_ROOT, REPO_ROOT } from "../../shared/scripts/paths.js";
import type { Runner } from "./daemon-exec.js";

export interface ServiceRuntime {
  /** running: the manager reports it active with a main process */
  status: "running" | "stopped" | "not installed" | "unknown";
  /** the manager's own words, e.g. systemd's ActiveState/SubState "active (running)" */
  state?: string;
  enabled?: string;
  pid?: number;
  /** when it entered its current state (ms since the epoch) */
  since?: number;
  /** the manager's own text of that time, when it is not read as one */
  sinceText?: string;
  restarts?: number;
  lastExitStatus?: number;
  /** the newest log lines and where they came from */
  log?: { source: string; lines: string[] };
  /** why the log could not be read */
  logError?: string;
}

export interface GatewayService {
  /** systemd or launchd */
  readonly kind: "systemd" | "launchd";
  /** the unit name or launchd label */
  readonly label: string;
  /** the unit or plist file */
  readonly path: string;
  /** the file's text */
  render(): string;
  install(): Promise<void>;
  uninstall(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  restart(): Promise<void>;
  isInstalled(): boolean;
  runtime(): Promise<ServiceRuntime>;
}

/** What the service runs, fixed at install time. */
export interface ServiceSpec {
  /** absolute path of node */
  node: string;
  /** the compiled CLI: <repo>/dist/services/cli/main.js */
  main: string;
  repo: string;
  home: string;
  /** PATH of the installing shell (nats-server, bwrap, … are found as in the terminal) */
  path: string;
  /** LURKBOT_NATS_SERVER_BIN, when the installing shell sets it */
  natsServerBin?: string;
  logsDir: string;
}

export interface ServiceContext {
  spec: ServiceSpec;
  run: Runner;
  env: Env;
  say(line: string): void;
  warn(line: string): void;
}

export function serviceSpec(config: LurkConfig, env: Env): ServiceSpec {
  return {
    node: process.execPath,
    main: join(DIST_ROOT, "services", "cli", "main.js"),
    repo: REPO_ROOT,
    home: config.home,
    path: env.PATH || "/usr/local/bin:/usr/bin:/bin",
    ...(env.LURKBOT_NATS_SERVER_BIN ? { natsServerBin: env.LURKBOT_NATS_SERVER_BIN } : {}),
    logsDir: join(config.home, "logs"),
  };
}

export function userName(env: Env): string {
  try {
    return userInfo().username;
  } catch {
    return env.USER ?? env.LOGNAME ?? "";
  }
}

export function userHome(env: Env): string {
  return env.HOME || homedir();
}
