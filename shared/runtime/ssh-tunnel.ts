/**
 * An SSH local forward kept up for as long as it is used: `ssh -N -L 127.0.0.1:<local>:<remoteHost>:<remotePort>
 * <target>` (argument array, no shell), ready once the local port accepts a connection (and, with
 * `expectGreeting`, once the remote service's first bytes came through: NATS sends INFO at once).
 * Start-up failures are SshTunnelErrors with ssh's own stderr and what to do. An ssh that exits
 * while in use is restarted on the same local port at once, then with backoff (0.5 s doubling to
 * 30 s), so a NATS client that reconnects to that port finds the tunnel again; close() ends it
 * (SIGTERM, SIGKILL after 2 s). Every live ssh child is killed when this process exits or is
 * signalled. Host keys are checked as ssh's own configuration says unless `strictHostKeyChecking`
 * is given; agent and X11 forwarding and LocalCommand are off whatever ~/.ssh/config says.
 * On Linux the tunnel is ready (first open and every restart) only when the socket listening on
 * 127.0.0.1:<local>, and every connection accepted there, is ssh's own (port-owner.ts): if another
 * process took the port while ssh was down, the tunnel ends with a "broken" event (kind foreign-listener) and its users must close
 * their connections; `verifyListener()` is the same check for a NATS authenticator, run before
 * each CONNECT so the password never goes to that process.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createConnection } from "node:net";
import { homedir } from "node:os";
import { z } from "zod";
import { LurkError } from "../contract/index.js";
import { freeLocalPort } from "./free-port.js";
import { checkListener, foreignListenerMessage } from "./port-owner.js";

// no control characters (newlines would end an ssh_config line), no whitespace
const PLAIN = /^[^\s\x00-\x1f\x7f]+$/;

/**
 * `user@host` or a host alias of ~/.ssh/config. Not an option (`-oProxyCommand=…`), no whitespace
 * or control characters, no `ssh://` URI: an argument-injection guard, checked before ssh runs.
 */
export const sshTargetSchema = z.string()
  .min(1, "the ssh target is empty; write user@host or a host alias of ~/.ssh/config")
  .max(255)
  .refine((s) => !s.startsWith("-"), "an ssh target must not start with \"-\" (it would be read as an ssh option); write user@host or a host alias")
  .refine((s) => PLAIN.test(s), "an ssh target must not contain spaces or control characters; write user@host or a host alias")
  .refine((s) => /^(?:[A-Za-z0-9._][A-Za-z0-9._+-]*@)?[A-Za-z0-9_][A-Za-z0-9._:%-]*$/.test(s),
    "an ssh target is user@host or a host alias (letters, digits, . _ - and : for IPv6); set the port with nats.ssh.port, not in the target");

