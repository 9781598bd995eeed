/**
 * Seed 001 §17.3 steps 7 and 8:
 *  - Skills: the skills the agent would find (its workspace's `skills/`, `$LURKBOT_HOME/skills/`,
 *    the bundled ones; the agent-runner's places, its SKILL.md reader shared/runtime/skill-md.ts and
 *    the shared host-requirements check) whose requirements this host lacks, each with what it
 *    needs. Nothing is asked and nothing is installed.
 *  - Hooks: the bundled hooks (command-logger, boot-md, session-memory), one line each, and which
 *    to enable (--hooks LIST); written as hooks.entries.<name>.enabled (finish.ts). Enter keeps
 *    the ones enabled now.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { parseConfig } from "../../../shared/runtime/config.js";
import { unmetRequirements, type HostRequirements } from "../../../shared/runtime/host-requirements.js";
import { BUNDLED_SKILLS_DIR, MAX_SKILL_BYTES, MAX_SKILLS_PER_DIR, readSkillMd } from "../../../shared/runtime/skill-md.js";
import { discoverHooks, type HookInfo } from "../../../shared/runtime/hooks/discovery.js";
import { envWithSecrets } from "./finish.js";
import type { WizardSession, WizardStep } from "./session.js";

interface SkillNeeds {
  name: string;
  description: string;
  source: string;
  requires: HostRequirements;
}

/** The skills of one folder (`<dir>/<name>/SKILL.md` with a description), as the agent-runner reads them. */
function skillsIn(dir: string, source: string): SkillNeeds[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => !n.startsWith(".")).sort().slice(0, MAX_SKILLS_PER_DIR);
  } catch {
    return [];
  }
  const out: SkillNeeds[] = [];
  for (const dirName of names) {
    const path = join(dir, dirName, "SKILL.md");
    try {
      if (statSync(path).size > MAX_SKILL_BYTES) continue;
      const skill = readSkillMd(readFileSync(path, "utf8"), dirName, 120);
      if (skill) out.push({ name: skill.name, description: skill.description, source, requires: skill.requires });
    } catch {
      // no or unreadable SKILL.md: not a skill
    }
  }
  return out;
}

/** The workspace the config names (relative paths in the home), as parseConfig resolves it. */
function workspaceOf(s: WizardSession): string {
  const st = s.state;
  const ws = st.env.LURKBOT_WORKSPACE ?? st.advanced.workspace ?? (st.raw.workspace as string | undefined) ?? "workspace";
  return isAbsolute(ws) ? ws : resolve(st.home, ws);
}

const skills: WizardStep = {
  id: "skills",
  async run(s) {
    const byName = new Map<string, SkillNeeds>();
    // the agent-runner's precedence: user over bundled, and a workspace skill never takes either's name
    for (const [dir, source] of [[join(s.state.home, "skills"), "user"], [BUNDLED_SKILLS_DIR, "bundled"], [join(workspaceOf(s), "skills"), "workspace"]] as const) {
      for (const skill of skillsIn(dir, source)) if (!byName.has(skill.name)) byName.set(skill.name, skill);
    }
    const env = envWithSecrets(s.state.env, { ...s.state.stored, ...s.state.secrets });
    const lacking: { skill: SkillNeeds; missing: string[] }[] = [];
    let usable = 0;
    for (const skill of byName.values()) {
      if (skill.requires.os.length && !skill.requires.os.includes(process.platform)) continue;
      const missing = await unmetRequirements(skill.requires, env, process.platform, { envHint: (name) => `export it, or store it with \`npx lurkbot config set-secret ${name}\` if LurkBot knows it` });
      if (missing.length) lacking.push({ skill, missing });
      else usable++;
    }
    if (lacking.length === 0) {
      s.prompt.say(`Skills: ${usable} found, each with what it needs on this host.`);
      return;
    }
    s.prompt.say(`Skills: ${usable} ready; ${lacking.length} need${lacking.length === 1 ? "s" : ""} something this host lacks (the agent sees ${lacking.length === 1 ? "it" : "them"} as unavailable until then; nothing is installed for you):`);
    for (const { skill, missing } of lacking) s.prompt.say(`  - ${skill.name} (${skill.source}): ${skill.description} — needs: ${missing.join("; ")}`);
  },
};

/** The bundled hooks with their state under the config as it is now ([] when it does not load). */
async function bundledHooks(s: WizardSession): Promise<HookInfo[]> {
  try {
    const cfg = parseConfig(s.state.raw, s.state.env, s.state.home, s.state.configPath);
    return (await discoverHooks(cfg, { env: s.state.env })).hooks.filter((h) => h.source === "bundled");
  } catch {
    return [];
  }
}

const hooks: WizardStep = {
  id: "hooks",
  async run(s) {
    const found = await bundledHooks(s);
    if (found.length === 0) return;
    s.prompt.say("Hooks run small scripts on events (commands such as /new, start-up); bundled ones are off until you enable them (`npx lurkbot hooks list` shows them later).");
    const chosen = await s.prompt.multiselect<string>({
      id: "hooks", message: "Hooks to enable:", default: s.state.hooks?.chosen ?? found.filter((h) => h.enabled).map((h) => h.name),
      choices: found.map((h) => ({ value: h.name, label: h.name, hint: `${h.description}${h.missing.length ? ` (needs: ${h.missing.join("; ")})` : ""}` })),
    });
    s.state.hooks = { offered: found.map((h) => h.name), chosen };
    if (chosen.length && s.state.raw.hooks?.enabled === false) s.prompt.say("  note: hooks.enabled is false in config.json: no hook runs until it is true (`npx lurkbot config set hooks.enabled true`).");
  },
};

export const SKILLS_HOOKS_STEPS: WizardStep[] = [skills, hooks];
