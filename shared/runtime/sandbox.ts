/**
 * The bubblewrap sandbox both the tools actor's exec (services/tools/exec/sandbox.ts) and the
 * agent-runner's OCR (shared/runtime/documents/ocr.ts) run programs in: no network, a read-only
 * system, a private /tmp, /proc and /dev, one writable working directory, a clean environment,
 * new pid/ipc/uts namespaces, no capabilities, and the process dying with its parent.
 */
import { accessSync, constants, lstatSync, readlinkSync } from "node:fs";

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

