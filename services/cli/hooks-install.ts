/**
 * `lurkbot hooks install SOURCE [--link] [--force]`, `hooks uninstall NAME`, `hooks update [NAME|--all]`.
 * An install is all or nothing: the source is fetched, unpacked and every hook in it validated
 * (hooks-source.ts) in a staging folder next to the target (`$LURKBOT_HOME/hooks/.install-*`,
 * which discovery skips), then each hook is renamed into `$LURKBOT_HOME/hooks/<name>/` (a hook
 * there is refused unless --force, then moved aside and removed once the new one is in) and
 * `hooks.installs.<name>` is written to config.json (validated and atomic, config-cmd-file.ts);
 * anything failing on the way puts back what was there. A staging folder is named with the CLI's
 * pid; one whose process is gone (killed midway: Ctrl-C during `npm install`) is removed by the
 * next install, uninstall or update, after putting back a hook it had moved aside for --force
 * whose new copy never arrived. `--link` refuses a folder in $LURKBOT_HOME/hooks or in an agent's
 * workspace (the agent could then rewrite a hook that is on). Installed hooks follow the rule of user
 * hooks: on unless `hooks.entries.<name>.enabled` is false. Afterwards the running hooks actor is
 * asked to reload (`lurk.hooks.reload`); it would also see the change by itself (it watches the
 * folder), and the output says when no actor answers.
 */
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, renameSync, rmSync, statSync, symlinkSync } from "node:fs";
import { basename, join, sep } from "node:path";
import { LurkError } from "../../shared/contract/index.js";
import { agentWorkspace, loadConfig, type Env, type LurkConfig } from "../../shared/runtime/config.js";
import { HOOK_NAME_RE, type HookInstall } from "../../shared/runtime/config-hooks.js";
import { discoverHooks, type HookInfo } from "../../shared/runtime/hooks/discovery.js";
import { withCliBus } from "./bus.js";
import { getAt, readConfigFile, setAt, unsetAt, writeConfigFile, type Raw } from "./config-cmd-file.js";
import type { Segment } from "./config-cmd-path.js";
import { CliError, EXIT, toCliError, UsageError } from "./errors.js";
import { bundledNames, classifySource, findHooks, npmPack, stageHook, unpack, type Source } from "./hooks-source.js";

export interface InstallIo {
  out(line: string): void;
}

interface Installed {
  name: string;
  dir: string;
  replaced: boolean;
  install: HookInstall;
}

/** a fetched and unpacked source, ready to install from */
interface Prepared {
  source: Source;
  root: string;
  label: string;
  rootName?: string;
  npm?: { name: string; version: string; integrity?: string };
}

/** the config path of `keys` (`key("hooks", "entries", name)`) */
export const key = (...keys: string[]): Segment[] => keys.map((k) => ({ kind: "key", key: k }));
const exists = (path: string) => {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
};

export async function installCommand(sourceArg: string, opts: { link: boolean; force: boolean; json: boolean }, env: Env, io: InstallIo): Promise<number> {
  const cfg = loadConfig(env);
  const source = classifySource(sourceArg, process.cwd());
  if (opts.link && source.kind !== "path") throw new UsageError(`--link links a local folder; ${source.kind === "npm" ? `"${sourceArg}" is an npm package` : `${source.path} is an archive`}: install it without --link.`, "hooks");
  if (opts.link && source.kind === "path") checkLinkable(source.path, cfg);
  const installed = await withStaging(cfg, async (staging) => installFrom(await prepare(source, staging), staging, cfg, env, { link: opts.link, force: opts.force }));
  await report(cfg, env, installed, opts.json, io, "installed");
  return EXIT.ok;
}

