/**
 * `lurkbot hooks list|info NAME|enable NAME|disable NAME|reload [--agent ID] [--json]`, and
 * `install SOURCE|uninstall NAME|update [NAME|--all]` (hooks-install.ts): the hooks the
 * hooks actor would run, read with the same discovery code (shared/runtime/hooks/discovery.ts)
 * on this host, no bus needed; enable/disable set `hooks.entries.<name>.enabled` in config.json
 * (validated and written as `lurkbot config set` writes it, config-cmd-file.ts), which the running
 * actor picks up by itself. `reload` asks the running actor (`lurk.hooks.reload`,
 * as the `cli` user) to discover again now.
 */
import { agentIdSchema } from "../../shared/contract/index.js";
import { loadConfig, type Env, type LurkConfig } from "../../shared/runtime/config.js";
import { discoverHooks, type HookDiscovery, type HookInfo } from "../../shared/runtime/hooks/discovery.js";
import type { ParsedCommand } from "./args.js";
import { withCliBus } from "./bus.js";
import { CliError, EXIT, UsageError } from "./errors.js";
import { table } from "./format.js";
import { getAt, readConfigFile, setAt, writeConfigFile } from "./config-cmd-file.js";
import { describe, installCommand, key, uninstallCommand, updateCommand } from "./hooks-install.js";

export interface HooksIo {
  out(line: string): void;
}

const SUBCOMMANDS = ["list", "info", "enable", "disable", "reload", "install", "uninstall", "update"] as const;
type Sub = (typeof SUBCOMMANDS)[number];
/** the options only some subcommands take */
const ONLY_FOR: Record<string, Sub[]> = { link: ["install"], force: ["install"], all: ["update"], agent: ["list", "info", "enable", "disable"] };

export function checkHooksArgs(p: ParsedCommand): { sub: Sub; name?: string; agentId?: string } {
  const [sub = "list", name] = p.args;
  if (!(SUBCOMMANDS as readonly string[]).includes(sub)) throw new UsageError(`unknown subcommand "${sub}": lurkbot hooks ${SUBCOMMANDS.join("|")}.`, "hooks");
  for (const [option, subs] of Object.entries(ONLY_FOR)) {
    if (p.options[option] !== undefined && !(subs as string[]).includes(sub)) throw new UsageError(`--${option} does not apply to \`lurkbot hooks ${sub}\` (only to ${subs.map((s) => `hooks ${s}`).join(", ")}).`, "hooks");
  }
  if (sub === "list" && name !== undefined) throw new UsageError(`\`lurkbot hooks list\` takes no argument; unexpected "${name}" (for one hook: lurkbot hooks info ${name}).`, "hooks");
  if (sub === "reload" && name !== undefined) throw new UsageError(`\`lurkbot hooks reload\` takes no argument; unexpected "${name}".`, "hooks");
  if (sub === "install" && name === undefined) throw new UsageError("`lurkbot hooks install` needs a SOURCE: a hook folder, a hook pack (folder, .tgz, .tar.gz or .zip) or an npm package (name, name@version, @scope/name).", "hooks");
  if (sub === "update" && (name === undefined) === (p.options.all !== true)) throw new UsageError(name === undefined ? "`lurkbot hooks update` needs the hook's name, or --all for every installed hook." : "`lurkbot hooks update` takes a name or --all, not both.", "hooks");
  if (!["list", "reload", "update"].includes(sub) && name === undefined) throw new UsageError(`\`lurkbot hooks ${sub}\` needs the hook's name (see \`npx lurkbot hooks list\`).`, "hooks");
  const agent = p.options.agent;
  if (agent !== undefined && !agentIdSchema.safeParse(agent).success) {
    throw new UsageError(`--agent must be an agent id (lower-case letters, digits, '-' or '_'), not "${String(agent)}".`, "hooks");
  }
  return { sub: sub as Sub, ...(name !== undefined ? { name } : {}), ...(typeof agent === "string" ? { agentId: agent } : {}) };
}

