/**
 * The `tailscale` CLI, as LurkBot uses it to publish a local HTTP service (seeds 001 §10.5):
 * find the binary (PATH, then the macOS app), read the node's state and MagicDNS name from
 * `tailscale status --json`, and turn `tailscale serve|funnel --bg --https=<port> <target>` on
 * and (`... --https=<port> off`) off. Every command runs with execFile and an argument array
 * (never a shell), stdin closed, and a time limit after which it is killed; every failure is a
 * TailscaleError whose message says what to do (the command's stderr, trimmed, when it failed).
 * CLI syntax: Tailscale 1.52 and later (`tailscale serve --help`).
 */
import { execFile, type ExecFileException } from "node:child_process";
import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { z } from "zod";
import { safeParseJson } from "../contract/index.js";

/** where the macOS app keeps its CLI (the seeds' second place to look) */
export const MACOS_TAILSCALE = "/Applications/Tailscale.app/Contents/MacOS/Tailscale";
export const INSTALL_HINT = "install Tailscale (https://tailscale.com/download) and log in with `tailscale up`";

export type TailscaleMode = "serve" | "funnel";
/** what went wrong, for events and tests */
export type TailscaleProblem = "not-installed" | "not-running" | "no-dns-name" | "timeout" | "failed";

export class TailscaleError extends Error {
  constructor(readonly problem: TailscaleProblem, message: string) {
    super(message);
    this.name = "TailscaleError";
  }
}

async function executableFile(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

/** The tailscale binary: the first executable `tailscale` in `pathVar`'s directories, else one of `fallbacks` (the macOS app). */
export async function findTailscale(pathVar: string | undefined, fallbacks: readonly string[] = [MACOS_TAILSCALE]): Promise<string | undefined> {
  for (const dir of (pathVar ?? "").split(delimiter)) {
    if (dir && (await executableFile(join(dir, "tailscale")))) return join(dir, "tailscale");
  }
  for (const file of fallbacks) if (await executableFile(file)) return file;
  return undefined;
}

/** A command's output for an error message: trimmed, control characters removed, at most 500 characters. */
export function trimOutput(text: string): string {
  const clean = text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, "").replace(/[\x00-\x08\x0b-\x1f\x7f]/g, "").trim().replace(/\s*\n\s*/g, " / ");
  return clean.length > 500 ? `${clean.slice(0, 500)}…` : clean;
}

export interface TailscaleOutput {
  stdout: string;
  stderr: string;
}

/**
 * Runs `bin args…` without a shell; resolves with its output when it exits 0. Killed (SIGKILL)
 * after `timeoutMs` or when `signal` aborts; the promise settles by then even if a child of the
 * command keeps its pipes open.
 */
export function runTailscale(bin: string, args: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<TailscaleOutput> {
  const shown = `tailscale ${args.join(" ")}`;
  return new Promise((resolve, reject) => {
    let settled = false;
    let guard: NodeJS.Timeout | undefined;
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(guard);
      signal?.removeEventListener("abort", onAbort);
      fn();
    };
    const timedOut = () => new TailscaleError("timeout", `\`${shown}\` did not finish within ${timeoutMs} ms and was stopped`);
    const child = execFile(bin, [...args], { timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 4 * 1024 * 1024, encoding: "utf8", windowsHide: true }, (err, stdout, stderr) => {
      settle(() => {
        if (!err) return resolve({ stdout, stderr });
        const e = err as ExecFileException;
        if (e.killed || e.signal === "SIGKILL") return reject(signal?.aborted ? new TailscaleError("timeout", `\`${shown}\` was stopped: the channel is stopping`) : timedOut());
        if (e.code === "ENOENT" || e.code === "EACCES") return reject(new TailscaleError("not-installed", `cannot run ${bin} (${e.code}): ${INSTALL_HINT}`));
        const said = trimOutput(stderr || stdout || e.message);
        reject(new TailscaleError("failed", `\`${shown}\` failed (exit ${e.code ?? "?"})${said ? `: ${said}` : ""}`));
      });
    });
    // no prompt can wait for an answer: stdin is closed at once
    child.stdin?.end();
    const stopChild = () => {
      child.kill("SIGKILL");
      child.stdout?.destroy();
      child.stderr?.destroy();
    };
    const onAbort = () => settle(() => {
      stopChild();
      reject(new TailscaleError("timeout", `\`${shown}\` was stopped: the channel is stopping`));
    });
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();
    guard = setTimeout(() => settle(() => {
      stopChild();
      reject(timedOut());
    }), timeoutMs + 1_000);
  });
}

const statusSchema = z.object({
  BackendState: z.string(),
  Self: z.object({ DNSName: z.string().optional() }).loose().nullish(),
}).loose();

export interface TailnetNode {
  /** "Running" when connected; "NeedsLogin", "Stopped", "Starting", … otherwise */
  backendState: string;
  /** the node's MagicDNS name without the trailing dot, e.g. "box.tail1234.ts.net" */
  dnsName: string;
}

/** `tailscale status --json --peers=false`: the node must be Running and have a MagicDNS name. */
export async function tailnetNode(bin: string, timeoutMs: number, signal?: AbortSignal): Promise<TailnetNode> {
  let out: TailscaleOutput;
  try {
    out = await runTailscale(bin, ["status", "--json", "--peers=false"], timeoutMs, signal);
  } catch (err) {
    if (err instanceof TailscaleError && err.problem === "failed") {
      throw new TailscaleError("not-running", `${err.message}; is tailscaled running and this host logged in? Start it (e.g. \`sudo systemctl start tailscaled\`) and run \`tailscale up\``);
    }
    throw err;
  }
  let parsed: z.infer<typeof statusSchema>;
  try {
    parsed = statusSchema.parse(safeParseJson(out.stdout, { maxBytes: 4 * 1024 * 1024 }));
  } catch {
    throw new TailscaleError("failed", `\`tailscale status --json\` printed no usable status: ${trimOutput(out.stdout).slice(0, 200) || "(nothing)"}`);
  }
  if (parsed.BackendState !== "Running") {
    throw new TailscaleError("not-running", `Tailscale is not connected on this host (BackendState "${parsed.BackendState}"): run \`tailscale up\` to log in and connect`);
  }
  const dnsName = (parsed.Self?.DNSName ?? "").replace(/\.$/, "");
  if (!dnsName) throw new TailscaleError("no-dns-name", "this host has no MagicDNS name on the tailnet: turn on MagicDNS and HTTPS certificates in the Tailscale admin console (DNS page)");
  return { backendState: parsed.BackendState, dnsName };
}

/** `https://<dnsName>[:port]/` (443 is left out). */
export function tailnetUrl(dnsName: string, httpsPort: number): string {
  return `https://${dnsName.replace(/\.$/, "")}${httpsPort === 443 ? "" : `:${httpsPort}`}/`;
}

/** `tailscale <mode> --bg --https=<port> <target>`: publish `target` (an http:// URL) in the background (persists across tailscaled restarts). */
export const publishArgs = (mode: TailscaleMode, httpsPort: number, target: string): string[] => [mode, "--bg", `--https=${httpsPort}`, target];

/** `tailscale <mode> --https=<port> off`: remove what `publishArgs` set on that port. */
export const unpublishArgs = (mode: TailscaleMode, httpsPort: number): string[] => [mode, `--https=${httpsPort}`, "off"];