export async function uninstallCommand(name: string, json: boolean, env: Env, io: InstallIo): Promise<number> {
  if (!HOOK_NAME_RE.test(name)) throw new UsageError(`"${name}" is not a hook name (letters, digits, '.', '_', '-').`, "hooks");
  const cfg = loadConfig(env);
  const hooksDir = join(cfg.home, "hooks");
  const target = join(hooksDir, name);
  const record = cfg.hooks.installs[name];
  if (!exists(target) && !record) {
    if (bundledNames().has(name)) throw new CliError(`"${name}" is a bundled hook: it ships with LurkBot and cannot be uninstalled. Turn it off: npx lurkbot hooks disable ${name}`);
    const found = await discoverHooks(cfg, { env }).catch(() => undefined);
    const ws = found?.hooks.find((h) => h.name === name && h.source === "workspace");
    if (ws) throw new CliError(`"${name}" is a workspace hook (${ws.dir}), not an installed one: delete its folder to remove it, or turn it off: npx lurkbot hooks disable ${name}`);
    throw new CliError(`no installed hook named "${name}" (nothing in ${hooksDir}, no hooks.installs.${name}); see npx lurkbot hooks list.`);
  }
  const link = exists(target) && lstatSync(target).isSymbolicLink();
  const removed = await withStaging(cfg, async (staging) => {
    const aside = join(staging, `removed-${name}`);
    if (exists(target)) renameSync(target, aside);
    try {
      const file = readConfigFile(env);
      let next: Raw = file.raw;
      const dropped: string[] = [];
      for (const section of ["installs", "entries"]) {
        if (getAt(next, key("hooks", section, name)).found) {
          next = unsetAt(next, key("hooks", section, name));
          dropped.push(`hooks.${section}.${name}`);
        }
      }
      if (dropped.length) writeConfigFile(file, next, env, `removing ${dropped.join(" and ")}`);
      return { path: file.path, dropped };
    } catch (err) {
      if (exists(aside)) renameSync(aside, target);
      throw err;
    }
  });
  const actor = await tellActor(cfg, env);
  if (json) {
    io.out(JSON.stringify({ uninstalled: name, dir: target, link, configRemoved: removed.dropped, actor }, null, 2));
    return EXIT.ok;
  }
  io.out(`uninstalled ${name}: removed ${target}${link ? " (a link: the folder it pointed to is kept)" : ""}${removed.dropped.length ? `; removed ${removed.dropped.join(" and ")} from ${removed.path}` : ""}`);
  io.out(actor.text);
  return EXIT.ok;
}

export async function updateCommand(name: string | undefined, json: boolean, env: Env, io: InstallIo): Promise<number> {
  const cfg = loadConfig(env);
  const installs = cfg.hooks.installs;
  if (name !== undefined && !installs[name]) {
    throw new CliError(`"${name}" was not installed with \`lurkbot hooks install\` (config.json has no hooks.installs.${name}), so there is nothing to update it from. Installed: ${Object.keys(installs).join(", ") || "none"}.`);
  }
  const names = name !== undefined ? [name] : Object.keys(installs);
  if (names.length === 0) {
    io.out(json ? JSON.stringify({ updated: [], upToDate: [], failed: [] }, null, 2) : "No hooks were installed with `lurkbot hooks install`: nothing to update.");
    return EXIT.ok;
  }
  // one source once: a pack's hooks are updated together
  const groups = new Map<string, { install: HookInstall; names: string[] }>();
  for (const [n, i] of Object.entries(installs)) {
    const k = `${i.source}\0${i.spec ?? i.path}\0${i.link === true}`;
    if (!groups.has(k)) groups.set(k, { install: i, names: [] });
    groups.get(k)!.names.push(n);
  }
  const wanted = [...groups.values()].filter((g) => g.names.some((n) => names.includes(n)));
  const updated: Installed[] = [];
  const upToDate: Array<{ names: string[]; why: string }> = [];
  const failed: Array<{ names: string[]; error: string }> = [];
  for (const g of wanted) {
    const i = g.install;
    const what = i.source === "npm" ? `npm ${i.spec}` : i.path!;
    if (i.link) {
      upToDate.push({ names: g.names, why: `linked to ${i.path}: it follows that folder, nothing to update` });
      continue;
    }
    try {
      const source: Source = i.source === "npm" ? { kind: "npm", spec: i.spec! } : { kind: i.source, path: i.path! };
      if (source.kind !== "npm" && !exists(source.path)) throw new CliError(`${source.path} is gone: install the hook again from where it is now (npx lurkbot hooks install PATH --force)`);
      const result = await withStaging(cfg, async (staging) => {
        const prep = await prepare(source, staging);
        if (prep.npm && i.integrity && prep.npm.integrity === i.integrity) return { same: `${prep.npm.name}@${prep.npm.version}` };
        return { done: installFrom(prep, staging, cfg, env, { link: false, force: false, replaceable: new Set(g.names) }) };
      });
      if ("same" in result) upToDate.push({ names: g.names, why: `${what} is still ${result.same}` });
      else {
        updated.push(...result.done!);
        const gone = g.names.filter((n) => !result.done!.some((d) => d.name === n));
        if (gone.length) upToDate.push({ names: gone, why: `no longer in ${what}: left installed (remove: npx lurkbot hooks uninstall ${gone[0]})` });
      }
    } catch (err) {
      failed.push({ names: g.names, error: toCliError(err).message });
    }
  }
  const before = Object.fromEntries(wanted.flatMap((g) => g.names.map((n) => [n, g.install.version])));
  if (json) {
    const actor = updated.length ? await tellActor(cfg, env) : undefined;
    io.out(JSON.stringify({ updated: updated.map((u) => ({ name: u.name, dir: u.dir, from: before[u.name], install: u.install })), upToDate, failed, ...(actor ? { actor } : {}) }, null, 2));
  } else {
    for (const u of updated) io.out(`updated ${u.name} from ${u.install.source === "npm" ? `npm ${u.install.spec}` : u.install.path}${before[u.name] || u.install.version ? ` (${before[u.name] ?? "?"} → ${u.install.version ?? "?"})` : ""}`);
    for (const s of upToDate) io.out(`up to date: ${s.names.join(", ")} (${s.why})`);
    for (const f of failed) io.out(`not updated: ${f.names.join(", ")}: ${f.error}`);
    if (updated.length) io.out((await tellActor(cfg, env)).text);
  }
  return failed.length ? EXIT.failed : EXIT.ok;
}

