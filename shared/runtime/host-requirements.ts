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

/**
 * What the host lacks, one line each (empty: every requirement is met); `envHint` says where an
 * unset variable may be set; `firstOnly` stops at the first gap (no further PATH lookups).
 */
export async function unmetRequirements(
  req: HostRequirements, env: Record<string, string | undefined>, platform: string,
  opts: { envHint?: (name: string) => string; firstOnly?: boolean } = {},
): Promise<string[]> {
  const missing: string[] = [];
  const gap = (line: string) => (missing.push(line), opts.firstOnly === true);
  if (req.os.length && !req.os.includes(platform) && gap(`runs only on ${req.os.join(", ")} (this host is ${platform})`)) return missing;
  for (const name of req.env) if (!env[name] && gap(`environment variable ${name} is not set (${opts.envHint?.(name) ?? "set it"})`)) return missing;
  const path = env.PATH ?? "";
  for (const bin of req.bins) if (!(await onPath(bin, path)) && gap(`${bin} is not on PATH (install it)`)) return missing;
  if (req.anyBins.length) {
    let any = false;
    for (const bin of req.anyBins) if ((any = await onPath(bin, path))) break;
    if (!any) missing.push(`none of ${req.anyBins.join(", ")} is on PATH (install one)`);
  }
  return missing;
}

/** Whether the host meets every requirement (stops at the first gap: a run's skill gating). */
export async function meetsRequirements(req: HostRequirements, env: Record<string, string | undefined>, platform: string): Promise<boolean> {
  return (await unmetRequirements(req, env, platform, { firstOnly: true })).length === 0;
}
