/**
 * `lurkbot start`: setup, a local nats-server when none answers (loopback URLs only), the
 * JetStream streams (as admin), then every actor: one child process each (default) or all
 * hosted in this process (`--single-process`), each with its own NATS user and password and
 * only the secrets it needs. SIGINT/SIGTERM stops the actors (SIGTERM, SIGKILL after 10 s),
 * then the nats-server this launcher started. A second Ctrl-C kills everything at once.
 * With `nats.ssh` (`--ssh TARGET`) it starts no nats-server: it opens one SSH tunnel to the other
 * host's bus, gives every actor the tunnel's local URL, and closes the tunnel after the actors.
 * The actors send their passwords only to this launcher's ssh (LURKBOT_NATS_TUNNEL_PARENT); if
 * another process takes the tunnel's port, everything stops with that error. The ssh pid is kept
 * in `ssh-tunnel.pid` so the next start stops an ssh this launcher left when it was SIGKILLed.
 */
import { createWriteStream, existsSync, rmSync, writeFileSync, type WriteStream } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { passwordEnvName } from "../../shared/contract/index.js";
import type { Env, LurkConfig } from "../../shared/runtime/config.js";
import { checkTransportSecurity } from "../../shared/runtime/credentials.js";
import { startActor, type ActorDefinition, type ActorRuntime } from "../../shared/runtime/actor.js";
import { createLogger } from "../../shared/runtime/logger.js";
import { isLoopbackHost } from "../../shared/runtime/loopback-host.js";
import { parseNatsUrl, portAnswers } from "../../shared/runtime/nats-server.js";
import { ensureStreams } from "../../shared/runtime/streams.js";
import { actorMainPath, REPO_ROOT } from "../../shared/scripts/paths.js";
import { actorEnv, actorModulePath } from "./actors.js";
import { connectCli, currentStreamReplicas } from "./bus.js";
import { describeTunnelEvent, tunnelCliError, tunnelOptions } from "./ssh-bus.js";
import { TUNNEL_PARENT_ENV } from "../../shared/runtime/port-owner.js";
import { forwardSpec, SshTunnel } from "../../shared/runtime/ssh-tunnel.js";
import { forgetTunnel, leftoverSshTunnel, recordTunnel, stopLeftover } from "./ssh-leftover.js";
import { CliError, EXIT, toCliError } from "./errors.js";
import { LogRotator } from "./log-rotation.js";
import { runSetup, type SetupResult } from "./setup.js";
import { deferred, leftoverNatsServer, runningLauncher, STOP_GRACE_MS, SupervisedActor, SupervisedNats, terminatePid, type Reporter } from "./supervise.js";

export interface LaunchOptions {
  config: LurkConfig;
  env: Env;
  actors: string[];
  singleProcess: boolean;
  report: Reporter;
}

interface HostedActor {
  name: string;
  rt: ActorRuntime;
  log: WriteStream;
}

export class Launcher {
  private nats: SupervisedNats | undefined;
  private tunnel: SshTunnel | undefined;
  private tunnelFile: string | undefined;
  private readonly processes: SupervisedActor[] = [];
  private readonly hosted: HostedActor[] = [];
  private stopRequested = false;
  private lockFile: string | undefined;
  private logRotator: LogRotator | undefined;
  private readonly finished = deferred<number>();
  private readonly signalHandlers: Array<[NodeJS.Signals | "uncaughtException" | "unhandledRejection", (...args: any[]) => void]> = [];

  /** the options; with nats.ssh, config and env point at the tunnel once it is open */
  constructor(private opts: LaunchOptions) {}

  private get report(): Reporter {
    return this.opts.report;
  }

  /** Starts everything; resolves with the exit code once stopped. */
  async run(): Promise<number> {
    this.installHandlers();
    try {
      await this.startAll();
    } catch (err) {
      if (!this.stopRequested) {
        const e = toCliError(err);
        this.report.warn(`lurkbot start: ${e.message}`);
        void this.stop("start-up failed", e.exitCode);
      }
    }
    return this.finished.promise;
  }

