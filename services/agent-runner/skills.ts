/**
 * Skills: `<dir>/<skill>/SKILL.md` files with YAML frontmatter (`name`, `description`, optional
 * requirements), found in three places, earlier winning for the same name:
 *   1. `<workspace>/skills/`            (the agent's own)
 *   2. `$LURKBOT_HOME/skills/`          (installed by the user)
 *   3. `services/agent-runner/skills-bundled/` in the repository (shipped with LurkBot)
 * A skill is gated out when a required binary is not on PATH (`requires.bins`, all of them;
 * `requires.anyBins`, at least one), a required env var is unset (`requires.env`) or the OS does
 * not match (`os`). Requirements are read from `requires:`, `metadata.requires` or
 * `metadata.lurkbot.requires` / `metadata.moltbot.requires` (MoltBot's JSON-in-YAML style).
 * The prompt lists skills compactly (name, description, location); the model reads a SKILL.md
 * on demand, so no skill body is ever loaded here beyond its frontmatter. Parsed files are
 * cached by path + mtime; PATH lookups are cached briefly.
 */
import { readdir, readFile } from "node:fs/promises";
import { statOrNull } from "./bootstrap.js";
import { join } from "node:path";
import { REPO_ROOT } from "../../shared/scripts/paths.js";
import { oneLine, parseFrontmatter, yamlMap, yamlString } from "../../shared/runtime/frontmatter.js";
import { hostRequirements, meetsRequirements, type HostRequirements } from "../../shared/runtime/host-requirements.js";
import { compareCodeUnits } from "../../shared/runtime/order.js";

export type SkillSource = "workspace" | "user" | "bundled";

export interface Skill {
  name: string;
  description: string;
  /** absolute path of the SKILL.md */
  location: string;
  source: SkillSource;
  requires: HostRequirements;
}

export const BUNDLED_SKILLS_DIR = join(REPO_ROOT, "services", "agent-runner", "skills-bundled");
/** a SKILL.md larger than this is skipped (its frontmatter is all that is read) */
const MAX_SKILL_BYTES = 256 * 1024;
const MAX_SKILLS_PER_DIR = 200;
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
}

const parsed = new Map<string, { mtimeMs: number; size: number; skill: Skill | null }>();

/** All usable skills for a workspace, by precedence and gating, sorted by name. */
export async function loadSkills(dirs: SkillDirs, opts: SkillEnv = {}): Promise<Skill[]> {
  const env = opts.env ?? process.env;
  const platform = opts.platform ?? process.platform;
  const sources: Array<[SkillSource, string | undefined]> = [
    ["workspace", dirs.workspace ? join(dirs.workspace, "skills") : undefined],
    ["user", dirs.home ? join(dirs.home, "skills") : undefined],
    ["bundled", dirs.bundled === undefined ? BUNDLED_SKILLS_DIR : dirs.bundled ?? undefined],
  ];
  const byName = new Map<string, Skill>();
  for (const [source, dir] of sources) {
    if (!dir) continue;
    for (const skill of await scanDir(dir, source)) {
      // precedence: the first source that defines a name wins, even when that one is gated out
      if (byName.has(skill.name)) continue;
      byName.set(skill.name, skill);
    }
  }
  const usable: Skill[] = [];
  for (const skill of byName.values()) if (await meetsRequirements(skill.requires, env, platform)) usable.push(skill);
  return usable.sort((a, b) => compareCodeUnits(a.name, b.name));
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
  const { data } = parseFrontmatter(text);
  const name = yamlString(data.name) || dirName;
  const description = oneLine(yamlString(data.description), MAX_DESCRIPTION_CHARS);
  if (!description || !/^[\w.-]{1,64}$/.test(name)) return null;
  const meta = yamlMap(data.metadata);
  const nested = yamlMap(meta?.lurkbot) ?? yamlMap(meta?.moltbot) ?? yamlMap(meta?.openclaw);
  const req = yamlMap(data.requires) ?? yamlMap(meta?.requires) ?? yamlMap(nested?.requires) ?? {};
  return { name, description, location, source, requires: hostRequirements(req, data.os ?? meta?.os ?? nested?.os) };
}
