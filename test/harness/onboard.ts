/**
 * Homes for `lurkbot onboard` tests: a temp LurkBot home per case (removed by `cleanup`), an
 * environment that points HOME and LURKBOT_HOME there, and the wizard run with its answers as
 * input lines; `assertNowhere`: secrets shown nowhere (output, config.json).
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli, type CliRun } from "./cli.js";

export interface OnboardHome {
  dir: string;
  env: Record<string, string>;
}

export class OnboardHomes {
  private readonly dirs: string[] = [];

  constructor(private readonly prefix: string) {}

  /** a fresh home, with `config` as its config.json when given */
  make(extra: Record<string, string> = {}, config?: object): OnboardHome {
    const dir = mkdtempSync(join(tmpdir(), this.prefix));
    this.dirs.push(dir);
    if (config) writeFileSync(join(dir, "config.json"), JSON.stringify(config));
    return { dir, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, LURKBOT_HOME: dir, ...extra } };
  }

  cleanup(): void {
    for (const dir of this.dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  }
}

/** `lurkbot onboard ARGS` in `home`, `lines` typed as its answers (none: no input) */
export const onboard = (home: OnboardHome, args: string[], lines: string[] | undefined, env: Record<string, string> = {}): Promise<CliRun> =>
  runCli(["onboard", ...args], { ...home.env, ...env }, { timeoutMs: 60_000, ...(lines ? { input: lines.map((l) => l + "\n").join("") } : {}) });

/** none of `secrets` in the run's stdout or stderr, or in the home's config.json */
export function assertNowhere(run: CliRun, home: OnboardHome, secrets: string[]): void {
  for (const s of secrets) {
    assert.ok(!run.stdout.includes(s), `stdout shows a secret:\n${run.stdout}`);
    assert.ok(!run.stderr.includes(s), `stderr shows a secret:\n${run.stderr}`);
    const config = join(home.dir, "config.json");
    if (existsSync(config)) assert.ok(!readFileSync(config, "utf8").includes(s), "config.json holds a secret");
  }
}