  private installHandlers(): void {
    const on = (event: NodeJS.Signals | "uncaughtException" | "unhandledRejection", handler: (...args: any[]) => void) => {
      process.on(event as NodeJS.Signals, handler);
      this.signalHandlers.push([event, handler]);
    };
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) on(signal, () => void this.stop(signal, 0));
    if (this.opts.singleProcess) {
      // one actor's bug takes the whole process down: stop the others in order, exit non-zero
      const crash = (err: unknown) => {
        this.report.warn(`an actor crashed the launcher process: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
        void this.stop("crash", EXIT.failed);
      };
      on("uncaughtException", crash);
      on("unhandledRejection", crash);
    }
  }

  private checkStopped(): void {
    if (this.stopRequested) throw new CliError("stopped during start-up");
  }

  private async startAll(): Promise<void> {
    const { config, env, actors, singleProcess } = this.opts;
    checkTransportSecurity(config);
    const missing = actors.filter((a) => !existsSync(singleProcess ? actorModulePath(a) : actorMainPath(a)));
    if (missing.length) {
      throw new CliError(`${missing.join(", ")} ${missing.length === 1 ? "is" : "are"} not built (${missing.map((a) => (singleProcess ? actorModulePath(a) : actorMainPath(a))).join(", ")} missing). Run \`npm run build\` in ${REPO_ROOT}, or start a subset with --only.`);
    }
    const lock = join(config.home, "launcher.pid");
    const other = runningLauncher(lock);
    if (other !== null) {
      throw new CliError(`LurkBot is already running from ${config.home} (launcher pid ${other}). See \`npx lurkbot status\`; stop it (Ctrl-C there, or \`kill ${other}\`) before starting again.`);
    }
    const written = runSetup(config, (line) => {
      if (!/ ok: /.test(line)) this.report.say(line);
    });
    // a password given in the environment wins over the file (as for the actors themselves),
    // for nats-server and the actors alike, so they always agree
    const users = { ...written.credentials.users };
    for (const user of Object.keys(users)) users[user] = env[passwordEnvName(user)] || users[user]!;
    const setup: SetupResult = { ...written, credentials: { users } };
    writeFileSync(lock, `${process.pid}\n`, { mode: 0o600 });
    this.lockFile = lock;
    this.rotateLogs(setup.logsDir);
    await this.ensureServer(setup);
    this.checkStopped();
    await this.ensureStreams();
    this.checkStopped();
    if (singleProcess) await this.hostActors(setup);
    else await this.forkActors(setup);
    this.checkStopped();
    if (!config.model && !config.agents.some((a) => a.model)) {
      this.report.say("no model is configured: replies will explain how to set one (e.g. LURKBOT_MODEL=openai/gpt-4o-mini with OPENAI_API_KEY)");
    }
    this.report.say("LurkBot is running: try `npx lurkbot chat`");
    this.report.say(`logs: ${join(config.home, "logs")}; status: \`npx lurkbot status\`; stop: Ctrl-C`);
  }

  /** Keeps the files in `logs/` under `log.maxFileMb` each (log-rotation.ts), until stopped. */
  private rotateLogs(dir: string): void {
    const { log } = this.opts.config;
    this.logRotator = new LogRotator({
      dir, maxBytes: Math.round(log.maxFileMb * 1024 * 1024), keep: log.keepFiles, checkEveryMs: log.checkEverySec * 1000,
      onRotated: (file) => this.report.say(`rotated ${file} (over ${log.maxFileMb} MB; ${log.keepFiles} older ${log.keepFiles === 1 ? "copy" : "copies"} kept)`),
      onError: (file, err) => this.report.warn(`could not rotate ${file}: ${err.message}. Check that the launcher's user may write ${dir}; the log keeps growing meanwhile.`),
    });
    this.logRotator.checkNow();
    this.logRotator.start();
  }

  private async ensureServer(setup: SetupResult): Promise<void> {
    if (this.opts.config.nats.ssh) return this.openTunnel(this.opts.config.nats.ssh);
    const { config } = this.opts;
    const { host, port } = parseNatsUrl(config.nats.url);
    const pidFile = join(setup.confPath, "..", "nats-server.pid");
    const leftover = leftoverNatsServer(pidFile, setup.confPath);
    if (leftover !== null) {
      this.report.say(`stopping the nats-server (pid ${leftover}) an earlier launcher of ${config.home} left running`);
      await terminatePid(leftover, 10_000);
    }
    if (await portAnswers(host, port, 1_000)) {
      this.report.say(`using the NATS server that already answers at ${host}:${port} (this launcher will not stop it)`);
      return;
    }
    if (!isLoopbackHost(host) || config.nats.url.includes(",")) {
      throw new CliError(
        `no NATS server answers at ${config.nats.url}. The launcher starts nats-server only for a single loopback URL; for ${config.nats.url.includes(",") ? "a list of servers" : host} it expects an external server or cluster (see deploy/MULTI_HOST.md). Start that server, or unset LURKBOT_NATS_URL to run a local one.`,
        EXIT.busDown,
      );
    }
    const logFile = join(setup.logsDir, "nats-server.log");
    this.nats = new SupervisedNats({ host, port, storeDir: setup.storeDir, confPath: setup.confPath, credentials: setup.credentials, prefix: config.nats.prefix, logFile }, this.report, pidFile);
    let child;
    try {
      child = await this.nats.start();
    } catch (err) {
      if (this.stopRequested) throw err;
      const message = (err as Error).message;
      throw new CliError(`could not start nats-server on ${host}:${port}: ${message}${message.includes("install") ? "" : `\nSee ${logFile}.`}`, EXIT.busDown);
    }
    this.report.say(`nats-server ready on ${host}:${port} (pid ${child.pid})`);
  }

