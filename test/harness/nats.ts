/**
 * Test harness: a real nats-server on a free loopback port with its own store dir and the
 * contract's nats.conf and users. It can be SIGKILLed and restarted on the same port and store.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { inboxPrefix, passwordEnvName } from "../../shared/contract/index.js";
import { parseConfig, type LurkConfig } from "../../shared/runtime/config.js";
import { ensureCredentials, type Credentials } from "../../shared/runtime/credentials.js";
import { freeLocalPort } from "../../shared/runtime/free-port.js";
import { spawnNatsServer } from "../../shared/runtime/nats-server.js";
import { ensureStreams } from "../../shared/runtime/streams.js";

/** a free loopback port for a test's server */
export const freePort = freeLocalPort;

export class TestNats {
  private child: ChildProcess | undefined;
  /** nats-server's pid while it runs (the benchmark reads its CPU time) */
  get pid(): number | undefined {
    return this.child?.pid;
  }
  readonly url: string;
  readonly home: string;
  readonly credentials: Credentials;

  private constructor(readonly dir: string, readonly port: number, readonly prefix: string) {
    this.url = `nats://127.0.0.1:${port}`;
    this.home = join(dir, "home");
    this.credentials = ensureCredentials(join(this.home, "credentials", "nats.json"), prefix);
  }

  /** Starts a server; streams are created unless `streams: false`. */
  static async start(opts: { prefix?: string; streams?: boolean } = {}): Promise<TestNats> {
    const dir = mkdtempSync(join(tmpdir(), "lurk-test-"));
    const server = new TestNats(dir, await freePort(), opts.prefix ?? "lurk");
    await server.spawn();
    if (opts.streams !== false) {
      const admin = await server.connect("admin");
      await ensureStreams(admin, server.prefix);
      await admin.close();
    }
    return server;
  }

  private async spawn(): Promise<void> {
    this.child = await spawnNatsServer({
      host: "127.0.0.1",
      port: this.port,
      storeDir: join(this.dir, "store"),
      confPath: join(this.dir, "nats.conf"),
      credentials: this.credentials,
      prefix: this.prefix,
    });
  }

  /** A connection as one of the contract's users (its own inbox prefix). */
  async connect(user: string, opts: { reconnect?: boolean } = {}): Promise<NatsConnection> {
    return connect({
      servers: this.url,
      user,
      pass: this.password(user),
      inboxPrefix: inboxPrefix(user),
      maxReconnectAttempts: opts.reconnect === false ? 0 : -1,
      reconnectTimeWait: 100,
    });
  }

  password(user: string): string {
    const password = this.credentials.users[user];
    if (!password) throw new Error(`no test password for ${user}`);
    return password;
  }

  /** A parsed config pointing at this server, with a throwaway home. */
  config(overrides: Record<string, unknown> = {}, env: Record<string, string | undefined> = {}): LurkConfig {
    return parseConfig({ nats: { prefix: this.prefix }, log: { level: "silent" }, ...overrides }, {
      LURKBOT_HOME: this.home,
      LURKBOT_NATS_URL: this.url,
      ...env,
    }, this.home);
  }

  /** Environment for an actor child process. */
  env(extra: Record<string, string | undefined> = {}): Record<string, string> {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      LURKBOT_HOME: this.home,
      LURKBOT_NATS_URL: this.url,
      LURKBOT_NATS_PREFIX: this.prefix,
      LURKBOT_LOG_LEVEL: "warn",
    };
    for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
    return env;
  }

  passwordEnv(user: string): Record<string, string> {
    return { [passwordEnvName(user)]: this.password(user) };
  }

  /** SIGKILL: no goodbye, like a crash. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGKILL");
    });
    this.child = undefined;
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.spawn();
  }

  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
