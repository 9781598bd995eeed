/**
 * `lurkbot auth probe [PROVIDER[:PROFILE]] [--timeout SEC] [--json]`: one cheap real call per auth
 * profile through an agent-runner (`lurk.agent-runner.auth_probe`: the provider's models list,
 * which costs no tokens), reported per profile: ok, auth failed, rate limited, billing,
 * unreachable, error, no credentials, with its time. An auth failure disables the profile in the
 * runners' state like a real call's (the reply's `disabledUntil`; a new key or login clears it).
 * Exit 0 when every probed profile is ok, 1 otherwise, 2 without a bus, 64 for a bad target.
 */
import type { AgentRunnerAuthProbeReply, AuthProbeResult } from "../../shared/contract/index.js";
import type { Env, LurkConfig } from "../../shared/runtime/config.js";
import { when } from "./auth-bucket.js";
import { withCliBus } from "./bus.js";
import { EXIT, UsageError } from "./errors.js";
import { table } from "./format.js";

const DEFAULT_TIMEOUT_SEC = 10;
const TARGET = /^([a-z0-9][a-z0-9-]{0,63})(?::([A-Za-z0-9._-]{1,64}))?$/;

export const OUTCOME_TEXT: Record<AuthProbeResult["outcome"], string> = {
  ok: "ok", auth_failed: "auth failed", rate_limited: "rate limited", billing: "billing", unreachable: "unreachable", error: "error", no_credentials: "no credentials",
};

/** `openai`, `openai:team` -> the request's provider and profile */
export function probeTarget(arg: string | undefined): { provider?: string; profile?: string } {
  if (arg === undefined) return {};
  const m = TARGET.exec(arg);
  if (!m) throw new UsageError(`"${arg}" is not PROVIDER or PROVIDER:PROFILE (e.g. openai or anthropic:work; see \`lurkbot auth list\`).`, "auth");
  return { provider: m[1]!, ...(m[2] ? { profile: m[2] } : {}) };
}

export async function cmdAuthProbe(cfg: LurkConfig, env: Env, arg: string | undefined, opts: { timeoutSec?: number; json?: boolean }, out: (line: string) => void): Promise<number> {
  const target = probeTarget(arg);
  const sec = opts.timeoutSec ?? DEFAULT_TIMEOUT_SEC;
  if (!(sec >= 0.1 && sec <= 60)) throw new UsageError(`--timeout must be 0.1 to 60 seconds, not ${sec}.`, "auth");
  const timeoutMs = Math.round(sec * 1000);
  return withCliBus(cfg, env, async (bus) => {
    // the probes run side by side, each within timeoutMs; the token of an OAuth profile may be fetched first
    const reply = await bus.call("agent-runner", "auth_probe", { ...target, timeoutMs }, { timeoutMs: timeoutMs * 2 + 5_000 });
    out(opts.json ? JSON.stringify(reply, null, 2) : formatProbe(reply).trimEnd());
    return reply.results.every((r) => r.outcome === "ok") ? EXIT.ok : EXIT.failed;
  });
}

export function formatProbe(reply: AgentRunnerAuthProbeReply): string {
  if (reply.results.length === 0) return `no auth profiles to probe (agent-runner on ${reply.host})\n`;
  const rows = reply.results.map((r) => [r.provider, r.profile, r.kind, r.call, OUTCOME_TEXT[r.outcome], `${r.ms} ms`, detail(r)]);
  const disabled = reply.results.filter((r) => r.disabledUntil !== undefined);
  const notes = disabled.length
    ? `\nnote: ${disabled.map((r) => `${r.provider}/${r.profile}`).join(", ")} ${disabled.length === 1 ? "is" : "are"} now disabled like after a refused call: runs skip ${disabled.length === 1 ? "it" : "them"} until then, or until the key (token, login) is replaced.\n`
    : "";
  return `probed by the agent-runner on ${reply.host}\n\n` + table(["PROVIDER", "PROFILE", "CREDENTIAL", "CALL", "RESULT", "TIME", "DETAIL"], rows, [5]) + notes;
}

function detail(r: AuthProbeResult): string {
  const parts = [
    ...(r.status !== undefined ? [`HTTP ${r.status}`] : []),
    ...(r.message ? [r.message.replace(/\s+/g, " ").slice(0, 120)] : []),
    ...(r.disabledUntil !== undefined ? [`disabled until ${when(r.disabledUntil)}`] : []),
  ];
  return parts.join("; ") || "-";
}
