/**
 * What `lurkbot hooks install SOURCE` installs: SOURCE classified (a folder, an archive, an npm
 * spec), fetched (`npm pack --ignore-scripts`, no script of the package ever runs) and unpacked
 * (hooks-archive.ts, checked first) under the staging folder, and the hooks in it found and
 * validated as discovery reads them (readHook): one hook (HOOK.md at the top) or a hook pack
 * (package.json `lurkbot.hooks` or `openclaw.hooks`: its hook folders, relative). Names must be
 * hook names, once each (whatever their case), and never a bundled hook's. `stageHook` copies one
 * hook folder into the staging folder (links only inside it, no `.npmrc`), gives it the pack's
 * `type` and `dependencies`, and runs `npm install --omit=dev --ignore-scripts` when it has
 * dependencies. npm runs with `npmEnv()` and in a folder of ours: neither the pack nor the folder
 * the CLI was started in can configure it (a `.npmrc` or npm_config_git naming a program to run as
 * git would run it despite --ignore-scripts).
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, isAbsolute, join, posix, relative, resolve, sep } from "node:path";
import { safeParseJson } from "../../shared/contract/index.js";
import { HOOK_NAME_RE } from "../../shared/runtime/config-hooks.js";
import { BUNDLED_HOOKS_DIR, readHook } from "../../shared/runtime/hooks/discovery.js";
import { hookMdName } from "../../shared/runtime/hooks/hook-md.js";
import { CliError, EXIT, UsageError } from "./errors.js";
import { extractArchive, linkOut, MAX_ENTRIES, MAX_UNPACKED_BYTES, readArchive } from "./hooks-archive.js";

export type Source = { kind: "path" | "archive"; path: string } | { kind: "npm"; spec: string };

export interface PackageJson {
  name?: string;
  version?: string;
  type?: string;
  dependencies?: Record<string, string>;
}

export interface FoundHooks {
  /** the folder the hook or pack is in */
  root: string;
  hooks: Array<{ name: string; dir: string }>;
  /** a pack's (or a single hook's) package.json */
  pkg?: PackageJson;
}

const ARCHIVE_RE = /\.(tgz|tar\.gz|tar|zip)$/i;
/** a registry package: `name`, `@scope/name`, with `@version`, `@range` or `@tag` (no `name@file:…`, `@git:…`, `@gist:…`: those are not registry specs) */
const NPM_NAME_RE = /^(@[a-z0-9][\w.~-]*\/)?[a-z0-9][\w.~-]*(@[^\s/\\:]+)?$/;
const NPM_TIMEOUT_MS = 300_000;
const MAX_PACK_HOOKS = 100;
/** not copied from a local folder (a checkout's history; dependencies are installed afresh) */
const SKIPPED_IN_FOLDERS = new Set([".git", "node_modules"]);
/** never copied, in any letter case (npm pack leaves it out too): `npm install` in the hook's folder would read it */
const NEVER_COPIED = ".npmrc";
/** npm settings from the environment kept for npm: where and how to fetch (registry, auth, proxy, TLS, cache), nothing that runs or places anything */
const NPM_ENV_KEPT = /^npm_config_(registry|@[^:]+:registry|\/\/.*|_auth.*|always_auth|cache|userconfig|globalconfig|proxy|https_proxy|http_proxy|noproxy|no_proxy|cafile|ca|cert|key|strict_ssl|offline|prefer_offline|prefer_online|fetch_.*|maxsockets|local_address|update_notifier|loglevel|progress|color)$/i;

/**
 * The environment npm runs with: ours without npm_config_* settings other than NPM_ENV_KEPT (npm
 * exports its own into the scripts it runs, so `npx lurkbot` started from a project passes that
 * project's .npmrc on: `git`, `global`, `prefix`, `script-shell`, …), and ignore-scripts also in
 * the environment, for the npm that npm itself starts to prepare a git dependency.
 */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_config_/i.test(k) || NPM_ENV_KEPT.test(k)) env[k] = v;
  env.npm_config_ignore_scripts = "true";
  return env;
}

/** A folder, an archive file, or an npm spec (`name`, `name@version`, `@scope/name`, `file:…`). */
export function classifySource(source: string, cwd: string): Source {
  const path = resolve(cwd, source.startsWith("~/") ? join(process.env.HOME ?? "~", source.slice(2)) : source);
  if (!source.startsWith("file:") && existsSync(path)) {
    const st = statSync(path);
    if (st.isDirectory()) return { kind: "path", path };
    if (st.isFile() && ARCHIVE_RE.test(path)) return { kind: "archive", path };
    throw new UsageError(`${path} is neither a folder nor a .tgz, .tar.gz, .tar or .zip archive: give a hook folder, a hook pack (folder or archive) or an npm package.`, "hooks");
  }
  // a file: spec is kept absolute, so `hooks update` finds it from any folder
  if (source.startsWith("file:")) return { kind: "npm", spec: `file:${resolve(cwd, source.slice(5))}` };
  if (NPM_NAME_RE.test(source)) return { kind: "npm", spec: source };
  throw new UsageError(`"${source}" is no folder or archive here (${path}) and not an npm package spec (name, name@version, @scope/name, file:PATH).`, "hooks");
}

