/**
 * `lurkbot security audit` as a user runs it, for the audit tests: a fresh LURKBOT_HOME made by
 * `lurkbot setup`, its config.json, and the audit's --json report validated against its exact
 * shape (ids, levels, fixes; no other field).
 */
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { runCli, type CliRun } from "./cli.js";
import { freePort } from "./nats.js";

const findingSchema = z.object({
  id: z.string().regex(/^[a-z0-9-]+(\.[a-z0-9-]+)+$/),
  level: z.enum(["critical", "warning", "info"]),
  title: z.string().min(1),
  detail: z.string().min(1),
  fix: z.string().min(1),
  /** a fix that is one config change: the exact command (services/cli/config-cmd.ts) */
  fixCommand: z.string().regex(/^npx lurkbot config set \S+ \S+( --string)?$/).optional(),
  fixable: z.boolean(),
}).strict();
const countsSchema = z.object({ critical: z.number().int().min(0), warning: z.number().int().min(0), info: z.number().int().min(0) }).strict();
export const reportSchema = z.object({
  home: z.string(),
  deep: z.boolean(),
  summary: countsSchema,
  findings: z.array(findingSchema),
  fixes: z.array(z.object({ id: z.string(), path: z.string(), from: z.string(), to: z.string(), error: z.string().optional() }).strict()).optional(),
  before: countsSchema.optional(),
}).strict();
export type Report = z.infer<typeof reportSchema>;

const roots: string[] = [];

/** A temporary directory removed by `removeAuditDirs`. */
export function auditTempDir(prefix = "lurk-audit-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  roots.push(dir);
  return dir;
}

export function removeAuditDirs(): void {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
}

/** A fresh LURKBOT_HOME made by `lurkbot setup`, and the environment that points the CLI at it. */
export async function freshHome(config?: Record<string, unknown>, extraEnv: Record<string, string> = {}): Promise<{ home: string; env: Record<string, string> }> {
  const home = join(auditTempDir(), "home");
  // nothing listens on a freshly freed port: --deep finds the bus down
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", LURKBOT_HOME: home, LURKBOT_NATS_URL: `nats://127.0.0.1:${await freePort()}`, ...extraEnv };
  const setup = await runCli(["setup"], env);
  assert.equal(setup.code, 0, setup.stderr);
  if (config) writeConfig(home, config);
  return { home, env };
}

export function writeConfig(home: string, config: Record<string, unknown>, mode = 0o600): void {
  writeFileSync(join(home, "config.json"), JSON.stringify(config, null, 2) + "\n", { mode });
  chmodSync(join(home, "config.json"), mode);
}

export async function audit(env: Record<string, string>, ...flags: string[]): Promise<{ run: CliRun; report: Report }> {
  const run = await runCli(["security", "audit", "--json", ...flags], env, { timeoutMs: 60_000 });
  let parsed: unknown;
  try {
    parsed = JSON.parse(run.stdout);
  } catch {
    assert.fail(`not JSON (exit ${run.code}): ${run.stdout}\n${run.stderr}`);
  }
  return { run, report: reportSchema.parse(parsed) };
}

export const byId = (r: Report, id: string) => r.findings.find((f) => f.id === id);
export function level(r: Report, id: string): string | undefined {
  return byId(r, id)?.level;
}
export function assertNoSecret(run: CliRun, ...secrets: string[]): void {
  for (const s of secrets) {
    assert.ok(!run.stdout.includes(s), `stdout shows a secret: ${s.slice(0, 4)}…`);
    assert.ok(!run.stderr.includes(s), `stderr shows a secret: ${s.slice(0, 4)}…`);
  }
}
export const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