export async function cmdHooks(p: ParsedCommand, env: Env, io: HooksIo): Promise<number> {
  const { sub, name, agentId } = checkHooksArgs(p);
  const json = p.options.json === true;
  if (sub === "install") return installCommand(name!, { link: p.options.link === true, force: p.options.force === true, json }, env, io);
  if (sub === "uninstall") return uninstallCommand(name!, json, env, io);
  if (sub === "update") return updateCommand(name, json, env, io);
  const cfg = loadConfig(env);
  if (sub === "reload") return reload(cfg, env, json, io);
  const found = await discover(cfg, env, agentId);
  if (sub === "list") {
    if (p.options.json) io.out(JSON.stringify({ agentId: found.agentId, hooksEnabled: cfg.hooks.enabled, dirs: found.dirs, hooks: found.hooks.map((h) => withInstall(h, cfg)), problems: found.problems }, null, 2));
    else io.out(formatList(found, cfg.hooks.enabled, cfg.hooks.installs).trimEnd());
    return EXIT.ok;
  }
  const hook = found.hooks.find((h) => h.name === name);
  if (sub === "info") {
    if (!hook) throw notFound(name!, found);
    io.out(p.options.json ? JSON.stringify(withInstall(hook, cfg), null, 2) : formatInfo(hook, cfg.hooks.enabled, hook.source === "user" ? cfg.hooks.installs[hook.name] : undefined));
    return EXIT.ok;
  }
  if (!hook) throw notFound(name!, found);
  const enable = sub === "enable";
  const { path, changed } = setHookEnabled(env, hook.name, enable);
  io.out(`${changed ? (enable ? "enabled" : "disabled") : `already ${enable ? "enabled" : "disabled"}`}: ${hook.name} (${hook.source} hook, ${hook.dir}); hooks.entries.${hook.name}.enabled = ${enable} in ${path}`);
  if (enable && hook.missing.length) io.out(`note: it will not run until its requirements are met: ${hook.missing.join("; ")}`);
  if (enable && !cfg.hooks.enabled) io.out("note: hooks.enabled is false in config.json: no hook runs until it is true");
  if (changed) io.out("A running hooks actor applies it within a second (it watches config.json; `npx lurkbot hooks reload` applies it now).");
  return EXIT.ok;
}

/** Sets `hooks.entries.<name>.enabled`, keeping everything else; `changed` is false when config.json already said so. */
function setHookEnabled(env: Env, name: string, enabled: boolean): { path: string; changed: boolean } {
  const file = readConfigFile(env);
  const at = key("hooks", "entries", name, "enabled");
  const now = getAt(file.raw, at);
  if (now.found && now.value === enabled) return { path: file.path, changed: false };
  writeConfigFile(file, setAt(file.raw, at, enabled), env, `hooks.entries.${name}.enabled = ${enabled}`);
  return { path: file.path, changed: true };
}

async function reload(cfg: LurkConfig, env: Env, json: boolean, io: HooksIo): Promise<number> {
  const r = await withCliBus(cfg, env, (bus) => bus.call("hooks", "reload", {}));
  if (json) {
    io.out(JSON.stringify(r, null, 2));
    return EXIT.ok;
  }
  io.out(`${r.changed ? "reloaded" : "reloaded, nothing changed"}: ${r.running} hook(s) run${r.hooksEnabled ? "" : " (hooks.enabled is false)"}; ${r.problems} folder(s) cannot be used${r.problems ? " (see `npx lurkbot hooks list`)" : ""}`);
  for (const a of r.agents) io.out(`  ${a.agentId}: ${a.running.length ? a.running.join(", ") : "none"}`);
  if (r.configError) io.out(`note: config.json's hooks section was not applied: ${r.configError}`);
  return EXIT.ok;
}

async function discover(cfg: LurkConfig, env: Env, agentId: string | undefined): Promise<HookDiscovery> {
  try {
    return await discoverHooks(cfg, { env, ...(agentId ? { agentId } : {}) });
  } catch (err) {
    throw new UsageError(`--agent: ${(err as Error).message}.`, "hooks");
  }
}

function notFound(name: string, found: HookDiscovery): CliError {
  const broken = found.problems.filter((p) => p.dir.endsWith(`/${name}`));
  if (broken.length) return new CliError(`the hook "${name}" cannot be used: ${broken.map((b) => `${b.dir}: ${b.reason}`).join("; ")}. Fix its folder and try again.`);
  const names = found.hooks.map((h) => h.name);
  return new CliError(`no hook named "${name}"${names.length ? ` (found: ${names.join(", ")})` : ""}. Hooks live in ${found.dirs.map((d) => d.dir).join(", ")}; see \`npx lurkbot hooks list\`.`);
}

