/**
 * `lurkbot security audit [--deep] [--fix] [--json]`: what in this LurkBot setup is exposed or
 * unsafe, why, and the exact fix. Checks (services/cli/audit/): network exposure (Tailscale
 * publishing of the web chat included, and a serve or funnel tailscaled still keeps to it), secrets and
 * file modes, chat access, tools and approvals, the browser actor's settings and files, MCP servers' secrets and URLs, from the
 * config, the environment and the files under LURKBOT_HOME; with --deep also the running system
 * over the bus. --fix applies only the
 * chmod repairs, then audits again and reports what remains. Secrets are never printed: every
 * text goes through a mask of the secrets this process knows.
 * Exit codes: 0 no critical finding, 1 a critical finding (after --fix: one that remains),
 * 2 --deep could not reach the bus (and no critical finding), 64 usage, 78 a config that does not load.
 */
import { existsSync, readFileSync } from "node:fs";
import { safeParseJson } from "../../shared/contract/index.js";
import { configFilePath, configSecrets, loadConfig, type Env, type LurkConfig } from "../../shared/runtime/config.js";
import { readCredentials } from "../../shared/runtime/credentials.js";
import { isSecretEnvName } from "../../shared/runtime/secret-env.js";
import type { ParsedCommand } from "./args.js";
import { EXIT } from "./errors.js";
import { checkSubcommand } from "./subcommands.js";
import { accessChecks } from "./audit/access.js";
import { browserChecks, browserUsed } from "./audit/browser.js";
import { browserFileChecks } from "./audit/browser-files.js";
import { deepChecks } from "./audit/deep.js";
import { configSecretEntries, fileChecks } from "./audit/files.js";
import { publicFinding, sortFindings, summarize, type AuditContext, type AuditFinding, type Finding, type Summary } from "./audit/finding.js";
import { applyFixes, type AppliedFix } from "./audit/fix.js";
import { formatFixes, formatReport } from "./audit/format.js";
import { matrixChecks } from "./audit/matrix.js";
import { mcpChecks } from "./audit/mcp.js";
import { networkChecks } from "./audit/network.js";
import { signalChecks } from "./audit/signal.js";
import { whatsappChecks } from "./audit/whatsapp.js";
import { tailscaleChecks, tailscaleStaleChecks } from "./audit/tailscale.js";
import { storedChannelSecrets } from "./audit/tokens.js";
import { execEnabled, toolChecks } from "./audit/tools.js";

export interface SecurityIo {
  out(text: string): void;
  /** level headings in color (a terminal without NO_COLOR) */
  color: boolean;
}

export interface AuditResult {
  findings: AuditFinding[];
  /** --deep could not reach (or log into) the bus */
  busDown: boolean;
}

/** The JSON of `--json`. */
export interface AuditReport {
  home: string;
  deep: boolean;
  summary: Summary;
  findings: Finding[];
  /** with --fix: what was changed, and the summary before it */
  fixes?: AppliedFix[];
  before?: Summary;
}

export function auditContext(config: LurkConfig, env: Env): AuditContext {
  const configPath = configFilePath(config.home);
  let rawConfig: Record<string, unknown> | undefined;
  if (existsSync(configPath)) {
    // loadConfig read it already; a file it accepted parses here too
    const parsed = safeParseJson(readFileSync(configPath), { maxBytes: 4 * 1024 * 1024 });
    rawConfig = parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  }
  return { config, env, configPath, rawConfig };
}

export async function runAudit(ctx: AuditContext, deep: boolean): Promise<AuditResult> {
  const findings: AuditFinding[] = [...networkChecks(ctx), ...tailscaleChecks(ctx), ...await tailscaleStaleChecks(ctx), ...fileChecks(ctx), ...accessChecks(ctx), ...matrixChecks(ctx), ...signalChecks(ctx), ...whatsappChecks(ctx), ...await toolChecks(ctx), ...browserChecks(ctx), ...browserFileChecks(ctx), ...mcpChecks(ctx)];
  let busDown = false;
  if (deep) {
    const d = await deepChecks(ctx.config, ctx.env, { execUsed: execEnabled(ctx.config), browserUsed: browserUsed(ctx.config) });
    findings.push(...d.findings);
    busDown = !d.reachable;
  }
  return { findings: sortFindings(findings), busDown };
}

/** Every secret this process can know of, to mask in any output. */
export function knownSecrets(ctx: AuditContext): string[] {
  const out = [...configSecrets(ctx.config)];
  try {
    out.push(...Object.values(readCredentials(ctx.config.nats.credentialsFile).users));
  } catch {
    // no or unreadable credentials: nothing of theirs to mask
  }
  for (const fields of Object.values(storedChannelSecrets(ctx.config))) out.push(...Object.values(fields ?? {}).filter((v): v is string => typeof v === "string"));
  for (const [name, value] of Object.entries(ctx.env)) if (value && isSecretEnvName(name)) out.push(value);
  for (const [, value] of configSecretEntries(ctx.rawConfig)) out.push(value);
  return [...new Set(out)];
}

const SUBCOMMANDS = { audit: { arg: "none" as const, options: ["deep", "fix", "json"] } };

export async function cmdSecurity(p: ParsedCommand, env: Env, io: SecurityIo): Promise<number> {
  checkSubcommand(p, "security", SUBCOMMANDS, "");
  const deep = p.options.deep === true;
  const ctx = auditContext(loadConfig(env), env);
  let result = await runAudit(ctx, deep);
  let fixes: AppliedFix[] | undefined;
  let before: Summary | undefined;
  if (p.options.fix === true) {
    before = summarize(result.findings);
    fixes = applyFixes(result.findings);
    // the repairs change file modes only: the config and config.json read before still hold
    result = await runAudit(ctx, deep);
  }
  const secrets = knownSecrets(ctx);
  const findings = result.findings.map((f) => publicFinding(f, secrets));
  if (p.options.json) {
    const report: AuditReport = { home: ctx.config.home, deep, summary: summarize(findings), findings, ...(fixes ? { fixes, before } : {}) };
    io.out(JSON.stringify(report, null, 2) + "\n");
  } else {
    if (fixes) io.out(formatFixes(fixes) + "\nafter the fixes:\n");
    io.out(formatReport(findings, { home: ctx.config.home, configPath: ctx.configPath, configExists: ctx.rawConfig !== undefined, deep }, io.color));
  }
  if (findings.some((f) => f.level === "critical")) return EXIT.failed;
  return result.busDown ? EXIT.busDown : EXIT.ok;
}
