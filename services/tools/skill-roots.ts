/**
 * The skill folders outside the workspace that `read` may open read-only: the user's
 * (`<home>/skills`) and the bundled ones shipped in the repository. The agent-runner lists the
 * skills of these folders in the prompt by absolute path (services/agent-runner/skills.ts, which
 * this file mirrors without importing it: actors share no code); the workspace's own `skills/`
 * is inside the workspace already.
 */
import { join } from "node:path";
import type { LurkConfig } from "../../shared/runtime/config.js";
import { REPO_ROOT } from "../../shared/scripts/paths.js";

export const BUNDLED_SKILLS_ROOT = join(REPO_ROOT, "services", "agent-runner", "skills-bundled");

export function skillRoots(config: LurkConfig): string[] {
  return [join(config.home, "skills"), BUNDLED_SKILLS_ROOT];
}
