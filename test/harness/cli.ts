/** Running the `lurkbot` command as a user would: `node dist/services/cli/main.js ...args`. */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { DIST_ROOT } from "../../shared/scripts/paths.js";

export const CLI_MAIN = join(DIST_ROOT, "services", "cli", "main.js");

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to completion (SIGKILL after timeoutMs), optionally feeding stdin. */
export function runCli(args: string[], env: Record<string, string>, opts: { timeoutMs?: number; input?: string } = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI_MAIN, ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 30_000);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input);
  });
}

export interface RunningCli {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** A CLI process whose output is read while it runs (tail, a login); `stdin: "pipe"` to write to it. */
export function startCli(args: string[], env: Record<string, string>, stdin: "ignore" | "pipe" = "ignore"): RunningCli {
  const child = spawn(process.execPath, [CLI_MAIN, ...args], { env, stdio: [stdin, "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}
