/**
 * LurkBot as a systemd USER service (`~/.config/systemd/user/lurkbot.service`, no root): the
 * unit runs `lurkbot start` in the foreground; `enable --now` starts it and starts it again at
 * boot once lingering is on (`loginctl enable-linger $USER`; without it the user's manager, and
 * the service, stop at logout). KillMode=mixed: SIGTERM goes to the launcher only, which stops
 * the actors, then nats-server; what is left after TimeoutStopSec is killed.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CliError, EXIT } from "./errors.js";
import { failure, type CommandResult } from "./daemon-exec.js";
import { userHome, userName, type GatewayService, type ServiceContext, type ServiceRuntime, type ServiceSpec } from "./daemon-service.js";

export const SYSTEMD_UNIT = "lurkbot.service";

/** A value in a unit file: quoted, with `%` (specifiers) doubled and, for ExecStart, `$` too. */
function quote(value: string, exec = false): string {
  let v = value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/%/g, "%%");
  if (exec) v = v.replace(/\$/g, "$$$$");
  return `"${v}"`;
}

export function systemdUnit(spec: ServiceSpec): string {
  return [
    "# LurkBot as a systemd user service: `lurkbot start` in the foreground (nats-server and every actor).",
    "# Written by `lurkbot daemon install`, removed by `lurkbot daemon uninstall`. No secrets here: the",
    "# launcher reads them from $LURKBOT_HOME/credentials/ (NATS passwords, stored keys and tokens).",
    "[Unit]",
    "Description=LurkBot (nats-server and every actor)",
    `Documentation=file://${spec.repo.replace(/%/g, "%%")}/deploy/USER_SERVICE.md`,
    "After=network-online.target",
    "Wants=network-online.target",
    "",
    "[Service]",
    "Type=simple",
    `WorkingDirectory=${quote(spec.repo)}`,
    `Environment=${quote(`LURKBOT_HOME=${spec.home}`)}`,
    `Environment=${quote(`PATH=${spec.path}`)}`,
    ...(spec.natsServerBin ? [`Environment=${quote(`LURKBOT_NATS_SERVER_BIN=${spec.natsServerBin}`)}`] : []),
    `ExecStart=${quote(spec.node, true)} ${quote(spec.main, true)} start`,
    "Restart=on-failure",
    "RestartSec=5",
    "# exit 78: the configuration or the credentials are invalid; restarting will not fix that",
    "RestartPreventExitStatus=78",
    "# SIGTERM to the launcher only: it stops the actors (10 s each at most), then nats-server",
    "KillMode=mixed",
    "KillSignal=SIGTERM",
    "TimeoutStopSec=40",
    "",
    "[Install]",
    "WantedBy=default.target",
    "",
  ].join("\n");
}

/** The user units' directory: $XDG_CONFIG_HOME/systemd/user, else ~/.config/systemd/user. */
export function systemdUnitDir(env: Record<string, string | undefined>): string {
  return env.LURKBOT_DAEMON_UNIT_DIR || join(env.XDG_CONFIG_HOME || join(userHome(env), ".config"), "systemd", "user");
}

export const NO_SYSTEMD = "systemctl --user is not available here: run `npx lurkbot start` under your own supervisor or use `lurkbot setup --systemd DIR` (system units, installed as root)";

export class SystemdService implements GatewayService {
  readonly kind = "systemd";
  readonly label = SYSTEMD_UNIT;
  readonly path: string;

  constructor(private readonly ctx: ServiceContext) {
    this.path = join(systemdUnitDir(ctx.env), SYSTEMD_UNIT);
  }

  render(): string {
    return systemdUnit(this.ctx.spec);
  }

  isInstalled(): boolean {
    return existsSync(this.path);
  }

  private systemctl(...args: string[]): Promise<CommandResult> {
    return this.ctx.run.run("systemctl", ["--user", ...args]);
  }

  /** A failed command is an error naming it and what it said. */
  private async must(args: string[], what: string): Promise<CommandResult> {
    const r = await this.systemctl(...args);
    if (r.code !== 0) throw new CliError(`${what} failed (${this.ctx.run.show("systemctl", ["--user", ...args])}: ${failure(r)}). See \`journalctl --user -u lurkbot\`.`);
    return r;
  }

  /** The user's systemd instance answers; else the error an operator can act on. */
  private async probe(): Promise<void> {
    const r = await this.systemctl("show-environment");
    if (r.code !== 0) throw new CliError(`${NO_SYSTEMD}. (${this.ctx.run.show("systemctl", ["--user", "show-environment"])}: ${failure(r)})`, EXIT.failed);
  }

  private requireInstalled(): void {
    if (!this.isInstalled() && !this.ctx.run.dryRun) throw new CliError(`the service is not installed (no ${this.path}): run \`lurkbot daemon install\` first.`);
  }

  async install(): Promise<void> {
    await this.probe();
    const unit = this.render();
    const before = existsSync(this.path) ? readFileSync(this.path, "utf8") : null;
    if (this.ctx.run.dryRun) this.ctx.say(`would write ${this.path}:\n${unit}`);
    else {
      mkdirSync(join(this.path, ".."), { recursive: true, mode: 0o755 });
      writeFileSync(this.path, unit, { mode: 0o644 });
      this.ctx.say(`${before === null ? "wrote" : before === unit ? "unchanged:" : "updated"} ${this.path}`);
    }
    await this.must(["daemon-reload"], "reloading the user units");
    await this.must(["enable", "--now", SYSTEMD_UNIT], "enabling and starting lurkbot.service");
    // a changed unit of a running service takes effect only at a restart
    if (before !== null && before !== unit) await this.must(["restart", SYSTEMD_UNIT], "restarting lurkbot.service with the new unit");
    await this.enableLinger();
  }