const hostSchema = z.string().min(1).max(255).regex(/^[A-Za-z0-9_][A-Za-z0-9._:%-]*$/, "a host name or an IP address");
const portSchema = z.number().int().min(1).max(65535);
const fileSchema = z.string().min(1).max(4096)
  .refine((s) => !/[\x00-\x1f\x7f"]/.test(s), "a file path without control characters or quotes")
  .refine((s) => !s.startsWith("-"), "a file path must not start with \"-\"");

export const sshTunnelOptionsSchema = z.object({
  target: sshTargetSchema,
  /** the ssh server's port (default: ssh's own, 22 or the alias's Port) */
  port: portSchema.optional(),
  /** private key file (`ssh -i`); default: ssh's own keys and agent */
  identityFile: fileSchema.optional(),
  /** the address the ssh server connects to for us: its loopback by default */
  remoteHost: hostSchema.default("127.0.0.1"),
  remotePort: portSchema.default(4222),
  /** bounds ssh's TCP connect (ConnectTimeout) and the whole start-up (plus 2 s) */
  connectTimeoutMs: z.number().int().min(1000).max(300_000).default(10_000),
  /** ssh's StrictHostKeyChecking; unset: ssh's own setting. `no` is not offered: it would accept any server */
  strictHostKeyChecking: z.enum(["yes", "accept-new"]).optional(),
  /** ssh's UserKnownHostsFile; unset: ssh's own (~/.ssh/known_hosts) */
  knownHostsFile: fileSchema.optional(),
  /** the local port (on 127.0.0.1); default: a free one */
  localPort: portSchema.optional(),
  /** the ssh executable */
  sshPath: fileSchema.default("ssh"),
  /** ready only once the remote service sent its first bytes through the tunnel (NATS sends INFO) */
  expectGreeting: z.boolean().default(false),
});
export type SshTunnelOptions = z.input<typeof sshTunnelOptionsSchema>;
type Spec = z.infer<typeof sshTunnelOptionsSchema>;

export type SshFailure = "auth" | "host-key" | "host-key-changed" | "unreachable" | "forward" | "local-port" | "foreign-listener" | "timeout" | "no-ssh" | "exited";

export class SshTunnelError extends LurkError {
  constructor(readonly kind: SshFailure, message: string) {
    super(kind === "auth" || kind === "host-key" || kind === "host-key-changed" || kind === "no-ssh" ? "CONFIG_INVALID" : "UNAVAILABLE", message, { details: { kind } });
    this.name = "SshTunnelError";
  }
}

export type TunnelEvent =
  | { type: "exited"; code: number | null; signal: string | null; stderr: string; restartInMs: number }
  | { type: "restarted"; pid: number }
  | { type: "restart-failed"; error: SshTunnelError; restartInMs: number }
  /** another process listens on the local port: the tunnel closed itself; close every connection to it */
  | { type: "broken"; error: SshTunnelError };

// the first restart is at once (the port is free for the shortest time), then 0.5 s doubling to 30 s
const RESTART = { initialMs: 500, maxMs: 30_000, healthyMs: 60_000 };
const KILL_GRACE_MS = 2_000;
const live = new Set<ChildProcess>();

/** Validates the options (zod) and returns them with defaults; throws CONFIG_INVALID naming the field. */
export function parseTunnelOptions(opts: SshTunnelOptions): Spec {
  const r = sshTunnelOptionsSchema.safeParse(opts);
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.join(".") || "(options)"}: ${i.message}`).join("; ");
    throw new LurkError("CONFIG_INVALID", `invalid ssh tunnel settings: ${issues}`);
  }
  return r.data;
}

/** the `-L` argument: 127.0.0.1:<local>:<remote host>:<remote port> */
export function forwardSpec(spec: Spec, localPort: number): string {
  const remote = spec.remoteHost.includes(":") ? `[${spec.remoteHost}]` : spec.remoteHost;
  return `127.0.0.1:${localPort}:${remote}:${spec.remotePort}`;
}

/** ssh's arguments (exported for tests and the docs). */
export function sshArgs(spec: Spec, localPort: number): string[] {
  const args = [
    "-N", "-T",
    // no agent or X11 forwarding to the server, whatever ~/.ssh/config says
    "-a", "-x",
    "-L", forwardSpec(spec, localPort),
    "-o", "ForwardAgent=no",
    "-o", "ForwardX11=no",
    "-o", "PermitLocalCommand=no",
    "-o", "ExitOnForwardFailure=yes",
    "-o", "BatchMode=yes",
    "-o", "ServerAliveInterval=15",
    "-o", "ServerAliveCountMax=3",
    "-o", `ConnectTimeout=${Math.ceil(spec.connectTimeoutMs / 1000)}`,
    // our own connection, not a shared ControlMaster one: closing it must end the forward
    "-o", "ControlMaster=no",
    "-o", "ControlPath=none",
  ];
  if (spec.strictHostKeyChecking) args.push("-o", `StrictHostKeyChecking=${spec.strictHostKeyChecking}`);
  if (spec.knownHostsFile) args.push("-o", `UserKnownHostsFile="${expandHome(spec.knownHostsFile)}"`);
  if (spec.port) args.push("-p", String(spec.port));
  if (spec.identityFile) args.push("-i", expandHome(spec.identityFile), "-o", "IdentitiesOnly=yes");
  args.push("--", spec.target);
  return args;
}

function expandHome(path: string): string {
  return path === "~" || path.startsWith("~/") ? homedir() + path.slice(1) : path;
}

/** What ssh's stderr means, and what to do. */
export function explainSshFailure(spec: Spec, stderr: string, code: number | null): SshTunnelError {
  const target = spec.target;
  const said = stderr.trim() ? `ssh said: ${stderr.trim().split("\n").slice(-4).join(" / ")}` : `ssh exited with code ${code} and said nothing`;
  const how = `ssh${spec.port ? ` -p ${spec.port}` : ""}${spec.identityFile ? ` -i ${spec.identityFile}` : ""}${spec.knownHostsFile ? ` -o UserKnownHostsFile=${spec.knownHostsFile}` : ""} ${target}`;
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key for .* has changed/i.test(stderr)) {
    return new SshTunnelError("host-key-changed", `the host key of ${target} has CHANGED since it was accepted: the server was reinstalled, or someone is in between. Check with the server's owner before removing the old key (ssh-keygen -R HOST). ${said}`);
  }
  if (/Host key verification failed|No \S+ host key is known|host key is not known/i.test(stderr)) {
    return new SshTunnelError("host-key", `the host key of ${target} is not known yet: connect once with \`${how}\` in a terminal, check the fingerprint and accept it; then retry. ${said}`);
  }
  if (/Permission denied|Too many authentication failures|no matching .*method|Authentication failed/i.test(stderr)) {
    return new SshTunnelError("auth", `ssh authentication to ${target} failed: the server did not accept the key${spec.identityFile ? ` ${spec.identityFile}` : "s offered (ssh's defaults and agent)"}. Put the public key in ~/.ssh/authorized_keys of that user on the server${spec.identityFile ? "" : ", or set nats.ssh.identityFile"}, and check that \`${how}\` logs in without a password prompt. ${said}`);
  }
  if (/Address already in use|cannot listen to port|Could not request local forwarding/i.test(stderr)) {
    return new SshTunnelError("local-port", `ssh could not listen on 127.0.0.1 for the tunnel (the local port is taken). ${said}`);
  }
  if (/forwarding.*(denied|disabled|prohibited)|administratively prohibited/i.test(stderr)) {
    return new SshTunnelError("forward", `${target} refused to forward to ${spec.remoteHost}:${spec.remotePort}: its sshd must allow it (AllowTcpForwarding yes or local in sshd_config, and no PermitOpen that excludes it). ${said}`);
  }
  if (/open failed/i.test(stderr)) {
    return new SshTunnelError("forward", `the ssh login to ${target} works, but nothing accepts connections at ${spec.remoteHost}:${spec.remotePort} on that host: is LurkBot (its nats-server) running there, and are nats.ssh.remoteHost/remotePort its nats.url's? ${said}`);
  }
  if (/Could not resolve hostname|Name or service not known|Connection refused|Connection timed out|timed out|No route to host|Network is unreachable|Connection closed|Connection reset/i.test(stderr)) {
    return new SshTunnelError("unreachable", `cannot reach the ssh server ${target}${spec.port ? ` port ${spec.port}` : ""}: check the address, that sshd runs there and the firewall. ${said}`);
  }
  return new SshTunnelError("exited", `ssh to ${target} failed. ${said}`);
}


