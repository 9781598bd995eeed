/**
 * A real OpenSSH server for tunnel tests: `/usr/sbin/sshd -D -e -f <cfg>` on a free loopback port
 * as the current user, with its own host key, a client key in authorized_keys, and a known_hosts
 * file holding the host key (so the client never prompts). `SSHD_MISSING` says why tests skip.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./nats.js";

export const SSHD = "/usr/sbin/sshd";
const KEYGEN = ["/usr/bin/ssh-keygen", "/bin/ssh-keygen"].find((p) => existsSync(p)) ?? "ssh-keygen";

export const SSHD_MISSING: string | false = !existsSync(SSHD)
  ? `${SSHD} is not installed (apt install openssh-server openssh-client; .ci/run installs them)`
  : false;

/** pids of live ssh processes whose arguments name this sshd port (our tunnels to the test server) */
export function sshPids(sshdPort: number, parent?: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (state === "Z" || !/(^|\/)ssh$/.test(args[0] ?? "")) continue;
      if (!args.some((a, i) => a === "-p" && args[i + 1] === String(sshdPort))) continue;
      if (parent !== undefined && Number(ppid) !== parent) continue;
      pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

export class TestSshd {
  private child: ChildProcess | undefined;
  private output = "";
  readonly identityFile: string;
  readonly wrongIdentityFile: string;
  readonly knownHostsFile: string;
  readonly port: number;

  private constructor(readonly dir: string, port: number) {
    this.port = port;
    this.identityFile = join(dir, "client_key");
    this.wrongIdentityFile = join(dir, "wrong_key");
    this.knownHostsFile = join(dir, "known_hosts");
  }

  static async start(): Promise<TestSshd> {
    const dir = mkdtempSync(join(tmpdir(), "lurk-sshd-"));
    const sshd = new TestSshd(dir, await freePort());
    const keygen = (file: string) => execFileSync(KEYGEN, ["-q", "-t", "ed25519", "-N", "", "-C", "lurk-test", "-f", file], { stdio: "ignore" });
    keygen(join(dir, "host_key"));
    keygen(sshd.identityFile);
    keygen(sshd.wrongIdentityFile);
    writeFileSync(join(dir, "authorized_keys"), readFileSync(`${sshd.identityFile}.pub`));
    const hostPub = readFileSync(join(dir, "host_key.pub"), "utf8").trim().split(/\s+/).slice(0, 2).join(" ");
    writeFileSync(sshd.knownHostsFile, `[127.0.0.1]:${sshd.port} ${hostPub}\n`);
    // privilege separation needs its empty directory when sshd runs as root
    if (process.getuid?.() === 0) mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
    const cfg = join(dir, "sshd_config");
    writeFileSync(cfg, [
      "ListenAddress 127.0.0.1",
      `Port ${sshd.port}`,
      `HostKey ${join(dir, "host_key")}`,
      `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
      `PidFile ${join(dir, "sshd.pid")}`,
      "UsePAM no",
      "StrictModes no",
      "PasswordAuthentication no",
      "KbdInteractiveAuthentication no",
      "PermitRootLogin prohibit-password",
      "AllowTcpForwarding local",
      "LogLevel VERBOSE",
      "",
    ].join("\n"));
    await sshd.spawn(cfg);
    return sshd;
  }

  private async spawn(cfg: string): Promise<void> {
    const child = spawn(SSHD, ["-D", "-e", "-f", cfg], { stdio: ["ignore", "ignore", "pipe"] });
    this.child = child;
    child.stderr!.on("data", (d: Buffer) => (this.output = (this.output + d.toString()).slice(-20_000)));
    const deadline = Date.now() + 10_000;
    while (!this.output.includes(`Server listening on 127.0.0.1 port ${this.port}`)) {
      if (child.exitCode !== null) throw new Error(`sshd exited with ${child.exitCode}:\n${this.output}`);
      if (Date.now() > deadline) throw new Error(`sshd did not listen within 10 s:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The login of the current user on this server. */
  get target(): string {
    return `${process.env.USER || execFileSync("id", ["-un"], { encoding: "utf8" }).trim()}@127.0.0.1`;
  }

  /** sshd's log so far (for failure messages). */
  get log(): string {
    return this.output;
  }

  /** nats.ssh settings reaching `remotePort` on this server's loopback. */
  sshConfig(remotePort: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
    return { target: this.target, port: this.port, identityFile: this.identityFile, knownHostsFile: this.knownHostsFile, remotePort, connectTimeoutMs: 8_000, ...overrides };
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      await new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      });
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
