/**
 * The bubblewrap sandbox both the tools actor's exec (services/tools/exec/sandbox.ts) and the
 * agent-runner's OCR (shared/runtime/documents/ocr.ts) run programs in: no network, a read-only
 * system, a private /tmp, /proc and /dev, one writable working directory, a clean environment,
 * new pid/ipc/uts namespaces, no capabilities, and the process dying with its parent.
 */
import { spawn } from "node:child_process";
import { accessSync, constants, lstatSync, readlinkSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LurkError } from "../contract/index.js";

/** Whether this process may execute `path`. */
export function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export const SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** The whole environment a command sees: nothing of ours (no secrets, no LURKBOT_*). */
export function sandboxEnv(workspace: string): Record<string, string> {
  return { PATH: SANDBOX_PATH, HOME: workspace, PWD: workspace, LANG: "C.UTF-8", TERM: "dumb", TMPDIR: "/tmp" };
}

/** /etc entries a shell and common tools need; the rest of /etc (shadow, keys...) stays out. */
const ETC_ENTRIES = [
  "passwd", "group", "hosts", "hostname", "nsswitch.conf", "resolv.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
  "alternatives", "ssl", "ca-certificates", "ca-certificates.conf", "pki", "localtime", "timezone", "bash.bashrc",
  "profile", "profile.d", "inputrc", "mime.types", "os-release", "debian_version", "lsb-release", "gitconfig", "magic",
  "services", "protocols", "locale.alias", "locale.gen", "environment", "login.defs",
];

/** bubblewrap's arguments up to (not including) `--`. */
export function bwrapArgs(workspace: string, env: Record<string, string>): string[] {
  const args = [
    "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
    "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "lurkbot",
    "--ro-bind", "/usr", "/usr",
  ];
  for (const dir of ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]) {
    try {
      const st = lstatSync(dir);
      if (st.isSymbolicLink()) args.push("--symlink", readlinkSync(dir), dir);
      else if (st.isDirectory()) args.push("--ro-bind", dir, dir);
    } catch {
      // not on this system
    }
  }
  for (const entry of ETC_ENTRIES) args.push("--ro-bind-try", `/etc/${entry}`, `/etc/${entry}`);
  args.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run");
  args.push("--bind", workspace, workspace, "--chdir", workspace);
  // the root bwrap built (where /etc and the mount points live) becomes read-only too
  args.push("--remount-ro", "/", "--clearenv");
  for (const [key, value] of Object.entries(env)) args.push("--setenv", key, value);
  return args;
}


/** A program on the sandbox's PATH (what a sandboxed run finds too), or undefined. */
export function findProgram(name: string): string | undefined {
  return SANDBOX_PATH.split(":").map((dir) => join(dir, name)).find(executable);
}

export interface ProgramRun { code: number | null; stdout: string; stderr: string }

/** most stdout kept from one run (a document's text is far less) */
const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

/**
 * Runs `argv` in `dir` with the sandbox's clean environment: inside bubblewrap (`dir` its only
 * writable directory) when `bwrap` is given, else as a plain child. Its process group is killed
 * at `deadline` (epoch ms) or when `signal` fires; the result then has a null or non-zero code.
 * Rejects (UNAVAILABLE) only when the program cannot be started.
 */
export function runProgram(argv: string[], dir: string, bwrap: string | undefined, deadline: number, signal?: AbortSignal): Promise<ProgramRun> {
  const env = sandboxEnv(dir);
  const [cmd, args] = bwrap ? [bwrap, [...bwrapArgs(dir, env), "--", ...argv]] : [argv[0]!, argv.slice(1)];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => { if (stdout.length < MAX_OUTPUT_BYTES) stdout += d.toString("utf8"); });
    child.stderr.on("data", (d: Buffer) => { if (stderr.length < 8192) stderr += d.toString("utf8"); });
    const kill = () => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // gone
      }
    };
    const timer = setTimeout(kill, Math.max(0, deadline - Date.now()));
    signal?.addEventListener("abort", kill, { once: true });
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(new LurkError("UNAVAILABLE", `${argv[0]} cannot be started: ${err.message}`));
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", kill);
      resolve({ code, stdout, stderr });
    });
  });
}

const works = new Map<string, Promise<boolean>>();

/** Whether bubblewrap at `bwrapPath` can build its sandbox here (one trial run of `true`, once per path and process). */
export function bwrapWorks(bwrapPath: string): Promise<boolean> {
  let trial = works.get(bwrapPath);
  if (!trial) {
    trial = (async () => {
      const truePath = findProgram("true");
      if (!executable(bwrapPath) || !truePath) return false;
      const dir = await mkdtemp(join(tmpdir(), "lurkbot-bwrap-probe-"));
      try {
        return (await runProgram([truePath], dir, bwrapPath, Date.now() + 10_000)).code === 0;
      } catch {
        return false;
      } finally {
        await rm(dir, { recursive: true, force: true }).catch(() => undefined);
      }
    })();
    works.set(bwrapPath, trial);
  }
  return trial;
}
