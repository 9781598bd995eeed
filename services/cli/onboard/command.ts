/**
 * `lurkbot onboard [--advanced] [--reset] [--non-interactive …flags]`: from nothing to a working
 * assistant by answering a few questions (seed 001 §17). The steps (steps-*.ts, finish.ts) run
 * in a WizardSession; the questions come from the terminal or a pipe (LinePrompter), and flags
 * answer theirs first (PresetPrompter). With --non-interactive nothing is asked: a question
 * without its flag takes its default, or is a usage error (exit 64) naming the flag to add.
 * Ctrl-C before the files are written cancels with nothing written (exit 1), also during a live
 * check and when the remaining answers come from flags.
 */
import { existsSync, readFileSync } from "node:fs";
import { configFilePath, defaultHome, type Env } from "../../../shared/runtime/config.js";
import { safeParseJson } from "../../../shared/contract/index.js";
import type { ParsedCommand } from "../args.js";
import { CliError, EXIT, UsageError } from "../errors.js";
import { readStoredSecrets, storedSecretsPath } from "../stored-secrets.js";
import { finishSteps, type FinishState } from "./finish.js";
import { LinePrompter, PresetPrompter, WizardCancelled, type Preset } from "./prompt.js";
import { runWizard, WizardSession, type OnboardState } from "./session.js";
import { ADVANCED_STEPS } from "./steps-advanced.js";
import { CHANNEL_STEPS, tokenId } from "./steps-channels.js";
import { MODEL_STEPS } from "./steps-model.js";
import { SKILLS_HOOKS_STEPS } from "./steps-skills-hooks.js";

export interface OnboardIo {
  out: (line: string) => void;
  err: (line: string) => void;
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream & { isTTY?: boolean };
  /** runs `lurkbot start` with this environment (the stored secrets merged) */
  start: (env: Env) => Promise<number>;
}

/** the flag that answers each question, for "add --x" messages */
const FLAGS: Record<string, string> = {
  security: "--yes", reset: "--yes", mode: "--advanced", provider: "--provider openai|anthropic|openai-compatible|ollama",
  baseUrl: "--base-url URL", model: "--model NAME", apiKey: "--api-key-env NAME", channels: "--channels web,telegram,…",
  telegramToken: "--telegram-token-env NAME", discordToken: "--discord-token-env NAME", slackBotToken: "--slack-bot-token-env NAME",
  slackAppToken: "--slack-app-token-env NAME", dmPolicy: "--dm-policy", natsUrl: "--nats-url URL", workspace: "--workspace DIR",
  toolProfile: "--tool-profile", execApproval: "--exec-approval", heartbeat: "--heartbeat on|off", tts: "--tts",
  signalAccount: "--signal-account +NUMBER", signalUrl: "--signal-url URL", matrixHomeserver: "--matrix-homeserver URL",
  matrixUserId: "--matrix-user-id @BOT:SERVER", matrixToken: "--matrix-token-env NAME", hooks: "--hooks LIST",
  whatsappPhoneNumberId: "--whatsapp-phone-number-id ID", whatsappToken: "--whatsapp-token-env NAME",
  whatsappAppSecret: "--whatsapp-app-secret-env NAME", whatsappVerifyToken: "--whatsapp-verify-token-env NAME",
};

/** plain flags: option name -> question id */
const VALUE_FLAGS: Record<string, string> = {
  provider: "provider", "base-url": "baseUrl", model: "model", "dm-policy": "dmPolicy", "nats-url": "natsUrl",
  workspace: "workspace", "tool-profile": "toolProfile", "exec-approval": "execApproval", tts: "tts",
  "signal-account": "signalAccount", "signal-url": "signalUrl", "matrix-homeserver": "matrixHomeserver", "matrix-user-id": "matrixUserId",
  "whatsapp-phone-number-id": "whatsappPhoneNumberId",
};
/** flags naming an environment variable that holds a secret: option name -> question id */
const SECRET_ENV_FLAGS: Record<string, string> = {
  "api-key-env": "apiKey", "telegram-token-env": tokenId("telegram", "botToken"), "discord-token-env": tokenId("discord", "botToken"),
  "slack-bot-token-env": tokenId("slack", "botToken"), "slack-app-token-env": tokenId("slack", "appToken"),
  "matrix-token-env": tokenId("matrix", "accessToken"), "whatsapp-token-env": tokenId("whatsapp", "accessToken"),
  "whatsapp-app-secret-env": "whatsappAppSecret", "whatsapp-verify-token-env": "whatsappVerifyToken",
};
/** an environment variable's name as people write them (an unset one is named back in the error) */
const LIKELY_VAR_NAME = /^[A-Z_][A-Z0-9_]{0,63}$/;
const ADVANCED_IDS = new Set(["natsUrl", "workspace", "toolProfile", "execApproval", "heartbeat", "tts"]);

