/**
 * `lurkbot usage --providers [--json]`: the providers' rate-limit windows per auth profile, as the
 * headers of each profile's last response said (Anthropic `anthropic-ratelimit-*`, OpenAI
 * `x-ratelimit-*`), kept in the agent-runners' memory and gathered from every runner
 * (`lurk.agent-runner.auth_state`, merged: the newest response per profile). A profile whose
 * provider sends no such headers (Ollama, most local servers), or that no runner used since it
 * started, has no row. `--json`: `{ runners, profiles: [{ provider, profile, host, at, status, windows, retryAfterMs? }] }`.
 */
import { formatWait, gatherAuthState } from "../../shared/runtime/auth-state-view.js";
import type { Env, LurkConfig } from "../../shared/runtime/config.js";
import type { ParsedCommand } from "./args.js";
import { ago } from "./auth-list.js";
import { connectCli } from "./bus.js";
import { EXIT, UsageError } from "./errors.js";
import { table } from "./format.js";

export interface ProviderWindowsReport {
  runners: Array<{ host: string; pid: number }>;
  profiles: Array<{ provider: string; profile: string; host: string; at: number; status: number; windows: Array<{ name: string; limit?: number; remaining?: number; resetAt?: number }>; retryAfterMs?: number }>;
}

export function checkProvidersArgs(p: ParsedCommand): void {
  const other = Object.keys(p.options).filter((k) => p.options[k] !== undefined && k !== "providers" && k !== "json");
  if (other.length) throw new UsageError(`--providers shows the providers' rate limits and takes only --json, not ${other.map((o) => `--${o}`).join(", ")}.`, "usage");
}

export async function cmdUsageProviders(p: ParsedCommand, cfg: LurkConfig, env: Env, out: (line: string) => void): Promise<number> {
  checkProvidersArgs(p);
  const nc = await connectCli(cfg, env);
  let report: ProviderWindowsReport;
  try {
    const view = await gatherAuthState(nc, cfg.nats.prefix);
    report = {
      runners: view.runners.map((r) => ({ host: r.host, pid: r.pid })),
      profiles: view.providers.flatMap(({ provider, profiles }) => profiles.flatMap((m) => {
        if (!m.rateLimits) return [];
        const { host, at, status, windows, retryAfterMs } = m.rateLimits;
        return [{ provider, profile: m.id, host, at, status, windows, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) }];
      })),
    };
  } finally {
    await nc.close().catch(() => undefined);
  }
  out(p.options.json ? JSON.stringify(report, null, 2) : formatProviderWindows(report).trimEnd());
  return EXIT.ok;
}

export function formatProviderWindows(r: ProviderWindowsReport, now = Date.now()): string {
  const lines = ["rate limits of each auth profile's last response (the providers' headers, kept by the agent-runners since they started)", ""];
  if (r.runners.length === 0) return lines.concat("no agent-runner answered (start them with `npx lurkbot start`)").join("\n") + "\n";
  if (r.profiles.length === 0) return lines.concat("no response with rate-limit headers yet (Ollama and most local servers send none)").join("\n") + "\n";
  const manyHosts = new Set(r.runners.map((x) => x.host)).size > 1;
  const rows = r.profiles.flatMap((p) => p.windows.map((w, i) => [
    i === 0 ? p.provider : "", i === 0 ? p.profile : "", w.name,
    w.remaining === undefined ? "?" : String(w.remaining), w.limit === undefined ? "?" : String(w.limit),
    w.resetAt === undefined ? "-" : w.resetAt <= now ? "reset" : `in ${formatWait(w.resetAt - now)}`,
    i === 0 ? `${ago(p.at, now)} (HTTP ${p.status}${p.retryAfterMs !== undefined ? `, retry after ${formatWait(p.retryAfterMs)}` : ""}${manyHosts ? `, ${p.host}` : ""})` : "",
  ]));
  return lines.join("\n") + "\n" + table(["PROVIDER", "PROFILE", "WINDOW", "REMAINING", "LIMIT", "RESETS", "SEEN"], rows, [3, 4]);
}
