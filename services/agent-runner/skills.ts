/**
 * Skills: `<dir>/<skill>/SKILL.md` files with YAML frontmatter (`name`, `description`, optional
 * requirements, optional `always`), found in three places:
 *   1. `<workspace>/skills/`            (the agent's own; the agent can write it)
 *   2. `$LURKBOT_HOME/skills/`          (installed by the user)
 *   3. `services/agent-runner/skills-bundled/` in the repository (shipped with LurkBot)
 * For one name the user's wins over the bundled one; a workspace skill never takes the name of a
 * user or bundled skill (as workspace hooks, shared/runtime/hooks/discovery.ts): the other one is
 * used and the workspace folder is reported as a problem.
 * Requirements: a binary on PATH (`requires.bins`, all of them; `requires.anyBins`, at least one),
 * an env var set (`requires.env`), the OS (`os`); read from `requires:`, `metadata.requires` or
 * `metadata.lurkbot.requires` / `metadata.moltbot.requires` (MoltBot's JSON-in-YAML style). A skill
 * whose binaries or env vars are missing is kept with `available: false` and `missing`
 * ("CLI: summarize", "ENV: GITHUB_TOKEN"): the prompt lists it as unavailable, so the model can
 * say what to install (seed 004). A skill for another OS is left out (nothing can make it work here).
 * `always: true` (top level, `metadata.always` or `metadata.<lurkbot|moltbot|openclaw>.always`): the
 * skill's body is injected in full under "Active Skills" (trimmed like a bootstrap file, at most
 * ALWAYS_SKILLS_MAX_CHARS for all of them); the others are listed compactly (name, description,
 * location) and the model reads a SKILL.md on demand, so only an always-on skill's body is kept.
 * `always` counts for user and bundled skills; a workspace skill's only when its name is in
 * `skills.alwaysAllow` (else it is listed like any other and reported), so nothing the agent
 * writes enters every later prompt by itself.
 * Parsed files are cached by path + mtime; PATH lookups are cached briefly.
 */
import { readdir, readFile } from "node:fs/promises";
import { statOrNull } from "./bootstrap.js";
import { join } from "node:path";
import { type HostRequirements } from "../../shared/runtime/host-requirements.js";
import { onPath } from "../../shared/runtime/on-path.js";
import { compareCodeUnits } from "../../shared/runtime/order.js";
import { BUNDLED_SKILLS_DIR, MAX_SKILL_BYTES, MAX_SKILLS_PER_DIR, readSkillMd } from "../../shared/runtime/skill-md.js";

export { BUNDLED_SKILLS_DIR };

export type SkillSource = "workspace" | "user" | "bundled";

export interface Skill {
  name: string;
  description: string;
  /** absolute path of the SKILL.md */
  location: string;
  source: SkillSource;
  requires: HostRequirements;
  /** `always: true`: the body is injected in full (Active Skills) */
  always?: boolean;
  /** the SKILL.md after its frontmatter; kept for always-on skills only */
  body?: string;
  /** false when a required binary or env var is missing on this host (set by loadSkills; absent: available) */
  available?: boolean;
  /** what is missing, e.g. "CLI: summarize", "ENV: GITHUB_TOKEN" */
  missing?: string[];
}

/** a skill's description in the prompt, at most */
const MAX_DESCRIPTION_CHARS = 400;

export interface SkillDirs {
  workspace?: string;
  /** LURKBOT_HOME (the config's home) */
  home?: string;
  /** defaults to BUNDLED_SKILLS_DIR; null: none */
  bundled?: string | null;
}

export interface SkillEnv {
  env?: Record<string, string | undefined>;
  platform?: string;
  /** workspace skills whose `always` is honoured (config `skills.alwaysAllow`) */
  alwaysAllow?: readonly string[];
  /** told about each folder that is not used as it asks (never throws) */
  onProblem?: (problem: SkillProblem) => void;
}

export interface SkillProblem {
  source: SkillSource;
  /** the SKILL.md */
  location: string;
  name: string;
  reason: string;
}

const parsed = new Map<string, { mtimeMs: number; size: number; skill: Skill | null }>();