  /** Lingering keeps the user's manager (and the service) running without a login session and starts it at boot. */
  private async enableLinger(): Promise<void> {
    const user = userName(this.ctx.env);
    const r = await this.ctx.run.run("loginctl", ["enable-linger", user]);
    if (r.code === 0) {
      if (!this.ctx.run.dryRun) this.ctx.say(`lingering on for ${user}: the service runs without a login and starts at boot`);
      return;
    }
    this.ctx.warn(`could not enable lingering for ${user} (loginctl enable-linger ${user}: ${failure(r)}): the service stops when you log out and starts again at your next login. Ask an administrator to run \`sudo loginctl enable-linger ${user}\`.`);
  }

  async uninstall(): Promise<void> {
    if (!this.isInstalled() && !this.ctx.run.dryRun) {
      this.ctx.say(`nothing to uninstall: no ${this.path}`);
      return;
    }
    await this.probe();
    const r = await this.systemctl("disable", "--now", SYSTEMD_UNIT);
    if (r.code !== 0) this.ctx.warn(`systemctl --user disable --now ${SYSTEMD_UNIT}: ${failure(r)} (removing the unit anyway)`);
    if (this.ctx.run.dryRun) this.ctx.say(`would remove ${this.path}`);
    else {
      rmSync(this.path, { force: true });
      this.ctx.say(`stopped, disabled and removed ${this.path}`);
    }
    await this.must(["daemon-reload"], "reloading the user units");
    if (!this.ctx.run.dryRun) this.ctx.say("lingering is left as it is (`loginctl disable-linger` turns it off if nothing else needs it)");
  }

  async start(): Promise<void> {
    this.requireInstalled();
    await this.probe();
    await this.must(["start", SYSTEMD_UNIT], "starting lurkbot.service");
  }

  async stop(): Promise<void> {
    this.requireInstalled();
    await this.probe();
    await this.must(["stop", SYSTEMD_UNIT], "stopping lurkbot.service");
  }

  async restart(): Promise<void> {
    this.requireInstalled();
    await this.probe();
    await this.must(["restart", SYSTEMD_UNIT], "restarting lurkbot.service");
  }

  async runtime(): Promise<ServiceRuntime> {
    const props = await this.systemctl("show", SYSTEMD_UNIT, "--property=LoadState,ActiveState,SubState,MainPID,ActiveEnterTimestamp,ExecMainStatus,NRestarts,UnitFileState");
    if (props.code !== 0) {
      return { status: this.isInstalled() ? "unknown" : "not installed", state: `${NO_SYSTEMD} (${failure(props)})` };
    }
    const rt = parseSystemdShow(props.stdout);
    if (!this.isInstalled() && rt.status !== "running") rt.status = "not installed";
    const journal = await this.ctx.run.run("journalctl", ["--user", "-u", "lurkbot", "-n", "20", "--no-pager", "-o", "short-iso"], 10_000);
    if (journal.code === 0) rt.log = { source: "journalctl --user -u lurkbot -n 20", lines: journal.stdout.split("\n").filter((l) => l.trim() !== "") };
    else rt.logError = `journalctl --user -u lurkbot: ${failure(journal)}`;
    return rt;
  }
}

/** `systemctl show --property=…` output (KEY=value lines) as a ServiceRuntime. */
export function parseSystemdShow(text: string): ServiceRuntime {
  const p: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) p[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  const pid = Number(p.MainPID);
  const active = p.ActiveState ?? "unknown";
  // "Thu 2026-11-27 18:00:00 UTC" (the manager's time zone; read as a time when it is UTC), or "@<unix seconds>"
  const stamp = p.ActiveEnterTimestamp ?? "";
  const utc = /(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d) UTC$/.exec(stamp);
  const since = stamp.startsWith("@") ? Number(stamp.slice(1)) * 1000 : utc ? Date.parse(`${utc[1]}T${utc[2]}Z`) : NaN;
  const rt: ServiceRuntime = {
    status: p.LoadState === "not-found" ? "not installed" : active === "active" || active === "reloading" ? "running" : active === "unknown" ? "unknown" : "stopped",
    state: `${active}${p.SubState ? ` (${p.SubState})` : ""}`,
    ...(p.UnitFileState ? { enabled: p.UnitFileState } : {}),
    ...(Number.isInteger(pid) && pid > 0 ? { pid } : {}),
    ...(Number.isFinite(since) && since > 0 ? { since } : stamp && stamp !== "n/a" ? { sinceText: stamp } : {}),
    ...(p.NRestarts !== undefined && Number.isInteger(Number(p.NRestarts)) && p.NRestarts !== "" ? { restarts: Number(p.NRestarts) } : {}),
    ...(p.ExecMainStatus !== undefined && p.ExecMainStatus !== "" && Number.isInteger(Number(p.ExecMainStatus)) ? { lastExitStatus: Number(p.ExecMainStatus) } : {}),
  };
  return rt;
}
