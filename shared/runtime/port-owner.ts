/**
 * Which process listens on a loopback port (Linux, from /proc): an SSH tunnel's local port is only
 * used while the socket listening on 127.0.0.1:<port>, and every connection accepted there, is the
 * ssh child's own. Another local user
 * who binds that port while ssh restarts must not receive a NATS CONNECT (user and password).
 * Elsewhere (no /proc/net/tcp) the check answers "unchecked" and callers go on (documented limit).
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { LurkError } from "../contract/index.js";

export interface PortSocket {
  inode: string;
  uid: number;
  listening: boolean;
}

// a LISTEN socket on these takes connections to 127.0.0.1: 127.0.0.1, 0.0.0.0, ::, ::ffff:127.0.0.1
const V4 = new Set(["0100007F", "00000000"]);
const V6 = new Set(["00000000000000000000000000000000", "0000000000000000FFFF00000100007F"]);
// the local address of a connection accepted on 127.0.0.1
const LOOPBACK = new Set(["0100007F", "0000000000000000FFFF00000100007F"]);

/**
 * The sockets on 127.0.0.1:port that belong to a process: the LISTEN sockets that accept connections
 * to it and the connections accepted on it (the server side); undefined when /proc/net/tcp cannot be
 * read. Sockets with inode 0 (not yet accepted, or closed by their process) are left out.
 */
function portSockets(port: number): PortSocket[] | undefined {
  if (process.platform !== "linux") return undefined;
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  const found: PortSocket[] = [];
  let readAny = false;
  for (const [file, listenAddrs] of [["/proc/net/tcp", V4], ["/proc/net/tcp6", V6]] as const) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    readAny = true;
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[9] === "0") continue;
      const [addr, p] = f[1]!.split(":");
      if (p !== hexPort) continue;
      const listening = f[3] === "0A"; // 0A: LISTEN
      if (listening ? !listenAddrs.has(addr!) : !LOOPBACK.has(addr!)) continue;
      found.push({ inode: f[9]!, uid: Number(f[7]), listening });
    }
  }
  return readAny ? found : undefined;
}

/** The socket inodes among a process's open files (empty when it is gone or not ours to read). */
function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return inodes;
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}

/** A process's state letter ("Z": a zombie) and parent pid, from /proc/<pid>/stat; undefined when it is gone (or not Linux). */
export function procStat(pid: number | string): { state: string; ppid: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { state: state!, ppid: Number(ppid) };
  } catch {
    return undefined;
  }
}

/** Live child processes of `parent` (from /proc/<pid>/stat). */
function childPids(parent: number): number[] {
  const pids: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return pids;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(entry);
    if (stat && stat.state !== "Z" && stat.ppid === parent) pids.push(Number(entry));
  }
  return pids;
}

export type ListenerCheck =
  | { state: "ours" }
  /** nothing listens (ssh not bound yet, or gone) */
  | { state: "none" }
  /** no /proc/net/tcp: not Linux, the check is not made */
  | { state: "unchecked" }
  | { state: "foreign"; uid: number };

/**
 * Whether every socket on 127.0.0.1:port (listening, or a connection accepted on it) is held by one
 * of `holders()`: a process that took the port, or still holds a connection it accepted there
 * before it gave the port back, is "foreign". A socket closed between the reads is no stranger's.
 */
export function checkListener(port: number, holders: () => number[]): ListenerCheck {
  const sockets = portSockets(port);
  if (sockets === undefined) return { state: "unchecked" };
  const held = () => {
    const inodes = new Set<string>();
    for (const pid of holders()) for (const inode of socketInodes(pid)) inodes.add(inode);
    return inodes;
  };
  let ours = held();
  let strangers = sockets.filter((s) => !ours.has(s.inode));
  if (strangers.length) {
    // read again: a connection our holder closed meanwhile is gone (or inode 0) now
    const still = new Set((portSockets(port) ?? []).map((s) => s.inode));
    ours = held();
    strangers = strangers.filter((s) => still.has(s.inode) && !ours.has(s.inode));
  }
  if (strangers.length) return { state: "foreign", uid: strangers[0]!.uid };
  return sockets.some((s) => s.listening) ? { state: "ours" } : { state: "none" };
}

export function foreignListenerMessage(port: number, uid?: number): string {
  return `another process listens on 127.0.0.1:${port}: the tunnel will not use it${uid === undefined ? "" : ` (the socket belongs to uid ${uid}${uid === process.getuid?.() ? ", this user" : ""})`}. ` +
    "A program took the tunnel's port (it is free while ssh starts or restarts); no NATS password is sent to it. Find it with `ss -ltnp` (or `lsof -i`), then start again.";
}

/** Env of the processes the launcher gives a tunnel's URL: the pid whose ssh child must hold the port. */
export const TUNNEL_PARENT_ENV = "LURKBOT_NATS_TUNNEL_PARENT";

/**
 * For a connection to a tunnel of the launcher named in LURKBOT_NATS_TUNNEL_PARENT: a check run
 * before each NATS CONNECT (nats.js authenticator) that throws UNAVAILABLE unless the listener on
 * the URL's port belongs to a child of that launcher (its ssh). Undefined without that variable.
 */
export function tunnelGuard(url: string, env: Record<string, string | undefined>): (() => void) | undefined {
  const parent = Number(env[TUNNEL_PARENT_ENV]);
  if (!env[TUNNEL_PARENT_ENV] || !Number.isInteger(parent) || parent <= 1) return undefined;
  const m = /^nats:\/\/127\.0\.0\.1:(\d+)$/.exec(url.trim());
  if (!m) return undefined;
  const port = Number(m[1]);
  return () => {
    const r = checkListener(port, () => childPids(parent));
    if (r.state === "foreign") throw new LurkError("UNAVAILABLE", foreignListenerMessage(port, r.uid), { retryable: false });
    if (r.state === "none") throw new LurkError("UNAVAILABLE", `nothing listens on 127.0.0.1:${port} any more (the ssh tunnel is restarting): not sending the NATS password`);
  };
}

/** A nats.js authenticator sending user and password only after `guard` passed. */
export function guardedAuthenticator(user: string, pass: string, guard: () => void): () => { user: string; pass: string } {
  return () => {
    guard();
    return { user, pass };
  };
}