type Probe = "refused" | "open" | "greeted" | "closed";

/** One connection to the local end: refused, accepted (open), accepted and the remote spoke (greeted), or closed at once. */
function probe(port: number, waitGreetingMs: number): Promise<Probe> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    let opened = false;
    const done = (r: Probe) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done(opened ? "open" : "refused"), 1000 + waitGreetingMs);
    socket.once("connect", () => {
      opened = true;
      if (waitGreetingMs === 0) done("open");
    });
    socket.once("data", () => done("greeted"));
    socket.once("close", () => done(opened ? "closed" : "refused"));
    socket.once("error", () => undefined);
  });
}

export class SshTunnel {
  readonly spec: Spec;
  private child: ChildProcess | undefined;
  private port: number | undefined;
  private stderr = "";
  private closing = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private upSince = 0;

  /** Validates the options before anything is spawned. */
  constructor(opts: SshTunnelOptions, private readonly onEvent: (e: TunnelEvent) => void = () => undefined) {
    this.spec = parseTunnelOptions(opts);
  }

  /** the local port (after open) */
  get localPort(): number {
    if (this.port === undefined) throw new Error("the ssh tunnel is not open");
    return this.port;
  }

  /** `nats://127.0.0.1:<local port>` */
  get natsUrl(): string {
    return `nats://127.0.0.1:${this.localPort}`;
  }