/** The answers the command line gives, by question id. Secrets come from the environment only. */
export function presetsFromFlags(p: ParsedCommand, env: Env): Map<string, Preset> {
  const o = p.options;
  const presets = new Map<string, Preset>();
  for (const [flag, id] of Object.entries(VALUE_FLAGS)) if (typeof o[flag] === "string") presets.set(id, o[flag] as string);
  for (const [flag, id] of Object.entries(SECRET_ENV_FLAGS)) {
    const name = o[flag];
    if (typeof name !== "string") continue;
    const example = `e.g. --${flag} ${flag === "api-key-env" ? "OPENAI_API_KEY" : "TELEGRAM_BOT_TOKEN"}`;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UsageError(`--${flag} takes the NAME of an environment variable holding the secret (${example}), never the secret itself.`, "onboard");
    const value = env[name];
    if (!value) {
      // some secrets look like a variable name (a WhatsApp token EAA…, a hex app secret, a Matrix syt_… token):
      // a name that is not the usual UPPER_CASE one is not repeated, in case it is the secret itself
      if (!LIKELY_VAR_NAME.test(name)) throw new UsageError(`--${flag}: no variable of that name is set (or it is empty) in this environment. --${flag} takes the NAME of an environment variable holding the secret (${example}), never the secret itself.`, "onboard");
      throw new UsageError(`--${flag} ${name}: the variable ${name} is not set (or empty) in this environment; export it first.`, "onboard");
    }
    presets.set(id, value.trim());
  }
  if (typeof o.channels === "string") {
    const list = o.channels.split(",").map((c) => c.trim()).filter(Boolean);
    presets.set("channels", list.length === 1 && list[0] === "none" ? [] : list);
  }
  if (typeof o.hooks === "string") {
    const list = o.hooks.split(",").map((h) => h.trim()).filter(Boolean);
    presets.set("hooks", list.length === 1 && list[0] === "none" ? [] : list);
  }
  if (typeof o.heartbeat === "string") {
    if (!/^(on|off)$/.test(o.heartbeat)) throw new UsageError(`--heartbeat is on or off, not "${o.heartbeat}".`, "onboard");
    presets.set("heartbeat", o.heartbeat === "on");
  }
  if (o.yes === true) {
    presets.set("security", true);
    presets.set("reset", true);
  }
  const advanced = o.advanced === true || (o["non-interactive"] === true && [...presets.keys()].some((id) => ADVANCED_IDS.has(id)));
  if (advanced) presets.set("mode", "advanced");
  else if (o["non-interactive"] === true) presets.set("mode", "quickstart");
  return presets;
}

function readRawConfig(path: string, reset: boolean, say: (line: string) => void): Record<string, any> {
  if (!existsSync(path)) return {};
  try {
    const parsed = safeParseJson(readFileSync(path), { maxBytes: 4 * 1024 * 1024 });
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("the top level must be a JSON object");
    return parsed as Record<string, any>;
  } catch (err) {
    if (reset) {
      say(`(${path} cannot be read: ${(err as Error).message}; --reset starts over and keeps it as a backup)`);
      return {};
    }
    throw new CliError(`cannot read ${path}: ${(err as Error).message}. Fix the file, or start over with \`npx lurkbot onboard --reset\` (it is kept as a backup).`, EXIT.config);
  }
}

export async function cmdOnboard(p: ParsedCommand, env: Env, io: OnboardIo): Promise<number> {
  const nonInteractive = p.options["non-interactive"] === true;
  const presets = presetsFromFlags(p, env);
  const home = defaultHome(env);
  const configPath = configFilePath(home);
  const reset = p.options.reset === true && existsSync(configPath);
  const raw = readRawConfig(configPath, reset, io.out);
  const stored = readStoredSecrets(storedSecretsPath(env));
  const state: OnboardState = {
    home, configPath, env, stored, raw, reset, mode: "quickstart", secrets: {}, checked: [], channels: [], advanced: {}, skipCheck: p.options["skip-check"] === true,
  };
  const required = new Set(["security", "reset", ...(typeof raw.model === "string" ? [] : ["provider"])]);
  const line = nonInteractive ? undefined : new LinePrompter(io.input, io.output);
  const prompt = new PresetPrompter(presets, FLAGS, line, io.out, required);
  const session = new WizardSession(prompt, state, new Set(presets.keys()));
  const finish: FinishState = { written: false, startNow: false };
  // a pipe's Ctrl-C (and any with --non-interactive) reaches the process, a terminal's reaches
  // readline: both interrupt the wizard (the question or live check under way ends, no later
  // step runs, nothing is written unless it was already); a second Ctrl-C ends the process
  const onSigint = () => (prompt.cancelled ? process.exit(130) : prompt.interrupt("Ctrl-C"));
  process.on("SIGINT", onSigint);
  if (line) io.out("LurkBot onboarding. Answer each question; press Enter for the default shown in [brackets]. Ctrl-C cancels without writing anything.\n");
  try {
    await runWizard([...MODEL_STEPS, ...CHANNEL_STEPS, ...ADVANCED_STEPS, ...SKILLS_HOOKS_STEPS, ...finishSteps(finish)], session);
  } catch (err) {
    if (!(err instanceof WizardCancelled)) throw err;
    io.err(`lurkbot onboard: ${err.message}; ${finish.written ? `the configuration was written (${configPath}); start it with \`npx lurkbot start\`.` : "nothing was written."}`);
    return finish.written ? EXIT.ok : EXIT.failed;
  } finally {
    process.off("SIGINT", onSigint);
    prompt.close();
  }
  if (finish.startNow) return io.start(finish.env!);
  return EXIT.ok;
}
