/**
 * The human report: a summary line, then the findings grouped by level (critical first), each
 * with its id, detail and fix; with `--fix`, what was changed first. Colors (level headings
 * only) when writing to a terminal and NO_COLOR is unset.
 */
import { LEVELS, summarize, summaryLine, type Finding, type Level } from "./finding.js";
import type { AppliedFix } from "./fix.js";

const COLOR: Record<Level, string> = { critical: "\x1b[1;31m", warning: "\x1b[1;33m", info: "\x1b[1;36m" };
const RESET = "\x1b[0m";

export interface ReportHeader {
  home: string;
  configPath: string;
  configExists: boolean;
  deep: boolean;
}

export function formatFixes(fixes: readonly AppliedFix[]): string {
  if (fixes.length === 0) return "--fix: nothing to change (no finding can be fixed safely by chmod)\n";
  const lines = ["--fix changed:"];
  for (const f of fixes) lines.push(f.error ? `  NOT ${f.path}: ${f.error}` : `  chmod ${f.to} ${f.path} (was ${f.from})  [${f.id}]`);
  return lines.join("\n") + "\n";
}

export function formatReport(findings: readonly Finding[], header: ReportHeader, color: boolean): string {
  const paint = (level: Level, text: string) => (color ? `${COLOR[level]}${text}${RESET}` : text);
  const lines = [
    `LurkBot security audit of ${header.home} (${header.configExists ? header.configPath : "no config.json: defaults and environment"}${header.deep ? "; with the running system" : ""})`,
    summaryLine(summarize(findings)),
  ];
  if (findings.length === 0) lines.push("", "No finding.");
  for (const level of LEVELS) {
    const group = findings.filter((f) => f.level === level);
    if (group.length === 0) continue;
    lines.push("", paint(level, level.toUpperCase()));
    for (const f of group) {
      lines.push(`  [${f.id}] ${f.title}`);
      lines.push(`    ${f.detail}`);
      lines.push(`    fix: ${f.fix}${f.fixable ? " (--fix does this)" : ""}`);
      if (f.fixCommand) lines.push(`    run: ${f.fixCommand}`);
    }
  }
  return lines.join("\n") + "\n";
}