/** The skills for a workspace by precedence, sorted by name, each marked available or not (other OSes left out). */
export async function loadSkills(dirs: SkillDirs, opts: SkillEnv = {}): Promise<Skill[]> {
  const env = opts.env ?? process.env;
  const platform = opts.platform ?? process.platform;
  // user and bundled first: a workspace skill never takes their names
  const sources: Array<[SkillSource, string | undefined]> = [
    ["user", dirs.home ? join(dirs.home, "skills") : undefined],
    ["bundled", dirs.bundled === undefined ? BUNDLED_SKILLS_DIR : dirs.bundled ?? undefined],
    ["workspace", dirs.workspace ? join(dirs.workspace, "skills") : undefined],
  ];
  const allowed = new Set(opts.alwaysAllow ?? []);
  const byName = new Map<string, Skill>();
  for (const [source, dir] of sources) {
    if (!dir) continue;
    for (const found of await scanDir(dir, source)) {
      // precedence: the first source that defines a name wins, even when that one is gated out
      const winner = byName.get(found.name);
      if (winner) {
        if (source === "workspace") opts.onProblem?.({ source, location: found.location, name: found.name, reason: `it has the name of the ${winner.source} skill "${found.name}", which a workspace skill cannot replace (the agent can write its workspace); the ${winner.source} one is used: rename the folder and the name in its SKILL.md` });
        continue;
      }
      let skill = found;
      if (source === "workspace" && skill.always && !allowed.has(skill.name)) {
        opts.onProblem?.({ source, location: skill.location, name: skill.name, reason: `it asks to be always on, which a workspace skill is only when skills.alwaysAllow names it; it is listed like any other skill` });
        const { body: _body, ...rest } = skill;
        skill = { ...rest, always: false };
      }
      byName.set(skill.name, skill);
    }
  }
  const out: Skill[] = [];
  for (const skill of byName.values()) {
    if (skill.requires.os.length && !skill.requires.os.includes(platform)) continue;
    const missing = await missingRequirements(skill.requires, env);
    out.push({ ...skill, available: missing.length === 0, missing });
  }
  return out.sort((a, b) => compareCodeUnits(a.name, b.name));
}

/** What the host lacks of a skill's bins and env vars, one short line per kind ("CLI: a, b", "CLI: one of x, y", "ENV: K"). */
export async function missingRequirements(req: HostRequirements, env: Record<string, string | undefined>): Promise<string[]> {
  const path = env.PATH ?? "";
  const bins: string[] = [];
  for (const bin of req.bins) if (!(await onPath(bin, path))) bins.push(bin);
  let anyFound = req.anyBins.length === 0;
  for (const bin of req.anyBins) if ((anyFound = await onPath(bin, path))) break;
  const unset = req.env.filter((name) => !env[name]);
  return [
    ...(bins.length ? [`CLI: ${bins.join(", ")}`] : []),
    ...(anyFound ? [] : [`CLI: one of ${req.anyBins.join(", ")}`]),
    ...(unset.length ? [`ENV: ${unset.join(", ")}`] : []),
  ];
}

/** skill folder names per directory, kept while the directory's mtime (entries added, removed, renamed) is unchanged */
const listings = new Map<string, { mtimeMs: number; names: string[] }>();

async function skillFolderNames(dir: string): Promise<string[]> {
  const st = statOrNull(dir);
  if (!st?.isDirectory()) {
    listings.delete(dir);
    return [];
  }
  const cached = listings.get(dir);
  if (cached && cached.mtimeMs === st.mtimeMs) return cached.names;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const names = entries.filter((e) => (e.isDirectory() || e.isSymbolicLink()) && !e.name.startsWith(".")).map((e) => e.name).sort().slice(0, MAX_SKILLS_PER_DIR);
  if (listings.size > 100) listings.delete(listings.keys().next().value!);
  listings.set(dir, { mtimeMs: st.mtimeMs, names });
  return names;
}

async function scanDir(dir: string, source: SkillSource): Promise<Skill[]> {
  const names = await skillFolderNames(dir);
  const skills = await Promise.all(names.map((name) => loadSkillFile(join(dir, name, "SKILL.md"), name, source)));
  return skills.filter((s): s is Skill => s !== null);
}

/** One SKILL.md, cached by path + mtime + size; null when missing, too big or without a description. */
export async function loadSkillFile(path: string, dirName: string, source: SkillSource): Promise<Skill | null> {
  const st = statOrNull(path);
  if (!st) {
    parsed.delete(path);
    return null;
  }
  if (!st.isFile() || st.size > MAX_SKILL_BYTES) return null;
  const cached = parsed.get(path);
  if (cached && cached.mtimeMs === st.mtimeMs && cached.size === st.size && (cached.skill?.source ?? source) === source) return cached.skill;
  let skill: Skill | null = null;
  try {
    skill = skillFromText(await readFile(path, "utf8"), path, dirName, source);
  } catch {
    skill = null;
  }
  if (parsed.size > 1000) parsed.delete(parsed.keys().next().value!);
  parsed.set(path, { mtimeMs: st.mtimeMs, size: st.size, skill });
  return skill;
}

export function skillFromText(text: string, location: string, dirName: string, source: SkillSource): Skill | null {
  const m = readSkillMd(text, dirName, MAX_DESCRIPTION_CHARS);
  if (!m) return null;
  return {
    name: m.name, description: m.description, location, source, requires: m.requires,
    always: m.always, ...(m.always ? { body: m.body.trim() } : {}), available: true, missing: [],
  };
}