  /** The bus of another host through one SSH tunnel: no local nats-server; every actor gets the tunnel's URL. */
  private async openTunnel(ssh: NonNullable<LurkConfig["nats"]["ssh"]>): Promise<void> {
    const file = join(this.opts.config.home, "ssh-tunnel.pid");
    const leftover = leftoverSshTunnel(file);
    if (leftover !== null) {
      this.report.say(`stopping the ssh tunnel (pid ${leftover}) an earlier launcher of ${this.opts.config.home} left running`);
      await stopLeftover(leftover, 5_000);
    }
    forgetTunnel(file);
    const record = () => {
      if (tunnel.pid !== undefined) recordTunnel(file, { pid: tunnel.pid, launcher: process.pid, forward: forwardSpec(tunnel.spec, tunnel.localPort), target: tunnel.spec.target });
    };
    const tunnel = new SshTunnel(tunnelOptions(ssh), (e) => {
      if (e.type === "restarted") {
        record();
        this.report.say(describeTunnelEvent(ssh.target, e));
      } else if (e.type === "broken") {
        // the actors' connections refuse that port (their guard); stop rather than wait for a stranger to leave
        this.report.warn(describeTunnelEvent(ssh.target, e));
        void this.stop("the ssh tunnel's port was taken", EXIT.busDown);
      } else this.report.warn(describeTunnelEvent(ssh.target, e));
    });
    this.tunnel = tunnel;
    this.tunnelFile = file;
    try {
      await tunnel.open();
    } catch (err) {
      throw tunnelCliError(err, ssh.target);
    }
    record();
    const url = tunnel.natsUrl;
    const { ssh: _ssh, ...nats } = this.opts.config.nats;
    // the actors connect to the tunnel's URL as a local bus: LURKBOT_NATS_SSH="" turns their nats.ssh off;
    // LURKBOT_NATS_TUNNEL_PARENT: they send their password only to this launcher's ssh child
    this.opts = { ...this.opts, config: { ...this.opts.config, nats: { ...nats, url } }, env: { ...this.opts.env, LURKBOT_NATS_URL: url, LURKBOT_NATS_SSH: "", [TUNNEL_PARENT_ENV]: String(process.pid) } };
    this.report.say(`ssh tunnel to ${ssh.target} open: the bus at ${ssh.remoteHost}:${ssh.remotePort} there is ${url} here (ssh pid ${tunnel.pid}); no local nats-server`);
  }

  private async ensureStreams(): Promise<void> {
    const { config, env } = this.opts;
    let admin;
    try {
      admin = await connectCli(config, env, { user: "admin", timeoutMs: 5_000 });
    } catch (err) {
      const e = toCliError(err);
      // something answers on the port, but no NATS server that lets us in
      if (e.exitCode === EXIT.busDown) throw new CliError(`cannot reach NATS at ${config.nats.url}: something accepts TCP connections there, but no NATS server answered. Check the address, the TLS setting (tls:// on both sides) and the firewall.`, EXIT.busDown);
      if (this.nats || e.exitCode !== EXIT.config) {
        throw new CliError(
          e.exitCode === EXIT.config
            ? `the NATS server at ${config.nats.url} refuses this LurkBot's admin password: another LurkBot (a different LURKBOT_HOME) or another program owns that port. Stop it, or choose another port with LURKBOT_NATS_URL=nats://127.0.0.1:<port>.`
            : e.message,
          e.exitCode,
        );
      }
      this.report.warn(`could not check the JetStream streams as admin (${e.message.split("\n")[0]}); they must exist already (\`npx lurkbot streams\` on a host with the admin password). If the actors cannot log in either, another LurkBot owns ${config.nats.url}.`);
      return;
    }
    try {
      const replicas = await currentStreamReplicas(admin);
      await ensureStreams(admin, config.nats.prefix, replicas, config.media);
      this.report.say(`JetStream streams ready${replicas > 1 ? ` (replicas ${replicas})` : ""}`);
    } catch (err) {
      throw new CliError(`could not create the JetStream streams: ${(err as Error).message}. Is JetStream enabled on ${config.nats.url}?`);
    } finally {
      await admin.close().catch(() => undefined);
    }
  }

