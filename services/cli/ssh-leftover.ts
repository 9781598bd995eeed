/**
 * The launcher's ssh tunnel, recorded in `<LURKBOT_HOME>/ssh-tunnel.pid` (JSON: ssh pid, launcher
 * pid, the -L forward and the target) at each (re)start. A launcher killed with SIGKILL cannot stop
 * its ssh; the next launcher of that home stops it, but only a process that is still exactly that
 * tunnel (an ssh whose command line has the recorded `-L` forward and target) and no longer the
 * recorded launcher's child.
 */
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
import { procStat } from "../../shared/runtime/port-owner.js";

export interface TunnelRecord {
  pid: number;
  launcher: number;
  forward: string;
  target: string;
}

export function recordTunnel(file: string, record: TunnelRecord): void {
  writeFileSync(file, `${JSON.stringify(record)}\n`, { mode: 0o600 });
}

export function forgetTunnel(file: string): void {
  rmSync(file, { force: true });
}

/** SIGTERM, SIGKILL after graceMs; resolves once it is gone (or a zombie nobody reaps yet). */
export async function stopLeftover(pid: number, graceMs: number): Promise<void> {
  const alive = () => {
    const stat = procStat(pid);
    return stat !== undefined && stat.state !== "Z";
  };
  const wait = async (ms: number) => {
    const deadline = Date.now() + ms;
    while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  };
  try {
    process.kill(pid, "SIGTERM");
    await wait(graceMs);
    if (alive()) process.kill(pid, "SIGKILL");
    await wait(5_000);
  } catch {
    // gone meanwhile
  }
}

/** The pid of a leftover tunnel of an earlier launcher, or null. */
export function leftoverSshTunnel(file: string): number | null {
  try {
    const r = JSON.parse(readFileSync(file, "utf8")) as Partial<TunnelRecord>;
    const pid = Number(r.pid);
    if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid || typeof r.forward !== "string" || typeof r.target !== "string") return null;
    const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    if (args.at(-1) === "") args.pop();
    if (basename(args[0] ?? "") !== "ssh" || !args.includes("-N")) return null;
    if (!args.some((a, i) => a === "-L" && args[i + 1] === r.forward)) return null;
    if (args.at(-2) !== "--" || args.at(-1) !== r.target) return null;
    const stat = procStat(pid);
    if (!stat || stat.state === "Z") return null;
    // still its launcher's child: that launcher runs (the lock said otherwise, but never kill a live one's)
    if (stat.ppid === r.launcher) return null;
    return pid;
  } catch {
    return null;
  }
}
