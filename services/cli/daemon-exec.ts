/**
 * The service managers' commands for `lurkbot daemon`: every one through execFile with an
 * argument array (no shell) and a timeout, never throwing: the caller reads `code` and decides.
 * With `dryRun` nothing runs: each command is printed as it would be run and "succeeds".
 *
 * Test-only overrides (not for operators): LURKBOT_DAEMON_SYSTEMCTL, LURKBOT_DAEMON_LOGINCTL,
 * LURKBOT_DAEMON_JOURNALCTL and LURKBOT_DAEMON_LAUNCHCTL name the binaries (default: found on
 * PATH); LURKBOT_DAEMON_UNIT_DIR the directory of the unit or plist; LURKBOT_DAEMON_PLATFORM
 * (linux or darwin) the platform. The tests point them at fake executables and a scratch dir.
 */
import { execFile } from "node:child_process";
import type { Env } from "../../shared/runtime/config.js";

export type Tool = "systemctl" | "loginctl" | "journalctl" | "launchctl";

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
  /** the binary was not found (ENOENT) */
  missing: boolean;
  /** killed after the timeout */
  timedOut: boolean;
}

const DEFAULT_TIMEOUT_MS = 30_000;

/** The CLI's environment without the secrets it carries (stored keys, NATS passwords): the service managers need none. */
function withoutSecrets(env: Env): Env {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !/KEY|TOKEN|SECRET|PASS/i.test(name)));
}

export class Runner {
  private readonly env: Env;

  constructor(env: Env, readonly dryRun: boolean, private readonly print: (line: string) => void) {
    this.env = withoutSecrets(env);
  }

  binary(tool: Tool): string {
    return this.env[`LURKBOT_DAEMON_${tool.toUpperCase()}`] || tool;
  }

  /** `tool args…` as a shell would show it (for messages and --dry-run) */
  show(tool: Tool, args: string[]): string {
    return [tool, ...args].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`)).join(" ");
  }

  run(tool: Tool, args: string[], timeoutMs = DEFAULT_TIMEOUT_MS): Promise<CommandResult> {
    if (this.dryRun) {
      this.print(`would run: ${this.show(tool, args)}`);
      return Promise.resolve({ code: 0, stdout: "", stderr: "", missing: false, timedOut: false });
    }
    return new Promise((resolve) => {
      execFile(this.binary(tool), args, { env: this.env as NodeJS.ProcessEnv, timeout: timeoutMs, maxBuffer: 4 * 1024 * 1024, encoding: "utf8" }, (err, stdout, stderr) => {
        const e = err as (NodeJS.ErrnoException & { code?: string | number; killed?: boolean; signal?: string }) | null;
        const missing = e?.code === "ENOENT";
        const timedOut = !!e?.killed && e.signal === "SIGTERM";
        const code = !e ? 0 : typeof e.code === "number" ? e.code : 1;
        resolve({ code, stdout: stdout ?? "", stderr: missing ? `${this.binary(tool)}: not found` : stderr ?? "", missing, timedOut });
      });
    });
  }
}

/** The first line of what a failed command said, for an error message. */
export function failure(r: CommandResult): string {
  if (r.missing) return "not installed";
  if (r.timedOut) return "timed out";
  const said = (r.stderr.trim() || r.stdout.trim()).split("\n")[0];
  return said ? `exit ${r.code}: ${said}` : `exit ${r.code}`;
}