  private async forkActors(setup: SetupResult): Promise<void> {
    const { config, env, actors } = this.opts;
    for (const name of actors) {
      this.checkStopped();
      const actor = new SupervisedActor(name, actorEnv(name, env, setup.credentials, config.home), join(setup.logsDir, `${name}.log`), this.report, (err) => {
        this.report.warn(err.message);
        void this.stop(`${name} failed`, err.exitCode);
      });
      this.processes.push(actor);
      await actor.start();
    }
  }

  private async hostActors(setup: SetupResult): Promise<void> {
    const { config, env, actors } = this.opts;
    for (const name of actors) {
      this.checkStopped();
      const mod = (await import(pathToFileURL(actorModulePath(name)).href)) as { definition?: ActorDefinition };
      const def = mod.definition;
      if (!def || typeof def.start !== "function" || def.name !== name) {
        throw new CliError(`${actorModulePath(name)} does not export \`definition\` for the "${name}" actor (found ${def ? `"${def.name}"` : "nothing"}).`);
      }
      const logFile = join(setup.logsDir, `${name}.log`);
      const stream = createWriteStream(logFile, { flags: "a", mode: 0o600 });
      stream.write(`--- ${new Date().toISOString()} lurkbot launcher: starting ${name} in process ${process.pid} ---\n`);
      const actorConfigEnv = actorEnv(name, env, setup.credentials, config.home);
      let rt: ActorRuntime;
      try {
        rt = await startActor(def, { env: actorConfigEnv, log: createLogger(name, config.log.level, stream), firstConnectTimeoutMs: 10_000 });
      } catch (err) {
        stream.end();
        throw new CliError(`${name} could not start: ${toCliError(err).message}`, toCliError(err).exitCode);
      }
      this.hosted.push({ name, rt, log: stream });
      this.report.say(`${name} ready (in-process, pid ${process.pid})`);
    }
  }

  /** Stops actors, then nats-server; a second call while stopping kills everything at once. */
  async stop(reason: string, code: number): Promise<void> {
    if (this.stopRequested) {
      if (reason === "SIGINT" || reason === "SIGTERM") {
        this.report.warn("stopping now: killing every child process");
        for (const p of this.processes) p.kill();
        this.nats?.kill();
        void this.tunnel?.close();
      }
      return;
    }
    this.stopRequested = true;
    this.report.say(`stopping LurkBot (${reason})…`);
    await Promise.all(this.processes.map(async (p) => {
      const pid = p.pid;
      const outcome = await p.stop(STOP_GRACE_MS);
      if (outcome === "killed") this.report.warn(`${p.name} (pid ${pid}) did not stop within ${STOP_GRACE_MS / 1000} s: killed`);
      else if (outcome === "exited") this.report.say(`${p.name} stopped`);
    }));
    for (const h of [...this.hosted].reverse()) {
      let timer: NodeJS.Timeout | undefined;
      const stopped = await Promise.race([
        h.rt.stop().then(() => true, () => true),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), STOP_GRACE_MS))),
      ]);
      clearTimeout(timer);
      this.report[stopped ? "say" : "warn"](stopped ? `${h.name} stopped` : `${h.name} did not stop within ${STOP_GRACE_MS / 1000} s`);
      await new Promise<void>((resolve) => h.log.end(() => resolve()));
    }
    if (this.nats) {
      const outcome = await this.nats.stop();
      if (outcome !== "not running") this.report.say(`nats-server stopped${outcome === "killed" ? " (killed)" : ""}`);
    }
    if (this.tunnel) {
      const wasOpen = this.tunnel.pid !== undefined;
      await this.tunnel.close();
      if (wasOpen) this.report.say("ssh tunnel closed");
    }
    if (this.tunnelFile) forgetTunnel(this.tunnelFile);
    for (const [event, handler] of this.signalHandlers) process.off(event as NodeJS.Signals, handler);
    // a signal while exiting should not kill us half-way
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => undefined);
    this.logRotator?.stop();
    if (this.lockFile) rmSync(this.lockFile, { force: true });
    this.report.say("LurkBot stopped");
    this.finished.resolve(code);
  }
}
