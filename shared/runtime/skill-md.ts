/**
 * A skill's SKILL.md as LurkBot reads it: the agent-runner's skills (services/agent-runner/skills.ts)
 * and `lurkbot onboard`'s skills step (services/cli/onboard/steps-skills-hooks.ts), one reader.
 * Frontmatter `name` (default: the folder's name; letters, digits, `_`, `.`, `-`, at most 64) and
 * `description` (required, on one line) make a skill. Requirements are read from `requires:`,
 * `metadata.requires` or `metadata.<lurkbot|moltbot|openclaw>.requires` (MoltBot's JSON-in-YAML
 * style), the OS from `os` at the same places; `always` likewise.
 */
import { join } from "node:path";
import { REPO_ROOT } from "../scripts/paths.js";
import { oneLine, parseFrontmatter, yamlMap, yamlString } from "./frontmatter.js";
import { hostRequirements, type HostRequirements } from "./host-requirements.js";

/** where the agent-runner ships its skills */
export const BUNDLED_SKILLS_DIR = join(REPO_ROOT, "services", "agent-runner", "skills-bundled");
/** a SKILL.md larger than this is skipped (its frontmatter is all that is read) */
export const MAX_SKILL_BYTES = 256 * 1024;
export const MAX_SKILLS_PER_DIR = 200;

export interface SkillMd {
  name: string;
  /** on one line, at most the caller's maximum */
  description: string;
  requires: HostRequirements;
  /** `always: true` (or "true"), at the top level or in metadata */
  always: boolean;
  /** the text after the frontmatter */
  body: string;
}

/** One SKILL.md's text; null when it is not a skill (no description, or a name that is not one). */
export function readSkillMd(text: string, dirName: string, maxDescriptionChars: number): SkillMd | null {
  const { data, body } = parseFrontmatter(text);
  const name = yamlString(data.name) || dirName;
  const description = oneLine(yamlString(data.description), maxDescriptionChars);
  if (!description || !/^[\w.-]{1,64}$/.test(name)) return null;
  const meta = yamlMap(data.metadata);
  const nested = yamlMap(meta?.lurkbot) ?? yamlMap(meta?.moltbot) ?? yamlMap(meta?.openclaw);
  const req = yamlMap(data.requires) ?? yamlMap(meta?.requires) ?? yamlMap(nested?.requires) ?? {};
  const flag = data.always ?? meta?.always ?? nested?.always;
  return { name, description, requires: hostRequirements(req, data.os ?? meta?.os ?? nested?.os), always: flag === true || flag === "true", body };
}
