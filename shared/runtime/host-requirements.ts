/**
 * What a skill or a hook needs from the host it runs on (seed 001: `requires.bins`, all of them on
 * PATH; `requires.anyBins`, at least one; `requires.env`, each set; `os`, one of them), and the
 * check. The agent-runner gates skills with it, the hooks actor and `lurkbot hooks` gate hooks.
 */
import { yamlList, type YamlMap, type YamlValue } from "./frontmatter.js";
import { onPath } from "./on-path.js";

export interface HostRequirements {
  /** every one must be on PATH */
  bins: string[];
  /** at least one must be on PATH */
  anyBins: string[];
  /** each must be set */
  env: string[];
  /** process.platform values; empty: any */
  os: string[];
}

/** The requirements of a frontmatter's `requires` map and its `os` value (lists of at most `max`). */
export function hostRequirements(requires: YamlMap, os: YamlValue | undefined, max?: number): HostRequirements {
  return { bins: yamlList(requires.bins, max), anyBins: yamlList(requires.anyBins, max), env: yamlList(requires.env, max), os: yamlList(os, max) };
}

/** What the host lacks, one line each (empty: every requirement is met); `envHint` says where an unset variable may be set. */
export async function unmetRequirements(req: HostRequirements, env: Record<string, string | undefined>, platform: string, envHint = (_name: string) => "set it"): Promise<string[]> {
  const missing: string[] = [];
  if (req.os.length && !req.os.includes(platform)) missing.push(`runs only on ${req.os.join(", ")} (this host is ${platform})`);
  for (const name of req.env) if (!env[name]) missing.push(`environment variable ${name} is not set (${envHint(name)})`);
  const path = env.PATH ?? "";
  for (const bin of req.bins) if (!(await onPath(bin, path))) missing.push(`${bin} is not on PATH (install it)`);
  if (req.anyBins.length) {
    let any = false;
    for (const bin of req.anyBins) if ((any = await onPath(bin, path))) break;
    if (!any) missing.push(`none of ${req.anyBins.join(", ")} is on PATH (install one)`);
  }
  return missing;
}
