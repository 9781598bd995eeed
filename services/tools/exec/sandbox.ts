/**
 * The exec sandbox: bubblewrap with no network, a read-only system, a private /tmp, /proc and
 * /dev, the agent's workspace as the only writable (and working) directory, a clean
 * environment, new pid/ipc/uts namespaces, no capabilities, and the process dying with us.
 *
 * Detected once when the tools actor starts (`probeExecHost`): bwrap must exist at
 * config.tools.exec.bwrapPath *and* be able to create its namespaces (a trial run of `true`).
 * The mode in force is logged and exported as service metadata (`sandbox`):
 *   "bwrap"       commands run in the sandbox;
 *   "none"        no usable bwrap, but config.tools.exec.allowUnsandboxed: commands run as plain
 *                 children (same clean env, limits and process-group kill, but no isolation);
 *   "unavailable" exec is refused with SANDBOX_UNAVAILABLE and how to fix it.
 *
 * Limits are set inside, by the shell prelude (`ulimit`), before the command runs: processes,
 * file size, CPU seconds, address space, open files, no core dumps. The process count is
 * bounded by a pids cgroup when this process can create one (cgroup.ts), since the kernel
 * ignores RLIMIT_NPROC for root; otherwise by RLIMIT_NPROC, which counts every process of the
 * user, so it is set to the user's current count plus maxProcesses.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExecConfig, LurkConfig } from "../../../shared/runtime/config.js";
import type { Logger } from "../../../shared/runtime/logger.js";
import { findPidsCgroupRoot, type PidsCgroupRoot } from "./cgroup.js";
import { bwrapArgs, executable, sandboxEnv } from "../../../shared/runtime/sandbox.js";

// the sandbox's mounts and environment are shared with the agent-runner's OCR (shared/runtime/sandbox.ts)
export { bwrapArgs, sandboxEnv } from "../../../shared/runtime/sandbox.js";

export type SandboxMode = "bwrap" | "none" | "unavailable";

export const BASH = "/bin/bash";

export interface ExecHost {
  mode: SandboxMode;
  /** why bubblewrap is not in use (mode "none" or "unavailable") */
  reason?: string;
  config: ExecConfig;
  /** a pids cgroup can be created per call under this one */
  pidsRoot?: PidsCgroupRoot;
}

/** The refusal message of mode "unavailable": what is wrong and the two ways out. */
export function unavailableMessage(host: ExecHost): string {
  return `exec is disabled: no usable sandbox (${host.reason ?? "bubblewrap is not available"}). `
    + "To enable it, install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: `sudo dnf install bubblewrap`; "
    + "Arch: `sudo pacman -S bubblewrap`), make sure user namespaces are allowed (e.g. sysctl kernel.unprivileged_userns_clone=1, "
    + "or on Ubuntu 24.04+ kernel.apparmor_restrict_unprivileged_userns=0), or point tools.exec.bwrapPath in config.json at it; "
    + "then restart the tools actor. To run commands without a sandbox instead (no isolation: they can read and write "
    + "whatever this user can, and reach the network), set tools.exec.allowUnsandboxed: true in config.json.";
}

/** Tasks (processes and threads) owned by `uid` now: what RLIMIT_NPROC counts. */
export function countUserTasks(uid: number): number {
  let count = 0;
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return 0;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = readFileSync(`/proc/${entry}/status`, "utf8");
      const real = /^Uid:\s+(\d+)/m.exec(status);
      if (!real || Number(real[1]) !== uid) continue;
      count += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1);
    } catch {
      // gone meanwhile
    }
  }
  return count;
}

/**
 * The shell that runs a command: `bash -c PRELUDE lurkbot-exec COMMAND`. The prelude sets the
 * limits, sends stderr into stdout (one stream, in order) and execs a fresh `bash -c COMMAND`.
 * stdin is /dev/null unless `keepStdin` (background jobs of the `process` tool take input).
 */
