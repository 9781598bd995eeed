/**
 * What the channel steps share (steps-channels.ts: Telegram, Discord and Slack tokens;
 * steps-signal-matrix.ts: Signal's daemon, Matrix's token; steps-whatsapp.ts: WhatsApp's
 * token and app secret): asking for a token, and what follows
 * a failed live check: again, keep, leave the channel off (its tokens forgotten), cancel; with
 * --non-interactive the wizard ends (exit 1) unless --skip-check.
 */
import { CHANNEL_TOKEN_ENV } from "../../../shared/runtime/config-channels.js";
import type { CheckResult } from "./checks.js";
import { WizardCancelled } from "./prompt.js";
import type { ChatChannel, StepResult, WizardSession } from "./session.js";
import { CheckFailed } from "./steps-model.js";

type TokenSpec = (typeof CHANNEL_TOKEN_ENV)[number];

/**
 * The token of `spec` (question id `id`): the one set already when the user keeps it (one from
 * config.json moves to secrets.json), else asked without echo. `again`: the step is run again
 * after a failed check, so the token is asked for.
 */
export async function channelToken(s: WizardSession, spec: TokenSpec, id: string, label: string, again: boolean, validate: (v: string) => string | undefined): Promise<string> {
  const name = spec.env;
  const found = s.existingSecret(name, `channels.${spec.channel}.${spec.field}`);
  if (found && !again && !s.hasPreset(id)) {
    if (await s.prompt.confirm({ id: `keep${id[0]!.toUpperCase()}${id.slice(1)}`, message: `The ${label} is set (${found.source}); use it?`, default: true })) {
      if (found.source.includes("config.json")) s.state.secrets[name] = found.value;
      return found.value;
    }
  }
  s.prompt.say(`${label}: ${spec.where}.`);
  const token = await s.prompt.secret({ id, message: label, validate });
  s.state.secrets[name] = token;
  return token;
}

/**
 * Reports a failed check and asks what now (a person), or ends the wizard (--non-interactive:
 * "the live check of the <label> failed: <problem>. <advice>, or add --skip-check.").
 * `again`: the step to go back to, and its choice's label.
 */
export async function afterChannelCheck(
  s: WizardSession, channel: ChatChannel, label: string, result: Extract<CheckResult, { ok: false }>,
  opts: { again: string; againLabel: string; advice: string },
): Promise<StepResult> {
  s.prompt.say(`  check failed: ${result.problem}.`);
  s.prompt.say(`  what to do: ${result.fix}.`);
  if (!s.prompt.interactive) throw new CheckFailed(`the live check of the ${label} failed: ${result.problem}. ${opts.advice}, or add --skip-check.`);
  const next = await s.prompt.select({
    id: "checkFailed", message: "What now?", default: "again",
    choices: [
      { value: "again", label: opts.againLabel },
      { value: "keep", label: "keep it anyway" },
      { value: "drop", label: `leave ${channel} off` },
      { value: "cancel", label: "cancel (nothing is written)" },
    ],
  });
  if (next === "cancel") throw new WizardCancelled("cancelled after the failed check");
  if (next === "again") return { goto: opts.again };
  if (next === "drop") {
    s.state.channels = s.state.channels.filter((c) => c !== channel);
    for (const t of CHANNEL_TOKEN_ENV.filter((t) => t.channel === channel)) delete s.state.secrets[t.env];
  }
  return undefined;
}