type Installs = LurkConfig["hooks"]["installs"];

/** a user hook with where `lurkbot hooks install` got it (`install`), for --json */
function withInstall(h: HookInfo, cfg: LurkConfig): HookInfo & { install?: Installs[string] } {
  const install = h.source === "user" ? cfg.hooks.installs[h.name] : undefined;
  return install ? { ...h, install } : h;
}

/** SOURCE column: user hooks say how they were installed */
const sourceLabel = (h: HookInfo, installs: Installs) => {
  const i = h.source === "user" ? installs[h.name] : undefined;
  return i ? `user (${i.source}${i.link ? ", link" : ""})` : h.source;
};

const state = (h: HookInfo, hooksOn: boolean) => (!hooksOn ? "no (hooks.enabled is false)" : !h.enabled ? "no (disabled)" : h.missing.length ? "no (requirements)" : "yes");

export function formatList(found: HookDiscovery, hooksOn: boolean, installs: Installs = {}): string {
  const lines: string[] = [];
  if (!hooksOn) lines.push("hooks.enabled is false: no hook runs.", "");
  if (found.hooks.length === 0) lines.push(`No hooks found for agent ${found.agentId} (looked in ${found.dirs.map((d) => d.dir).join(", ")}).`);
  else {
    lines.push(table(["NAME", "SOURCE", "EVENTS", "ENABLED", "RUNS", "REQUIREMENTS"], found.hooks.map((h) => [
      `${h.emoji ? `${h.emoji} ` : ""}${h.name}`, sourceLabel(h, installs), h.events.join(","), h.enabled ? `yes${h.enabledBy === "config" ? "" : " (default)"}` : `no${h.enabledBy === "config" ? "" : " (default)"}`,
      state(h, hooksOn), h.missing.length ? h.missing.join("; ") : "met",
    ])).trimEnd());
  }
  if (found.problems.length) {
    lines.push("", "Folders that cannot be used:");
    for (const p of found.problems) lines.push(`  ${p.dir} (${p.source}): ${p.reason}`);
  }
  return lines.join("\n");
}

export function formatInfo(h: HookInfo, hooksOn: boolean, install?: Installs[string]): string {
  return [
    `${h.emoji ? `${h.emoji} ` : ""}${h.name}${h.description ? ` — ${h.description}` : ""}`,
    `  source:       ${h.source}${h.shadows.length ? ` (hides the ${h.shadows.join(", ")} one)` : ""}`,
    ...(install ? [`  installed:    from ${describe(install)}${install.pack ? ` (package ${install.pack}${install.version ? `@${install.version}` : ""})` : install.version ? ` (${install.version})` : ""}${install.link ? ", linked" : ""}, ${install.installedAt} (npx lurkbot hooks update ${h.name})`] : []),
    `  folder:       ${h.dir}`,
    `  handler:      ${h.handler}`,
    `  events:       ${h.events.join(", ")}`,
    ...(h.context.length ? [`  context:      ${h.context.join(", ")} (given to this hook only)`] : []),
    `  enabled:      ${h.enabled ? "yes" : "no"} (${h.enabledBy === "config" ? `hooks.entries.${h.name}.enabled` : `default for ${h.source} hooks`})`,
    `  requirements: ${h.missing.length ? `not met: ${h.missing.join("; ")}` : "met"}${formatRequires(h)}`,
    `  runs:         ${state(h, hooksOn)}`,
  ].join("\n");
}

function formatRequires(h: HookInfo): string {
  const r = h.requires;
  const parts = [
    r.bins.length ? `bins ${r.bins.join(", ")}` : "", r.anyBins.length ? `one of ${r.anyBins.join(", ")}` : "",
    r.env.length ? `env ${r.env.join(", ")}` : "", r.os.length ? `os ${r.os.join(", ")}` : "",
  ].filter(Boolean);
  return parts.length ? ` (${parts.join("; ")})` : "";
}
