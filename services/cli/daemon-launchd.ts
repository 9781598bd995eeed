/**
 * LurkBot as a launchd LaunchAgent on macOS (`~/Library/LaunchAgents/bot.lurk.gateway.plist`,
 * label `bot.lurk.gateway`, seeds 001 §7.4), loaded into the user's GUI domain with
 * `launchctl bootstrap gui/<uid>` and removed with `launchctl bootout`. It runs `lurkbot start`
 * in the foreground; KeepAlive restarts it only after a failure (the launcher exits 0 when
 * stopped with SIGTERM); stdout and stderr go to $LURKBOT_HOME/logs/launchd.{out,err}.log.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CliError } from "./errors.js";
import { failure, type CommandResult } from "./daemon-exec.js";
import { userHome, type GatewayService, type ServiceContext, type ServiceRuntime, type ServiceSpec } from "./daemon-service.js";

export const LAUNCHD_LABEL = "bot.lurk.gateway";

const xml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const str = (s: string) => `<string>${xml(s)}</string>`;

export function launchdPlist(spec: ServiceSpec): string {
  const env: Array<[string, string]> = [["LURKBOT_HOME", spec.home], ["PATH", spec.path], ...(spec.natsServerBin ? [["LURKBOT_NATS_SERVER_BIN", spec.natsServerBin] as [string, string]] : [])];
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    "<!-- LurkBot: `lurkbot start` in the foreground. Written by `lurkbot daemon install`; no secrets here",
    "     (the launcher reads them from $LURKBOT_HOME/credentials/). -->",
    '<plist version="1.0">',
    "<dict>",
    `  <key>Label</key>${str(LAUNCHD_LABEL)}`,
    "  <key>ProgramArguments</key>",
    "  <array>",
    `    ${str(spec.node)}`,
    `    ${str(spec.main)}`,
    `    ${str("start")}`,
    "  </array>",
    `  <key>WorkingDirectory</key>${str(spec.repo)}`,
    "  <key>EnvironmentVariables</key>",
    "  <dict>",
    ...env.map(([k, v]) => `    <key>${xml(k)}</key>${str(v)}`),
    "  </dict>",
    "  <key>RunAtLoad</key><true/>",
    "  <key>KeepAlive</key>",
    "  <dict>",
    "    <key>SuccessfulExit</key><false/>",
    "  </dict>",
    "  <key>ThrottleInterval</key><integer>5</integer>",
    "  <key>ExitTimeOut</key><integer>40</integer>",
    `  <key>StandardOutPath</key>${str(join(spec.logsDir, "launchd.out.log"))}`,
    `  <key>StandardErrorPath</key>${str(join(spec.logsDir, "launchd.err.log"))}`,
    "</dict>",
    "</plist>",
    "",
  ].join("\n");
}

export function launchAgentsDir(env: Record<string, string | undefined>): string {
  return env.LURKBOT_DAEMON_UNIT_DIR || join(userHome(env), "Library", "LaunchAgents");
}

export class LaunchdService implements GatewayService {
  readonly kind = "launchd";
  readonly label = LAUNCHD_LABEL;
  readonly path: string;
  private readonly domain: string;

  constructor(private readonly ctx: ServiceContext, uid = process.getuid?.() ?? 501) {
    this.path = join(launchAgentsDir(ctx.env), `${LAUNCHD_LABEL}.plist`);
    this.domain = `gui/${uid}`;
  }

  private get target(): string {
    return `${this.domain}/${LAUNCHD_LABEL}`;
  }

  render(): string {
    return launchdPlist(this.ctx.spec);
  }

  isInstalled(): boolean {
    return existsSync(this.path);
  }

  private launchctl(...args: string[]): Promise<CommandResult> {
    return this.ctx.run.run("launchctl", args);
  }

  private async must(args: string[], what: string): Promise<void> {
    const r = await this.launchctl(...args);
    if (r.code !== 0) throw new CliError(`${what} failed (${this.ctx.run.show("launchctl", args)}: ${failure(r)}). See ${join(this.ctx.spec.logsDir, "launchd.err.log")}.`);
  }

  private requireInstalled(): void {
    if (!this.isInstalled() && !this.ctx.run.dryRun) throw new CliError(`the service is not installed (no ${this.path}): run \`lurkbot daemon install\` first.`);
  }

  async install(): Promise<void> {
    const plist = this.render();
    if (this.ctx.run.dryRun) this.ctx.say(`would write ${this.path}:\n${plist}`);
    else {
      mkdirSync(join(this.path, ".."), { recursive: true });
      mkdirSync(this.ctx.spec.logsDir, { recursive: true, mode: 0o700 });
      const before = existsSync(this.path) ? readFileSync(this.path, "utf8") : null;
      writeFileSync(this.path, plist, { mode: 0o644 });
      this.ctx.say(`${before === null ? "wrote" : before === plist ? "unchanged:" : "updated"} ${this.path}`);
    }
    // an agent loaded before (an earlier install) is unloaded first: bootstrap refuses a loaded label
    await this.launchctl("bootout", this.target);
    await this.must(["bootstrap", this.domain, this.path], "loading the LaunchAgent");
    await this.must(["enable", this.target], "enabling the LaunchAgent");
    if (!this.ctx.run.dryRun) this.ctx.say("a LaunchAgent runs while you are logged in (and starts at your login)");
  }

  async uninstall(): Promise<void> {
    if (!this.isInstalled() && !this.ctx.run.dryRun) {
      this.ctx.say(`nothing to uninstall: no ${this.path}`);
      return;
    }
    const r = await this.launchctl("bootout", this.target);
    if (r.code !== 0) this.ctx.warn(`launchctl bootout ${this.target}: ${failure(r)} (removing the plist anyway)`);
    if (this.ctx.run.dryRun) this.ctx.say(`would remove ${this.path}`);
    else {
      rmSync(this.path, { force: true });
      this.ctx.say(`stopped, unloaded and removed ${this.path}`);
    }
  }

  async start(): Promise<void> {
    this.requireInstalled();
    await this.must(["kickstart", this.target], "starting the LaunchAgent");
  }

  async stop(): Promise<void> {
    this.requireInstalled();
    // SIGTERM: the launcher stops everything and exits 0, which KeepAlive leaves stopped
    await this.must(["kill", "SIGTERM", this.target], "stopping the LaunchAgent");
  }

  async restart(): Promise<void> {
    this.requireInstalled();
    await this.must(["kickstart", "-k", this.target], "restarting the LaunchAgent");
  }

  async runtime(): Promise<ServiceRuntime> {
    const r = await this.launchctl("print", this.target);
    const rt: ServiceRuntime = r.code === 0 ? parseLaunchctlPrint(r.stdout) : { status: this.isInstalled() ? "stopped" : "not installed", state: `not loaded (${failure(r)})` };
    const errLog = join(this.ctx.spec.logsDir, "launchd.err.log");
    try {
      const lines = readFileSync(errLog, "utf8").split("\n").filter((l) => l.trim() !== "");
      rt.log = { source: errLog, lines: lines.slice(-20) };
    } catch (err) {
      rt.logError = `${errLog}: ${(err as Error).message}`;
    }
    return rt;
  }
}

/** The fields of `launchctl print gui/<uid>/<label>` that status shows. */
export function parseLaunchctlPrint(text: string): ServiceRuntime {
  const field = (name: string) => new RegExp(`^\\s*${name} = (.+)$`, "m").exec(text)?.[1]?.trim();
  const state = field("state") ?? "unknown";
  const pid = Number(field("pid"));
  const exit = Number(field("last exit code"));
  const runs = Number(field("runs"));
  return {
    status: state === "running" ? "running" : state === "unknown" ? "unknown" : "stopped",
    state,
    ...(Number.isInteger(pid) && pid > 0 ? { pid } : {}),
    ...(Number.isInteger(exit) ? { lastExitStatus: exit } : {}),
    ...(Number.isInteger(runs) && runs > 0 ? { restarts: runs - 1 } : {}),
  };
}
