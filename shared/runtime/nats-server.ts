/**
 * Starting a local nats-server with the contract's nats.conf: used by the launcher (when no
 * server answers at the configured URL) and by the test harness. The config file holds no
 * secret; passwords, listen address and store dir go in through the environment.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
import { LurkError, passwordEnvName, renderNatsConf } from "../contract/index.js";
import type { Credentials } from "./credentials.js";

export interface NatsServerSpec {
  host: string;
  port: number;
  storeDir: string;
  /** where the rendered nats.conf is written */
  confPath: string;
  credentials: Credentials;
  prefix?: string;
  logFile?: string;
  /** own process group, so a terminal's Ctrl-C reaches only the launcher, which stops it last */
  detached?: boolean;
}

export function natsServerEnv(spec: NatsServerSpec): Record<string, string> {
  const env: Record<string, string> = {
    LURKBOT_NATS_HOST: spec.host,
    LURKBOT_NATS_PORT: String(spec.port),
    LURKBOT_NATS_STORE: spec.storeDir,
  };
  for (const [user, password] of Object.entries(spec.credentials.users)) env[passwordEnvName(user)] = password;
  return env;
}

/** Spawns nats-server and resolves once it logs "Server is ready". */
export async function spawnNatsServer(spec: NatsServerSpec, timeoutMs = 10_000): Promise<ChildProcess> {
  mkdirSync(spec.storeDir, { recursive: true });
  writeFileSync(spec.confPath, renderNatsConf(spec.prefix), { mode: 0o600 });
  const args = ["-c", spec.confPath];
  if (spec.logFile) args.push("-l", spec.logFile);
  const child = spawn(natsServerBinary(), args, {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...natsServerEnv(spec) },
    stdio: ["ignore", "pipe", "pipe"],
    detached: spec.detached === true,
  });
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new LurkError("TIMEOUT", `nats-server did not become ready in ${timeoutMs} ms: ${output.slice(-2000)}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.length > 64_000) output = output.slice(-32_000);
      if (output.includes("Server is ready")) {
        clearTimeout(timer);
        child.stdout?.removeAllListeners("data");
        child.stderr?.removeAllListeners("data");
        child.stdout?.resume();
        child.stderr?.resume();
        resolve(child);
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(new LurkError("UNAVAILABLE", `cannot run nats-server (${err.message}); install it with \`sudo apt-get install nats-server\` or run deploy/setup.sh`));
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new LurkError("UNAVAILABLE", `nats-server exited with code ${code}: ${output.slice(-2000)}`));
    });
    if (spec.logFile) {
      // with -l the server logs to the file; poll it for readiness instead
      void waitForPort(spec.host, spec.port, timeoutMs).then(() => {
        clearTimeout(timer);
        resolve(child);
      }, () => undefined);
    }
  });
}

export function natsServerBinary(): string {
  return process.env.LURKBOT_NATS_SERVER_BIN ?? "nats-server";
}

/** True when something accepts TCP connections at host:port. */
export function portAnswers(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

async function waitForPort(host: string, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await portAnswers(host, port)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new LurkError("TIMEOUT", `nothing listens on ${host}:${port}`);
}

export function parseNatsUrl(url: string): { host: string; port: number } {
  const first = url.split(",")[0]!.trim();
  const parsed = new URL(first.includes("://") ? first : `nats://${first}`);
  return { host: parsed.hostname.replace(/^\[|\]$/g, ""), port: parsed.port ? Number(parsed.port) : 4222 };
}

export function defaultStoreDir(home: string): string {
  return join(home, "nats", "store");
}
