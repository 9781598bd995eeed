/**
 * The wizard as steps with ids (seed 001 §17.4, WizardStep / WizardSession): each step asks its
 * questions through the session's prompter and records its answers in the session's state; a
 * step may send the wizard back to an earlier one (a refused key: ask for it again). Nothing
 * is written until the last steps, so a cancel at any question leaves every file as it was. An
 * interrupt (Ctrl-C) stops the wizard before its next step even when that step's answers come
 * from flags, and aborts a live check under way (the prompter's `signal`).
 */
import type { Env } from "../../../shared/runtime/config.js";
import type { Prompter } from "./prompt.js";

export type ProviderChoice = "openai" | "anthropic" | "openai-compatible" | "ollama";
export type ChatChannel = "web" | "telegram" | "discord" | "slack" | "signal" | "matrix" | "whatsapp";

export interface OnboardState {
  home: string;
  configPath: string;
  /** the environment as the command got it (the shell's; stored secrets not merged) */
  env: Env;
  /** credentials/secrets.json as it was */
  stored: Record<string, string>;
  /** config.json as it was (parsed, not defaulted); {} after --reset or without a file */
  raw: Record<string, any>;
  /** --reset was confirmed: the old config.json is backed up when the new one is written */
  reset: boolean;
  mode: "quickstart" | "advanced";
  provider?: ProviderChoice;
  /** the provider's endpoint (OpenAI-compatible base URL, Ollama host, a custom Anthropic one); undefined: the official API */
  baseUrl?: string;
  model?: string;
  /** the provider `model` was chosen for (a new provider gets its own default) */
  modelFor?: ProviderChoice;
  /** the environment variable holding the model's key (OPENAI_API_KEY, ANTHROPIC_API_KEY) */
  keyVar?: string;
  /** secrets to store, by environment variable name */
  secrets: Record<string, string>;
  /** names whose value was checked live (the summary says so) */
  checked: string[];
  channels: ChatChannel[];
  /** channels.signal: the bot's number and signal-cli's daemon (steps-signal.ts) */
  signal?: { account: string; url: string };
  /** channels.matrix: the homeserver and the bot account (steps-matrix.ts); the token is a secret */
  matrix?: { homeserverUrl: string; userId: string };
  /** channels.whatsapp: the business number's id (steps-whatsapp.ts); whether the verify token was generated now (the summary shows it once) */
  whatsapp?: { phoneNumberId: string; verifyTokenGenerated?: boolean };
  /** the hooks step: the bundled hooks offered, and those chosen (hooks.entries.<name>.enabled) */
  hooks?: { offered: string[]; chosen: string[] };
  /** routing.dm.policy, asked when a platform channel is enabled */
  dmPolicy?: "pairing" | "allowlist" | "open" | "disabled";
  advanced: {
    natsUrl?: string;
    workspace?: string;
    toolProfile?: "minimal" | "coding" | "messaging" | "full";
    execAsk?: "off" | "on-miss" | "always";
    heartbeat?: boolean;
    tts?: "off" | "always" | "inbound" | "tagged";
  };
  /** --skip-check */
  skipCheck: boolean;
}

/** Where a step sends the wizard next: on (undefined), or back to a step by id. */
export type StepResult = void | { goto: string };

export interface WizardStep {
  id: string;
  /** the step runs only when this says so (e.g. Advanced's questions) */
  when?: (s: WizardSession) => boolean;
  run: (s: WizardSession) => Promise<StepResult>;
}

export class WizardSession {
  /** the ids of the steps run so far, in order (a step run twice is listed twice) */
  readonly trail: string[] = [];

  /** `presets`: the ids answered by command-line flags */
  constructor(readonly prompt: Prompter, readonly state: OnboardState, private readonly presets: ReadonlySet<string> = new Set()) {}

  /** whether a flag answers this question (e.g. --base-url makes the endpoint question count) */
  hasPreset(id: string): boolean {
    return this.presets.has(id);
  }

  /** The value of a secret: the one entered now, else the shell's, else the stored one. */
  secretValue(name: string): string | undefined {
    return this.state.secrets[name] ?? (this.state.env[name] || undefined) ?? this.state.stored[name];
  }

  /**
   * A secret that is set already, and where: the shell's environment, credentials/secrets.json,
   * or `configKey` in config.json (kept there, it is moved to secrets.json when the config is written).
   */
  existingSecret(name: string, configKey?: string): { value: string; source: string } | undefined {
    if (this.state.env[name]) return { value: this.state.env[name]!, source: `${name} in the environment` };
    if (this.state.stored[name]) return { value: this.state.stored[name]!, source: "stored in credentials/secrets.json" };
    const fromConfig = configKey ? configKey.split(".").reduce<any>((node, k) => node?.[k], this.state.raw) : undefined;
    if (typeof fromConfig === "string" && fromConfig) return { value: fromConfig, source: `${configKey} in config.json; it will move to credentials/secrets.json` };
    return undefined;
  }
}

/** Runs the steps in order, following a step's `goto`; a step's `when` is checked each time it is reached. */
export async function runWizard(steps: WizardStep[], session: WizardSession): Promise<void> {
  let i = 0;
  let moves = 0;
  while (i < steps.length) {
    const step = steps[i]!;
    if (step.when && !step.when(session)) {
      i++;
      continue;
    }
    if (session.prompt.cancelled) throw session.prompt.cancelled;
    session.trail.push(step.id);
    const result = await step.run(session);
    if (result && "goto" in result) {
      const target = steps.findIndex((s) => s.id === result.goto);
      if (target < 0) throw new Error(`onboard: no step "${result.goto}"`);
      // a person may retry as often as they like; a loop without one is a bug
      if (++moves > 1000) throw new Error("onboard: the steps keep going back");
      i = target;
      continue;
    }
    i++;
  }
  if (session.prompt.cancelled) throw session.prompt.cancelled;
}