export function shellArgs(config: ExecConfig, command: string, opts: { nproc?: number; keepStdin?: boolean }): string[] {
  const limits: Array<[string, number]> = [
    ["-f", config.maxFileSizeMb * 1024],
    ["-t", config.cpuSeconds],
    ["-n", config.maxOpenFiles],
    ["-c", 0],
  ];
  if (config.memoryMb > 0) limits.push(["-v", config.memoryMb * 1024]);
  if (opts.nproc !== undefined) limits.push(["-u", opts.nproc]);
  const prelude = limits.map(([flag, value]) => `ulimit -HS ${flag} ${value} 2>/dev/null || ulimit -S ${flag} ${value} 2>/dev/null;`).join(" ")
    + (opts.keepStdin ? " exec 2>&1;" : " exec 2>&1 </dev/null;") + ' exec /bin/bash -c "$1"';
  return ["-c", prelude, "lurkbot-exec", command];
}

/** Runs bwrap once with the real arguments and `true`; undefined if it worked, else why not. */
async function trialRun(config: ExecConfig): Promise<string | undefined> {
  const dir = await mkdtemp(join(tmpdir(), "lurkbot-exec-probe-"));
  try {
    const env = sandboxEnv(dir);
    const args = [...bwrapArgs(dir, env), "--", BASH, ...shellArgs(config, "true", {})];
    return await new Promise<string | undefined>((resolve) => {
      const child = spawn(config.bwrapPath, args, { env, stdio: ["ignore", "pipe", "pipe"], detached: true });
      let stderr = "";
      child.stdout.on("data", (d: Buffer) => (stderr += d.toString()));
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // gone
        }
      }, 10_000);
      child.on("error", (err) => {
        clearTimeout(timer);
        resolve(`${config.bwrapPath} cannot be started: ${err.message}`);
      });
      child.on("close", (code, signal) => {
        clearTimeout(timer);
        if (code === 0) resolve(undefined);
        else resolve(`${config.bwrapPath} cannot create its sandbox here (exit ${code ?? signal}): ${stderr.trim().slice(0, 500) || "no message"}`);
      });
    });
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

export async function probeExecHost(config: ExecConfig, log?: Pick<Logger, "info" | "warn">): Promise<ExecHost> {
  const pidsRoot = await findPidsCgroupRoot();
  const base = { config, ...(pidsRoot ? { pidsRoot } : {}) };
  let reason: string | undefined;
  if (!executable(BASH)) reason = `${BASH} is missing`;
  else if (!existsSync(config.bwrapPath)) reason = `bubblewrap was not found at ${config.bwrapPath}`;
  else if (!executable(config.bwrapPath)) reason = `${config.bwrapPath} is not executable`;
  else reason = await trialRun(config);

  let host: ExecHost;
  if (reason === undefined) host = { mode: "bwrap", ...base };
  else if (config.allowUnsandboxed && executable(BASH)) host = { mode: "none", reason, ...base };
  else host = { mode: "unavailable", reason, ...base };

  const fields = { sandbox: host.mode, pids: pidsRoot ? `cgroup v${pidsRoot.version}` : "rlimit", ...(reason ? { reason } : {}) };
  if (host.mode === "bwrap") log?.info(fields, "exec: commands run in a bubblewrap sandbox");
  else if (host.mode === "none") log?.warn(fields, "exec: NO SANDBOX (tools.exec.allowUnsandboxed): commands run as plain child processes");
  else log?.warn(fields, "exec: disabled (no usable bubblewrap); calls are refused with SANDBOX_UNAVAILABLE");
  return host;
}

const probes = new WeakMap<LurkConfig, Promise<ExecHost>>();

/** One probe per config object (the service metadata and the actor's start share it). */
export function execHostFor(config: LurkConfig, log?: Pick<Logger, "info" | "warn">): Promise<ExecHost> {
  let probe = probes.get(config);
  if (!probe) {
    probe = probeExecHost(config.tools.exec, log);
    probes.set(config, probe);
  }
  return probe;
}

/** Service metadata for `lurkbot status`. */
export function execMetadata(host: ExecHost): Record<string, string> {
  return { sandbox: host.mode, execPids: host.pidsRoot ? "cgroup" : "rlimit" };
}