/**
 * `--link` makes the folder a user hook (on by default) that follows every edit there: not one in
 * $LURKBOT_HOME/hooks (uninstalling or replacing the link would remove it: --force on itself
 * deletes it) and not one an agent can write (its workspace: workspace hooks are off until enabled
 * for that reason). Copying it is allowed: that is a snapshot the user took.
 */
function checkLinkable(folder: string, cfg: LurkConfig): void {
  const real = realpathSync.native(folder);
  const inside = (dir: string) => {
    let top: string;
    try {
      top = realpathSync.native(dir);
    } catch {
      return false;
    }
    return real === top || real.startsWith(top.endsWith(sep) ? top : top + sep);
  };
  if (inside(join(cfg.home, "hooks"))) throw new UsageError(`--link: ${folder} is in ${join(cfg.home, "hooks")} already; a link there to it would take its place. Install it from elsewhere, or without --link.`, "hooks");
  for (const agent of cfg.agents) {
    const ws = agentWorkspace(cfg, agent);
    if (inside(ws)) throw new UsageError(`--link: ${folder} is in the workspace of agent ${agent.id} (${ws}), which the agent can write: linked, its edits would run as an installed hook, on by default. Install a copy (without --link), or move the folder out of the workspace.`, "hooks");
  }
}

const STAGING_PREFIX = ".install-";
const STALE_AFTER_MS = 86_400_000;