/** `npm pack SPEC` into `dest` (no scripts run): the tarball and what npm says of it. */
export function npmPack(spec: string, dest: string): { tarball: string; name: string; version: string; integrity?: string } {
  mkdirSync(dest, { recursive: true });
  // in `dest`, not where the CLI was started (a workspace's .npmrc would configure it); `spec` is a registry name or an absolute file:
  const r = spawnSync("npm", ["pack", spec, "--pack-destination", dest, "--ignore-scripts", "--json"], { cwd: dest, env: npmEnv(), encoding: "utf8", timeout: NPM_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 });
  if (r.error) {
    if ((r.error as NodeJS.ErrnoException).code === "ENOENT") throw new CliError("npm is not on PATH, so an npm package cannot be fetched: install npm (it comes with Node.js), or give a hook folder or archive instead.");
    throw new CliError(`npm pack ${spec} failed: ${r.error.message}. Nothing was installed.`);
  }
  if (r.status !== 0) {
    const why = npmError(r.stderr);
    const missing = /E404|404 Not Found|is not in this registry|ENOENT|Could not read package\.json|no such file/i.test(r.stderr);
    throw new CliError(`npm pack ${spec} failed${missing ? ": no such package or file" : ""} (${why}). Check the name and version (npm view ${spec.replace(/^file:.*/, "NAME")} version), or give a hook folder or archive. Nothing was installed.`);
  }
  let out: Array<{ filename?: string; name?: string; version?: string; integrity?: string }>;
  try {
    out = JSON.parse(r.stdout.slice(r.stdout.indexOf("["))) as typeof out;
  } catch {
    throw new CliError(`npm pack ${spec} gave no JSON report (npm too old? npm 7 or newer is needed). Nothing was installed.`);
  }
  const info = out[0];
  if (!info?.filename || !info.name || !info.version) throw new CliError(`npm pack ${spec} did not say which tarball it wrote. Nothing was installed.`);
  // scoped packages: npm reports "@scope/name-1.0.0.tgz" and writes "scope-name-1.0.0.tgz"
  const file = info.filename.replace(/^@/, "").replace(/\//g, "-");
  return { tarball: join(dest, file), name: info.name, version: info.version, ...(info.integrity ? { integrity: info.integrity } : {}) };
}

/** Unpacks a checked archive into `dest`; the folder the hook or pack is in (the single top folder, e.g. npm's package/). */
export async function unpack(archive: string, dest: string): Promise<string> {
  const entries = await readArchive(archive);
  extractArchive(entries, dest, archive);
  const top = readdirSync(dest);
  return top.length === 1 && lstatSync(join(dest, top[0]!)).isDirectory() ? join(dest, top[0]!) : dest;
}

/** The hooks in `root` (a hook folder or a pack), each validated as discovery reads it. `label` names the source in errors; `rootName`: a hook at the top is named so when its HOOK.md gives no name. */
export function findHooks(root: string, label: string, rootName?: string): FoundHooks {
  const pkg = readPackageJson(root, label);
  const listed = pkg?.raw.lurkbot?.hooks ?? pkg?.raw.openclaw?.hooks;
  const dirs: string[] = [];
  if (listed !== undefined) {
    if (!Array.isArray(listed) || listed.length === 0 || listed.some((d) => typeof d !== "string")) {
      throw new CliError(`${label}: package.json's ${pkg!.raw.lurkbot?.hooks !== undefined ? "lurkbot" : "openclaw"}.hooks must list the pack's hook folders, e.g. ["./hooks/my-hook"]. Nothing was installed.`);
    }
    if (listed.length > MAX_PACK_HOOKS) throw new CliError(`${label}: the pack lists ${listed.length} hooks; at most ${MAX_PACK_HOOKS}. Nothing was installed.`);
    for (const rel of listed as string[]) dirs.push(packFolder(root, rel, label));
  } else if (existsSync(join(root, "HOOK.md"))) {
    dirs.push(root);
  } else {
    throw new CliError(`${label} is not a hook or a hook pack: it has no HOOK.md, and no package.json listing hook folders in "lurkbot": {"hooks": [...]} (or "openclaw": {"hooks": [...]}). Nothing was installed.`);
  }
  // a hook at the top: HOOK.md's name, else the folder's (a local folder) or the package's
  const topName = rootName ?? pkg?.json.name?.replace(/^@[^/]+\//, "") ?? basename(root);
  const hooks = dirs.map((dir) => ({ name: hookName(dir, dir === root ? topName : basename(dir), dir === root ? label : `${label} (${relative(root, dir)})`), dir }));
  // by lower case: one folder on a case-insensitive file system (macOS, Windows)
  const seen = new Set<string>();
  const bundled = new Set([...bundledNames()].map((n) => n.toLowerCase()));
  for (const h of hooks) {
    if (seen.has(h.name.toLowerCase())) throw new CliError(`${label}: two hooks are named "${h.name}" (letter case aside); each needs its own name. Nothing was installed.`);
    seen.add(h.name.toLowerCase());
    if (bundled.has(h.name.toLowerCase())) {
      throw new CliError(`${label}: "${h.name}" is the name of a bundled hook, which an installed hook may not take. Rename the hook (its folder and the name in its HOOK.md); to change what the bundled one does, turn it off: npx lurkbot hooks disable ${h.name}. Nothing was installed.`);
    }
  }
  return { root, hooks, ...(pkg ? { pkg: pkg.json } : {}) };
}

/** The name the hook gets (HOOK.md's, else `fallback`), checked with discovery's reader as if it were in a folder of that name. */
function hookName(dir: string, fallback: string, where: string): string {
  let text = "";
  try {
    text = readFileSync(join(dir, "HOOK.md"), "utf8");
  } catch {
    // readHook says so
  }
  const name = hookMdName(text) ?? fallback;
  if (!HOOK_NAME_RE.test(name)) throw new CliError(`${where}: "${name}" is not a hook name (letters, digits, '.', '_', '-'; at most 64). Nothing was installed.`);
  const read = readHook(dir, name);
  if (!read.ok) throw new CliError(`${where} is not a valid hook: ${read.reason}. Nothing was installed.`);
  return name;
}

/** a pack's hook folder: relative, inside the pack, a real folder */
function packFolder(root: string, rel: string, label: string): string {
  const clean = rel.replace(/^\.\//, "");
  const normal = posix.normalize(clean);
  if (rel.includes("\\") || rel.includes("\0") || isAbsolute(rel) || normal === ".." || normal.startsWith("../")) {
    throw new CliError(`${label}: the hook folder "${rel}" in package.json must be a path inside the pack (e.g. "./hooks/my-hook"). Nothing was installed.`);
  }
  const dir = join(root, ...normal.split("/"));
  let st;
  try {
    st = lstatSync(dir);
  } catch {
    throw new CliError(`${label}: package.json lists the hook folder "${rel}", which is not in the pack. Nothing was installed.`);
  }
  if (!st.isDirectory()) throw new CliError(`${label}: "${rel}" (listed in package.json) is not a folder. Nothing was installed.`);
  return dir;
}

function readPackageJson(root: string, label: string): { json: PackageJson; raw: { lurkbot?: { hooks?: unknown }; openclaw?: { hooks?: unknown } } } | undefined {
  const file = join(root, "package.json");
  if (!existsSync(file)) return undefined;
  let raw: unknown;
  try {
    raw = safeParseJson(readFileSync(file), { maxBytes: 1024 * 1024 });
  } catch (err) {
    throw new CliError(`${label}: package.json is not valid JSON (${(err as Error).message}). Nothing was installed.`);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new CliError(`${label}: package.json is not a JSON object. Nothing was installed.`);
  const o = raw as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);
  const deps = o.dependencies !== null && typeof o.dependencies === "object" && !Array.isArray(o.dependencies) ? (o.dependencies as Record<string, string>) : undefined;
  const json: PackageJson = {
    ...(str(o.name) ? { name: str(o.name)! } : {}), ...(str(o.version) ? { version: str(o.version)! } : {}),
    ...(str(o.type) ? { type: str(o.type)! } : {}), ...(deps && Object.keys(deps).length ? { dependencies: deps } : {}),
  };
  const section = (v: unknown) => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as { hooks?: unknown }) : undefined);
  return { json, raw: { ...(section(o.lurkbot) ? { lurkbot: section(o.lurkbot)! } : {}), ...(section(o.openclaw) ? { openclaw: section(o.openclaw)! } : {}) } };
}

export function bundledNames(): Set<string> {
  try {
    return new Set(readdirSync(BUNDLED_HOOKS_DIR, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name));
  } catch {
    return new Set();
  }
}

/**
 * Copies the hook folder `src` to `dest` (which must not exist): files and folders, and symbolic
 * links that stay inside it; from a local folder without .git and node_modules. A hook of a pack
 * gets a package.json with the pack's `type` and `dependencies` when it has none of its own; one
 * with dependencies gets `npm install --omit=dev --ignore-scripts`. Then it is read again as
 * discovery reads it.
 */
export function stageHook(src: string, dest: string, name: string, opts: { fromFolder: boolean; pack?: PackageJson; label: string }): void {
  const budget = { files: MAX_ENTRIES, bytes: MAX_UNPACKED_BYTES };
  copyTree(src, dest, src, opts.fromFolder, budget, opts.label);
  // each link was inside on its own; followed through the others (and in the copy) it must still be
  const out = linkOut(dest);
  if (out) throw new CliError(`${opts.label}: ${out.path} in the hook ${name} is a symbolic link to ${out.target}, ${out.why.replace("the archive's folder", "the hook's folder")}; a hook must hold its files itself. Nothing was installed.`);
  const own = join(dest, "package.json");
  if (!existsSync(own) && opts.pack && (opts.pack.type || opts.pack.dependencies)) {
    const pkg = {
      private: true,
      description: `the hook ${name} of ${opts.pack.name ?? "a hook pack"}${opts.pack.version ? `@${opts.pack.version}` : ""} (lurkbot hooks install)`,
      ...(opts.pack.type ? { type: opts.pack.type } : {}), ...(opts.pack.dependencies ? { dependencies: opts.pack.dependencies } : {}),
    };
    writeFileSync(own, `${JSON.stringify(pkg, null, 2)}\n`, { mode: 0o644 });
  }
  if (existsSync(own) && readPackageJson(dest, opts.label)?.json.dependencies) npmInstall(dest, name);
  const read = readHook(dest, name);
  if (!read.ok) throw new CliError(`${opts.label}: the copied hook ${name} cannot be used: ${read.reason}. Nothing was installed.`);
}

function copyTree(src: string, dest: string, top: string, fromFolder: boolean, budget: { files: number; bytes: number }, label: string): void {
  mkdirSync(dest, { mode: 0o755 });
  for (const e of readdirSync(src, { withFileTypes: true })) {
    if ((fromFolder && SKIPPED_IN_FOLDERS.has(e.name)) || e.name.toLowerCase() === NEVER_COPIED) continue;
    const from = join(src, e.name);
    const to = join(dest, e.name);
    if (--budget.files < 0) throw new CliError(`${label}: the hook has more than ${MAX_ENTRIES} files. Nothing was installed.`);
    if (e.isDirectory()) copyTree(from, to, top, fromFolder, budget, label);
    else if (e.isSymbolicLink()) {
      const target = readlinkSync(from);
      const at = resolve(src, target);
      if (isAbsolute(target) || (at !== top && !at.startsWith(top + sep))) {
        throw new CliError(`${label}: ${relative(top, from)} is a symbolic link to ${target}, outside the hook's folder; a hook must hold its files itself. Nothing was installed.`);
      }
      symlinkSync(target, to);
    } else if (e.isFile()) {
      budget.bytes -= statSync(from).size;
      if (budget.bytes < 0) throw new CliError(`${label}: the hook's files are more than ${MAX_UNPACKED_BYTES / 1024 / 1024} MB. Nothing was installed.`);
      copyFileSync(from, to);
    } else {
      throw new CliError(`${label}: ${relative(top, from)} is not a file, folder or symbolic link. Nothing was installed.`);
    }
  }
}

function npmInstall(dir: string, name: string): void {
  const r = spawnSync("npm", ["install", "--omit=dev", "--ignore-scripts", "--no-global", "--no-workspaces", "--no-audit", "--no-fund", "--no-package-lock"], { cwd: dir, env: npmEnv(), encoding: "utf8", timeout: NPM_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 });
  if (r.error && (r.error as NodeJS.ErrnoException).code === "ENOENT") throw new CliError(`the hook ${name} has dependencies and npm is not on PATH to install them: install npm (it comes with Node.js). Nothing was installed.`);
  if (r.error || r.status !== 0) throw new CliError(`npm install of the hook ${name}'s dependencies failed (${r.error?.message ?? npmError(r.stderr)}). Nothing was installed.`, EXIT.failed);
}

/** npm's own error lines, short */
function npmError(stderr: string): string {
  const lines = stderr.split("\n").map((l) => l.trim()).filter((l) => /^npm (error|ERR!)/.test(l)).map((l) => l.replace(/^npm (error|ERR!)\s*/, "")).filter(Boolean);
  return (lines.length ? lines.slice(0, 4).join("; ") : stderr.trim().split("\n").slice(-3).join("; ")).slice(0, 600) || "no message";
}