  /** the running ssh's pid (undefined between a crash and its restart) */
  get pid(): number | undefined {
    return this.child && this.child.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }

  /** Starts ssh and waits until the tunnel works; throws an SshTunnelError (ssh stopped) otherwise. */
  async open(): Promise<this> {
    const fixed = this.spec.localPort;
    for (let attempt = 0; ; attempt++) {
      const port = fixed ?? await freeLocalPort();
      try {
        await this.startOnce(port);
        this.port = port;
        return this;
      } catch (err) {
        // another program took the free port between our check and ssh's bind: try another
        if (fixed === undefined && err instanceof SshTunnelError && (err.kind === "local-port" || err.kind === "foreign-listener") && attempt < 2 && !this.closing) continue;
        throw err;
      }
    }
  }

  private async startOnce(port: number): Promise<void> {
    if (this.closing) throw new SshTunnelError("exited", "the ssh tunnel was closed");
    const spec = this.spec;
    this.stderr = "";
    const child = spawn(spec.sshPath, sshArgs(spec, port), { stdio: ["ignore", "ignore", "pipe"], shell: false });
    this.child = child;
    live.add(child);
    installExitHooks();
    let spawnError: Error | undefined;
    child.once("error", (err) => (spawnError = err));
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (d: string) => {
      this.stderr = (this.stderr + d).slice(-8192);
    });
    const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
    child.once("exit", () => live.delete(child));
    const deadline = Date.now() + spec.connectTimeoutMs + 2_000;
    const gone = () => child.exitCode !== null || child.signalCode !== null || spawnError !== undefined;
    const fail = async (err: SshTunnelError): Promise<never> => {
      await this.kill(child);
      throw err;
    };
    while (!gone()) {
      if (this.closing) return fail(new SshTunnelError("exited", "the ssh tunnel was closed"));
      const taken = this.owner(child, port);
      if (taken.state === "foreign") return fail(new SshTunnelError("foreign-listener", foreignListenerMessage(port, taken.uid)));
      const r = await probe(port, spec.expectGreeting ? Math.max(0, deadline - Date.now()) : 0);
      // whoever answered must be our ssh, not a process that took the port while ssh was down ("none": it just closed)
      const owner = r === "open" || r === "greeted" ? this.owner(child, port) : undefined;
      if (owner?.state === "foreign") return fail(new SshTunnelError("foreign-listener", foreignListenerMessage(port, owner.uid)));
      if ((r === "open" || r === "greeted") && owner?.state !== "none") {
        if (r === "open" && spec.expectGreeting) return fail(new SshTunnelError("timeout", `the ssh tunnel to ${spec.target} is up, but nothing answered from ${spec.remoteHost}:${spec.remotePort} there within ${spec.connectTimeoutMs} ms. Is LurkBot running on that host?`));
        this.upSince = Date.now();
        child.once("exit", (code, signal) => this.onExit(child, code, signal));
        return;
      }
      if (r === "closed") {
        // ssh listened but the far end dropped the connection: the forward was refused or nothing listens there
        await new Promise((res) => setTimeout(res, 200));
        const err = explainSshFailure(spec, this.stderr, null);
        return fail(err.kind === "forward" ? err : new SshTunnelError("forward", `${spec.target} accepted the ssh login but the connection to ${spec.remoteHost}:${spec.remotePort} there was closed: is LurkBot's nats-server running on that host, and does its sshd allow forwarding (AllowTcpForwarding)?${this.stderr.trim() ? ` ssh said: ${this.stderr.trim()}` : ""}`));
      }
      if (Date.now() > deadline) {
        return fail(new SshTunnelError("timeout", `the ssh tunnel to ${spec.target} did not come up within ${spec.connectTimeoutMs} ms${this.stderr.trim() ? `; ssh said: ${this.stderr.trim()}` : ""}. Check that \`ssh ${spec.target}\` logs in without a prompt.`));
      }
      await new Promise((res) => setTimeout(res, 100));
    }
    await exited;
    // ssh could not bind: is it another process's now?
    const owner = this.owner(child, port);
    if (owner.state === "foreign") throw new SshTunnelError("foreign-listener", foreignListenerMessage(port, owner.uid));
    if (spawnError) {
      const missing = (spawnError as NodeJS.ErrnoException).code === "ENOENT";
      throw new SshTunnelError(missing ? "no-ssh" : "exited", missing ? `cannot run ${spec.sshPath}: the OpenSSH client is not installed (Debian/Ubuntu: apt install openssh-client).` : `cannot run ${spec.sshPath}: ${spawnError.message}`);
    }
    throw explainSshFailure(spec, this.stderr, child.exitCode);
  }

  /** Whether the socket on 127.0.0.1:port is this ssh child's (Linux; "unchecked" elsewhere). */
  private owner(child: ChildProcess, port: number) {
    return checkListener(port, () => (child.pid === undefined ? [] : [child.pid]));
  }

  /**
   * Throws SshTunnelError (kind foreign-listener) when a process other than the running ssh listens
   * on the local port (Linux), and then ends the tunnel with a "broken" event. For a NATS
   * authenticator: called before each CONNECT, so no password goes to that process.
   */
  verifyListener(): void {
    if (this.port === undefined) throw new SshTunnelError("exited", "the ssh tunnel is not open");
    const child = this.child;
    const owner = child && this.pid !== undefined ? this.owner(child, this.port) : checkListener(this.port, () => []);
    if (owner.state === "foreign") {
      const error = new SshTunnelError("foreign-listener", foreignListenerMessage(this.port, owner.uid));
      this.breakDown(error);
      throw error;
    }
    if (owner.state === "none") throw new SshTunnelError("exited", `nothing listens on 127.0.0.1:${this.port} any more (ssh is restarting): the NATS password is not sent`);
  }

  /** Another process has the port: no more restarts; the users must close their connections. */
  private breakDown(error: SshTunnelError): void {
    if (this.closing) return;
    void this.close();
    this.onEvent({ type: "broken", error });
  }

  private onExit(child: ChildProcess, code: number | null, signal: string | null): void {
    if (this.closing || this.child !== child) return;
    const restartInMs = this.nextDelay();
    this.onEvent({ type: "exited", code, signal, stderr: this.stderr.trim(), restartInMs });
    this.scheduleRestart(restartInMs);
  }

  private nextDelay(): number {
    if (Date.now() - this.upSince >= RESTART.healthyMs) this.failures = 0;
    const delay = this.failures === 0 ? 0 : Math.min(RESTART.maxMs, RESTART.initialMs * 2 ** (this.failures - 1));
    this.failures++;
    return delay;
  }

  private scheduleRestart(delayMs: number): void {
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.closing) return;
      this.startOnce(this.localPort).then(
        () => this.onEvent({ type: "restarted", pid: this.child!.pid! }),
        (err: unknown) => {
          if (this.closing) return;
          const error = err instanceof SshTunnelError ? err : new SshTunnelError("exited", String(err));
          if (error.kind === "foreign-listener") return this.breakDown(error);
          const restartInMs = this.nextDelay();
          this.onEvent({ type: "restart-failed", error, restartInMs });
          this.scheduleRestart(restartInMs);
        },
      );
    }, delayMs);
    // a pending restart alone does not keep the process alive
    this.restartTimer.unref();
  }

  private async kill(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) {
      live.delete(child);
      return;
    }
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS);
    await exited;
    clearTimeout(timer);
    live.delete(child);
  }

  /** Stops ssh (SIGTERM, SIGKILL after 2 s) and any pending restart. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    if (this.child) await this.kill(this.child);
  }
}

let hooksInstalled = false;

/** ssh children must not outlive this process: killed on exit, and on a signal nobody else handles. */
function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  const killAll = () => {
    for (const child of live) child.kill("SIGKILL");
    live.clear();
  };
  process.on("exit", killAll);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    const handler = () => {
      // another handler (the launcher, tail, chat) stops in order and exits: the exit hook kills what is left
      if (process.listenerCount(signal) > 1) return;
      // nobody else handles it: end as the default action would, without leaving ssh behind
      killAll();
      process.off(signal, handler);
      process.kill(process.pid, signal);
    };
    process.on(signal, handler);
  }
}