/** Runs `fn` with a fresh staging folder in $LURKBOT_HOME/hooks, removed afterwards whatever happens. */
async function withStaging<T>(cfg: LurkConfig, fn: (staging: string) => Promise<T>): Promise<T> {
  const hooksDir = join(cfg.home, "hooks");
  mkdirSync(hooksDir, { recursive: true, mode: 0o755 });
  removeStaleStaging(hooksDir);
  const staging = mkdtempSync(join(hooksDir, `${STAGING_PREFIX}${process.pid}-`));
  try {
    return await fn(staging);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * The staging folders of CLI processes that are gone (killed midway; their `finally` never ran):
 * a hook moved aside for --force (`replaced-<name>`) whose place is still empty goes back, then the
 * folder is removed. One of a live process, or younger than a day (an install still running in
 * another pid namespace sharing $LURKBOT_HOME), is left alone.
 */
function removeStaleStaging(hooksDir: string): void {
  let names: string[];
  try {
    names = readdirSync(hooksDir).filter((n) => n.startsWith(STAGING_PREFIX));
  } catch {
    return;
  }
  for (const n of names) {
    const staging = join(hooksDir, n);
    try {
      const pid = /^\.install-(\d+)-/.exec(n)?.[1];
      if (Date.now() - statSync(staging).mtimeMs < STALE_AFTER_MS || (pid !== undefined && alive(Number(pid)))) continue;
      for (const e of readdirSync(staging)) {
        const name = /^replaced-(.+)$/.exec(e)?.[1];
        if (name && HOOK_NAME_RE.test(name) && !exists(join(hooksDir, name))) renameSync(join(staging, e), join(hooksDir, name));
      }
      rmSync(staging, { recursive: true, force: true });
    } catch {
      // another CLI cleaning up at the same time, or not ours to remove: left for later
    }
  }
}

function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function prepare(source: Source, staging: string): Promise<Prepared> {
  if (source.kind !== "npm") {
    if (source.kind === "path") return { source, root: source.path, label: source.path, rootName: basename(source.path) };
    return { source, root: await unpack(source.path, join(staging, "src")), label: source.path };
  }
  const packed = npmPack(source.spec, join(staging, "npm"));
  const { tarball, ...npm } = packed;
  return { source, root: await unpack(tarball, join(staging, "src")), label: `npm ${source.spec} (${npm.name}@${npm.version})`, npm };
}

/** Validates, stages and moves in the hooks of `prep`, then records them in config.json; all or nothing. */
function installFrom(prep: Prepared, staging: string, cfg: LurkConfig, env: Env, opts: { link: boolean; force: boolean; replaceable?: ReadonlySet<string> }): Installed[] {
  const hooksDir = join(cfg.home, "hooks");
  const all = findHooks(prep.root, prep.label, prep.rootName);
  // an update installs again only the hooks it had installed (one uninstalled since stays out)
  const found = opts.replaceable ? { ...all, hooks: all.hooks.filter((h) => opts.replaceable!.has(h.name)) } : all;
  if (found.hooks.length === 0) return [];
  for (const h of found.hooks) {
    const target = join(hooksDir, h.name);
    if (exists(target) && !opts.force && !opts.replaceable?.has(h.name)) {
      throw new CliError(`a hook named "${h.name}" is already in ${target}: replace it with --force, or remove it first (npx lurkbot hooks uninstall ${h.name}). Nothing was installed.`);
    }
  }
  const out = join(staging, "out");
  mkdirSync(out);
  for (const h of found.hooks) {
    if (opts.link) symlinkSync(realpathSync.native(h.dir), join(out, h.name));
    else stageHook(h.dir, join(out, h.name), h.name, { fromFolder: prep.source.kind === "path", label: prep.label, ...(h.dir !== found.root && found.pkg ? { pack: found.pkg } : {}) });
  }
  const installedAt = new Date().toISOString();
  const version = prep.npm?.version ?? found.pkg?.version;
  const pack = prep.npm?.name ?? found.pkg?.name;
  const install: HookInstall = {
    source: prep.source.kind,
    ...(prep.source.kind === "npm" ? { spec: prep.source.spec } : { path: prep.source.path }),
    ...(pack ? { pack } : {}), ...(version ? { version } : {}), ...(prep.npm?.integrity ? { integrity: prep.npm.integrity } : {}),
    ...(opts.link ? { link: true } : {}), installedAt,
  };
  const file = readConfigFile(env);
  // moved in one by one; on any failure everything moved goes back
  const done: Array<{ name: string; target: string; aside?: string }> = [];
  try {
    for (const h of found.hooks) {
      const target = join(hooksDir, h.name);
      const step: (typeof done)[number] = { name: h.name, target };
      if (exists(target)) {
        step.aside = join(staging, `replaced-${h.name}`);
        renameSync(target, step.aside);
      }
      done.push(step);
      renameSync(join(out, h.name), target);
    }
    let next = file.raw;
    for (const h of found.hooks) next = setAt(next, key("hooks", "installs", h.name), install);
    writeConfigFile(file, next, env, `hooks.installs.${found.hooks.map((h) => h.name).join(", ")}`);
  } catch (err) {
    for (const step of done.reverse()) {
      // the new one is in place when its staged copy is gone (rmSync removes a link, never its folder)
      if (!exists(join(out, step.name)) && exists(step.target)) rmSync(step.target, { recursive: true, force: true });
      if (step.aside) renameSync(step.aside, step.target);
    }
    throw err;
  }
  return done.map((d) => ({ name: d.name, dir: d.target, replaced: d.aside !== undefined, install }));
}

async function report(cfg0: LurkConfig, env: Env, installed: Installed[], json: boolean, io: InstallIo, verb: string): Promise<void> {
  const cfg = loadConfig(env);
  const found = await discoverHooks(cfg, { env }).catch(() => undefined);
  const info = (name: string) => found?.hooks.find((h) => h.name === name && h.source === "user");
  const actor = await tellActor(cfg0, env);
  if (json) {
    io.out(JSON.stringify({
      [verb]: installed.map((i) => {
        const h = info(i.name);
        return { name: i.name, dir: i.dir, replaced: i.replaced, install: i.install, ...(h ? { events: h.events, enabled: h.enabled, missing: h.missing, runs: h.runs } : {}) };
      }),
      hooksEnabled: cfg.hooks.enabled, actor,
    }, null, 2));
    return;
  }
  for (const i of installed) {
    const h = info(i.name);
    io.out(`${verb} ${i.name}${i.install.version ? ` ${i.install.version}` : ""} from ${describe(i.install)} → ${i.dir}${i.install.link ? " (a link)" : ""}${i.replaced ? ", replacing the one there" : ""}`);
    io.out(`  ${nextStep(i.name, h, cfg.hooks.enabled)}`);
  }
  io.out(actor.text);
}

export function describe(i: HookInstall): string {
  return i.source === "npm" ? `npm ${i.spec}` : `${i.source === "archive" ? "archive " : ""}${i.path}`;
}

/** whether the hook runs now, and the exact command that changes it */
function nextStep(name: string, h: HookInfo | undefined, hooksOn: boolean): string {
  if (!h) return `it is not found by discovery: see npx lurkbot hooks list`;
  if (!h.enabled) return `events ${h.events.join(", ")}; off: hooks.entries.${name}.enabled is false in config.json. Turn it on: npx lurkbot hooks enable ${name}`;
  if (h.missing.length) return `events ${h.events.join(", ")}; on, but it will not run until its requirements are met: ${h.missing.join("; ")} (npx lurkbot hooks info ${name})`;
  if (!hooksOn) return `events ${h.events.join(", ")}; on, but hooks.enabled is false in config.json: no hook runs until it is true (npx lurkbot config set hooks.enabled true)`;
  return `events ${h.events.join(", ")}; on (hooks in $LURKBOT_HOME/hooks are on by default). Turn it off: npx lurkbot hooks disable ${name}`;
}

export interface ActorNote {
  state: "reloaded" | "not-running" | "bus-down" | "unknown";
  text: string;
  running?: number;
}

/** Asks the running hooks actor to discover again now, and says what happened. Never throws. */
async function tellActor(cfg: LurkConfig, env: Env): Promise<ActorNote> {
  try {
    const r = await withCliBus(cfg, env, (bus) => bus.call("hooks", "reload", {}, { timeoutMs: 5_000 }));
    return { state: "reloaded", running: r.running, text: `The running hooks actor reloaded: ${r.running} hook(s) run${r.hooksEnabled ? "" : " (hooks.enabled is false)"}.` };
  } catch (err) {
    if (LurkError.is(err) && err.code === "UNAVAILABLE") return { state: "not-running", text: "No hooks actor is running (the bus answers, nothing serves lurk.hooks.reload): the change applies when it starts (npx lurkbot start)." };
    const e = toCliError(err);
    if (e.exitCode === EXIT.busDown || e.exitCode === EXIT.config) return { state: "bus-down", text: `LurkBot is not running here (${e.message.replace(/\.$/, "")}): the change applies when the hooks actor starts.` };
    return { state: "unknown", text: `Could not ask the hooks actor to reload (${e.message}); a running one picks the change up by itself (it watches $LURKBOT_HOME/hooks and config.json).` };
  }
}
