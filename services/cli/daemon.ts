/**
 * `lurkbot daemon install|uninstall|status|start|stop|restart [--dry-run] [--json]`: LurkBot as a
 * per-user background service (seeds 001 §7): a systemd user unit on Linux (daemon-systemd.ts),
 * a launchd LaunchAgent on macOS (daemon-launchd.ts). `--dry-run` prints the unit and the
 * commands without running or writing anything. `status` adds whether the bus answers.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadConfig, type Env, type LurkConfig } from "../../shared/runtime/config.js";
import type { ParsedCommand } from "./args.js";
import { connectCli } from "./bus.js";
import { Runner } from "./daemon-exec.js";
import { LaunchdService } from "./daemon-launchd.js";
import { serviceSpec, type GatewayService, type ServiceRuntime } from "./daemon-service.js";
import { SystemdService } from "./daemon-systemd.js";
import { CliError, EXIT, toCliError } from "./errors.js";
import { utcTime } from "./format.js";
import { busLabel } from "./ssh-bus.js";
import { gatherStatus } from "./status.js";
import { checkSubcommand, type SubcommandSpec } from "./subcommands.js";
import { runningLauncher } from "./supervise.js";

export interface DaemonIo {
  out(line: string): void;
  err(line: string): void;
}

const SUBCOMMANDS: Record<string, SubcommandSpec> = {
  install: { arg: "none", options: ["dry-run"] },
  uninstall: { arg: "none", options: ["dry-run"] },
  start: { arg: "none", options: ["dry-run"] },
  stop: { arg: "none", options: ["dry-run"] },
  restart: { arg: "none", options: ["dry-run"] },
  status: { arg: "none", options: ["json"] },
};

/** The service of this platform (LURKBOT_DAEMON_PLATFORM: tests only). */
export function gatewayService(config: LurkConfig, env: Env, run: Runner, io: DaemonIo): GatewayService {
  const platform = env.LURKBOT_DAEMON_PLATFORM || process.platform;
  const ctx = { spec: serviceSpec(config, env), run, env, say: io.out, warn: io.err };
  if (platform === "linux") return new SystemdService(ctx);
  if (platform === "darwin") return new LaunchdService(ctx);
  throw new CliError(`lurkbot daemon knows systemd (Linux) and launchd (macOS), not ${platform}: run \`npx lurkbot start\` under your own supervisor (a Windows scheduled task, a container's restart policy).`);
}

export async function cmdDaemon(p: ParsedCommand, env: Env, io: DaemonIo): Promise<number> {
  const { sub } = checkSubcommand(p, "daemon", SUBCOMMANDS, "nothing");
  const config = loadConfig(env);
  const dryRun = p.options["dry-run"] === true;
  const service = gatewayService(config, env, new Runner(env, dryRun, io.out), io);
  switch (sub) {
    case "install":
      return install(service, config, dryRun, io);
    case "uninstall":
      await service.uninstall();
      return EXIT.ok;
    case "start":
      await service.start();
      if (!dryRun) io.out(`started ${service.label} (\`lurkbot daemon status\` shows it)`);
      return EXIT.ok;
    case "stop":
      await service.stop();
      if (!dryRun) io.out(`stopped ${service.label}`);
      return EXIT.ok;
    case "restart":
      await service.restart();
      if (!dryRun) io.out(`restarted ${service.label}`);
      return EXIT.ok;
    default:
      return status(service, config, env, p.options.json === true, io);
  }
}

async function install(service: GatewayService, config: LurkConfig, dryRun: boolean, io: DaemonIo): Promise<number> {
  const { main } = serviceSpec(config, {});
  if (!existsSync(main) && !dryRun) throw new CliError(`${main} is missing: run \`npm run build\` in the repository first.`);
  const foreground = runningLauncher(join(config.home, "launcher.pid"));
  if (foreground !== null) io.err(`note: LurkBot already runs from ${config.home} in the foreground (launcher pid ${foreground}); the service will fail to start until you stop that one (Ctrl-C there).`);
  await service.install();
  if (dryRun) return EXIT.ok;
  io.out(`installed ${service.label} (${service.kind}): it runs \`lurkbot start\` with LURKBOT_HOME=${config.home}`);
  io.out("settings come from config.json and the secrets from credentials/ there; variables of this shell are not copied (but PATH)");
  io.out(`check it: \`lurkbot daemon status\`${service.kind === "systemd" ? "; follow its log: `journalctl --user -u lurkbot -f`" : ""}`);
  return EXIT.ok;
}

interface BusState {
  url: string;
  answers: boolean;
  instances?: number;
  error?: string;
}

async function busState(config: LurkConfig, env: Env): Promise<BusState> {
  const url = busLabel(config);
  try {
    const nc = await connectCli(config, env, { timeoutMs: 3_000 });
    try {
      const report = await gatherStatus(nc, url);
      return { url, answers: true, instances: report.instances.length };
    } finally {
      await nc.close().catch(() => undefined);
    }
  } catch (err) {
    return { url, answers: false, error: toCliError(err).message.split("\n")[0]! };
  }
}

async function status(service: GatewayService, config: LurkConfig, env: Env, json: boolean, io: DaemonIo): Promise<number> {
  const installed = service.isInstalled();
  const runtime = await service.runtime();
  const bus = await busState(config, env);
  if (json) io.out(JSON.stringify({ service: { kind: service.kind, label: service.label, path: service.path, installed }, runtime, bus }, null, 2));
  else io.out(formatDaemonStatus(service, installed, runtime, bus));
  return runtime.status === "running" ? EXIT.ok : EXIT.failed;
}

export function formatDaemonStatus(service: Pick<GatewayService, "kind" | "label" | "path">, installed: boolean, rt: ServiceRuntime, bus: BusState): string {
  const lines = [
    `service   ${service.label} (${service.kind} ${service.kind === "systemd" ? "user unit" : "LaunchAgent"}, ${installed ? service.path : `not installed: \`lurkbot daemon install\` writes ${service.path}`})`,
    `state     ${rt.status}${rt.state ? ` — ${rt.state}` : ""}${rt.enabled ? `, ${rt.enabled}` : ""}`,
  ];
  if (rt.pid !== undefined) lines.push(`pid       ${rt.pid}`);
  if (rt.since !== undefined) lines.push(`since     ${utcTime(rt.since)}`);
  else if (rt.sinceText) lines.push(`since     ${rt.sinceText}`);
  if (rt.restarts !== undefined) lines.push(`restarts  ${rt.restarts}`);
  if (rt.lastExitStatus !== undefined && rt.status !== "running") lines.push(`last exit ${rt.lastExitStatus}`);
  lines.push(bus.answers ? `bus       answers at ${bus.url} (${bus.instances} actor instance${bus.instances === 1 ? "" : "s"})` : `bus       no answer at ${bus.url}: ${bus.error}`);
  if (rt.log) {
    lines.push("", `last log lines (${rt.log.source}):`, ...(rt.log.lines.length ? rt.log.lines.map((l) => `  ${l}`) : ["  (none)"]));
  } else if (rt.logError) {
    lines.push("", `no log lines: ${rt.logError}`);
  }
  return lines.join("\n");
}
