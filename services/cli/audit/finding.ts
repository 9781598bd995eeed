/**
 * The findings of `lurkbot security audit`: what is exposed or unsafe (`level`), why (`detail`)
 * and the exact change that ends it (`fix`). `id` is stable across releases (scripts and tests
 * key on it; a channel's name is part of the ids of per-channel checks). A finding that
 * `--fix` may repair carries a `repair`: a local, reversible file-mode change, nothing else.
 */
import type { Env, LurkConfig } from "../../../shared/runtime/config.js";

export type Level = "critical" | "warning" | "info";
/** report order: critical first */
export const LEVELS: readonly Level[] = ["critical", "warning", "info"];

export interface Finding {
  id: string;
  level: Level;
  title: string;
  detail: string;
  /** a command or a config key change */
  fix: string;
  /** when the fix is one config change: the exact command that makes it (`npx lurkbot config set …`) */
  fixCommand?: string;
  /** whether `--fix` changes it */
  fixable: boolean;
}

/** the one kind of change `--fix` makes: chmod of a file or directory LurkBot owns */
export interface ModeRepair {
  path: string;
  mode: number;
}

export interface AuditFinding extends Finding {
  repair?: ModeRepair;
}

/** What every check reads: the parsed config, the environment and config.json as written. */
export interface AuditContext {
  config: LurkConfig;
  env: Env;
  configPath: string;
  /** config.json as written (without defaults or environment), undefined when there is none */
  rawConfig: Record<string, unknown> | undefined;
}

export function finding(f: Omit<AuditFinding, "fixable">): AuditFinding {
  return { ...f, fixable: f.repair !== undefined };
}

export interface Summary {
  critical: number;
  warning: number;
  info: number;
}

export function summarize(findings: readonly Finding[]): Summary {
  const s: Summary = { critical: 0, warning: 0, info: 0 };
  for (const f of findings) s[f.level]++;
  return s;
}

/** "2 critical, 1 warning, 3 info" */
export function summaryLine(s: Summary): string {
  return `${s.critical} critical, ${s.warning} warning${s.warning === 1 ? "" : "s"}, ${s.info} info`;
}

/** Critical first, then warnings, then info; by id within a level. */
export function sortFindings<T extends Finding>(findings: readonly T[]): T[] {
  return [...findings].sort((a, b) => LEVELS.indexOf(a.level) - LEVELS.indexOf(b.level) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The public shape (no repair), every text with each known secret replaced by "***". */
export function publicFinding(f: AuditFinding, secrets: readonly string[]): Finding {
  const mask = (text: string) => maskSecrets(text, secrets);
  return { id: f.id, level: f.level, title: mask(f.title), detail: mask(f.detail), fix: mask(f.fix), ...(f.fixCommand ? { fixCommand: mask(f.fixCommand) } : {}), fixable: f.fixable };
}

/** a word the shell takes as it is; anything else goes in single quotes */
const shellWord = (s: string) => (/^[A-Za-z0-9._:\/@+=-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`);

/**
 * The command that sets one config key (`lurkbot config set`, services/cli/config-cmd.ts): a
 * string that would read as JSON (true, 123) gets --string.
 */
export function configSetCommand(path: string, value: string | number | boolean): string {
  const text = String(value);
  let looksJson = false;
  try {
    JSON.parse(text);
    looksJson = true;
  } catch {
    // a plain word: taken as a string
  }
  return `npx lurkbot config set ${shellWord(path)} ${shellWord(text)}${typeof value === "string" && looksJson ? " --string" : ""}`;
}

/** `text` with every secret of 8 characters or more replaced by "***" (longest first). */
export function maskSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of [...secrets].filter((x) => x.length >= 8).sort((a, b) => b.length - a.length)) out = out.split(s).join("***");
  return out;
}
