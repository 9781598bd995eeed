/**
 * The wizard's first steps: the security notice, what is configured already (and --reset), the
 * mode, and the model: provider, endpoint, model name, API key, and a live check of them.
 */
import { enabledChannels } from "../../../shared/runtime/config-channels.js";
import { CHECK_TIMEOUT_MS, checkModel, type CheckResult } from "./checks.js";
import type { ProviderChoice, WizardSession, WizardStep } from "./session.js";
import { WizardCancelled } from "./prompt.js";
import { CliError } from "../errors.js";

export const DEFAULT_MODELS: Record<ProviderChoice, string | undefined> = {
  openai: "gpt-4o-mini",
  anthropic: "claude-sonnet-4-5",
  "openai-compatible": undefined,
  ollama: "llama3.2",
};

/** the environment variable of each provider's key (Ollama: none asked) */
export const KEY_VARS: Record<ProviderChoice, string | undefined> = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
  "openai-compatible": "OPENAI_API_KEY",
  ollama: undefined,
};

/** LurkBot's provider name (the `provider/` of the model id) */
export const providerName = (p: ProviderChoice): "openai" | "anthropic" | "ollama" => (p === "openai-compatible" ? "openai" : p);

const SECURITY_NOTICE = [
  "Before you start: LurkBot is an assistant that acts on this machine.",
  "  - Its agent runs tools: it reads and writes files in its workspace, runs commands (exec, in a",
  "    bubblewrap sandbox), fetches web pages, and can drive a browser.",
  "  - Anyone who can message it through a channel you enable can ask it to do these things.",
  "  - Tool calls can wait for your approval (tools.exec.ask, tools.requireApproval; decide with",
  "    `npx lurkbot approvals`), and unknown senders can be made to pair first (routing.dm.policy).",
  "  - Keys and tokens you enter are stored in credentials/ (mode 600), never in config.json.",
  "  Check a setup any time with `npx lurkbot security audit`.",
];

export function urlProblem(value: string): string | undefined {
  try {
    const u = new URL(value);
    if (u.protocol !== "http:" && u.protocol !== "https:") return `"${value}" is not an http(s) URL, e.g. http://127.0.0.1:8000/v1`;
    if (u.username || u.password) return "the URL must not carry a user or password; the key is asked next";
    return undefined;
  } catch {
    return `"${value}" is not a URL, e.g. http://127.0.0.1:8000/v1`;
  }
}

/** The provider the existing config's model names (openai with a base URL: compatible). */
function currentProvider(raw: Record<string, any>): ProviderChoice | undefined {
  const model = typeof raw.model === "string" ? raw.model : undefined;
  const name = model?.split("/")[0];
  if (name === "openai") return raw.providers?.openai?.baseUrl ? "openai-compatible" : "openai";
  if (name === "anthropic" || name === "ollama") return name;
  return undefined;
}

const security: WizardStep = {
  id: "security",
  async run(s) {
    for (const line of SECURITY_NOTICE) s.prompt.say(line);
    const ok = await s.prompt.confirm({ id: "security", message: "I understand; continue?", default: false });
    if (!ok) throw new WizardCancelled("the security notice was not accepted");
  },
};

const existing: WizardStep = {
  id: "existing",
  async run(s) {
    const { raw, stored, configPath } = s.state;
    const hasFile = Object.keys(raw).length > 0 || s.state.reset;
    if (!hasFile) {
      s.prompt.say(`No configuration yet (${configPath} will be created).`);
      return;
    }
    const channels = enabledChannels((raw.channels ?? {}) as never);
    s.prompt.say(`Current configuration (${configPath}):`);
    s.prompt.say(`  model: ${raw.model ?? "not set"}${raw.providers?.openai?.baseUrl ? ` (OpenAI-compatible at ${raw.providers.openai.baseUrl})` : ""}${raw.providers?.ollama?.host ? ` (Ollama at ${raw.providers.ollama.host})` : ""}`);
    s.prompt.say(`  channels: terminal${channels.length ? `, ${channels.join(", ")}` : ""}`);
    if (raw.workspace) s.prompt.say(`  workspace: ${raw.workspace}`);
    if (raw.nats?.url) s.prompt.say(`  NATS: ${raw.nats.url}`);
    const names = Object.keys(stored);
    s.prompt.say(`  stored secrets: ${names.length ? names.join(", ") : "none"}`);
    if (s.state.reset) {
      const go = await s.prompt.confirm({ id: "reset", message: "--reset: start over from an empty configuration (config.json is kept as a backup)?", default: false });
      if (!go) throw new WizardCancelled("--reset was not confirmed");
      s.state.raw = {};
      s.prompt.say("Starting over; the answers below make the new config.json.");
    } else {
      s.prompt.say("Your answers change only what they are about; everything else in config.json stays.");
    }
  },
};

const mode: WizardStep = {
  id: "mode",
  async run(s) {
    s.state.mode = await s.prompt.select({
      id: "mode", message: "Mode:", default: s.state.mode,
      choices: [
        { value: "quickstart", label: "QuickStart", hint: "a model and the channels; sensible defaults for the rest" },
        { value: "advanced", label: "Advanced", hint: "also NATS, the workspace, tools, exec approvals, heartbeat, voice replies" },
      ],
    });
  },
};

const provider: WizardStep = {
  id: "provider",
  async run(s) {
    s.state.provider = await s.prompt.select<ProviderChoice>({
      id: "provider", message: "Model provider:", default: s.state.provider ?? currentProvider(s.state.raw) ?? "openai",
      choices: [
        { value: "openai", label: "OpenAI", hint: "an API key from platform.openai.com" },
        { value: "anthropic", label: "Anthropic", hint: "an API key from console.anthropic.com" },
        { value: "openai-compatible", label: "OpenAI-compatible server", hint: "vLLM, LM Studio, llama.cpp, OpenRouter…: its base URL" },
        { value: "ollama", label: "Ollama", hint: "local models; its host" },
      ],
    });
  },
};

const endpoint: WizardStep = {
  id: "baseUrl",
  async run(s) {
    const p = s.state.provider!;
    const raw = s.state.raw;
    if (p === "ollama") {
      s.state.baseUrl = await s.prompt.text({ id: "baseUrl", message: "Ollama host", default: raw.providers?.ollama?.host ?? "http://127.0.0.1:11434", validate: urlProblem });
      return;
    }
    if (p === "openai-compatible") {
      s.state.baseUrl = await s.prompt.text({ id: "baseUrl", message: "The server's base URL (usually ending in /v1)", default: raw.providers?.openai?.baseUrl, validate: urlProblem });
      return;
    }
    // the official API; Advanced (or --base-url) may point it elsewhere, e.g. a proxy or a compatible endpoint
    const current = raw.providers?.[p]?.baseUrl as string | undefined;
    if (s.state.mode !== "advanced" && !s.hasPreset("baseUrl")) {
      s.state.baseUrl = undefined;
      return;
    }
    const value = await s.prompt.text({ id: "baseUrl", message: `${p === "openai" ? "OpenAI" : "Anthropic"} endpoint (empty: the official API)`, default: current, optional: true, validate: urlProblem });
    s.state.baseUrl = value || undefined;
  },
};

const model: WizardStep = {
  id: "model",
  async run(s) {
    const p = s.state.provider!;
    const current = typeof s.state.raw.model === "string" && currentProvider(s.state.raw) === p ? (s.state.raw.model as string).split("/").slice(1).join("/") : undefined;
    s.state.model = await s.prompt.text({
      id: "model", message: `Model name${p === "openai-compatible" ? " (as the server names it)" : ""}`,
      default: (s.state.modelFor === p ? s.state.model : undefined) ?? current ?? DEFAULT_MODELS[p],
      validate: (v) => (/\s/.test(v) ? "a model name has no spaces" : undefined),
    });
    s.state.modelFor = p;
  },
};

const apiKey: WizardStep = {
  id: "apiKey",
  when: (s) => KEY_VARS[s.state.provider!] !== undefined,
  async run(s) {
    const p = s.state.provider!;
    const name = KEY_VARS[p]!;
    s.state.keyVar = name;
    const again = s.trail.filter((t) => t === "apiKey").length > 1;
    const found = s.existingSecret(name, `providers.${providerName(p)}.apiKey`);
    if (found && !again && !s.hasPreset("apiKey")) {
      const keep = await s.prompt.confirm({ id: "keepApiKey", message: `An API key is set (${found.source}); use it?`, default: true });
      if (keep) {
        // a key from config.json moves to secrets.json; one from the shell or secrets.json stays where it is
        if (found.source.includes("config.json")) s.state.secrets[name] = found.value;
        else delete s.state.secrets[name];
        return;
      }
    }
    const optional = p === "openai-compatible";
    const value = await s.prompt.secret({
      id: "apiKey", message: `${p === "anthropic" ? "Anthropic" : p === "openai" ? "OpenAI" : "The server's"} API key${optional ? " (empty if it needs none)" : ""}`, optional,
      validate: (v) => (/\s/.test(v) ? "a key has no spaces; paste it again" : undefined),
    });
    if (value) s.state.secrets[name] = value;
    else delete s.state.secrets[name];
  },
};

/** the variables that set a provider's endpoint, over config.json (config.ts) */
const ENDPOINT_VARS = { openai: "OPENAI_BASE_URL", anthropic: "ANTHROPIC_BASE_URL", ollama: "OLLAMA_HOST" } as const;
const envEndpoint = (s: WizardSession): string | undefined => s.state.env[ENDPOINT_VARS[providerName(s.state.provider!)]] || undefined;

/** What to do after a failed check: by id of the step to go back to, "keep" or "cancel". */
async function afterFailure(s: WizardSession, result: Extract<CheckResult, { ok: false }>): Promise<string> {
  const p = s.state.provider!;
  const choices = [
    ...(KEY_VARS[p] ? [{ value: "apiKey", label: "enter the API key again" }] : []),
    ...(p !== "openai" || s.state.baseUrl ? [{ value: "baseUrl", label: p === "ollama" ? "change the host" : "change the URL" }] : []),
    { value: "model", label: "change the model" },
    { value: "provider", label: "choose another provider" },
    { value: "keep", label: "keep these settings anyway" },
    { value: "cancel", label: "cancel (nothing is written)" },
  ];
  const first = result.kind === "auth" && KEY_VARS[p] ? "apiKey" : result.kind === "unreachable" && choices.some((c) => c.value === "baseUrl") ? "baseUrl" : result.kind === "model" ? "model" : "keep";
  return s.prompt.select({ id: "checkFailed", message: "What now?", choices, default: first });
}

const check: WizardStep = {
  id: "check",
  async run(s) {
    const p = s.state.provider!;
    if (s.state.skipCheck) {
      s.prompt.say("Live check skipped (--skip-check).");
      return;
    }
    const endpoint = envEndpoint(s) ?? s.state.baseUrl;
    if (envEndpoint(s)) s.prompt.say(`(the endpoint is ${ENDPOINT_VARS[providerName(p)]} of your environment, which overrides config.json: ${envEndpoint(s)})`);
    const key = s.state.keyVar ? s.secretValue(s.state.keyVar) ?? s.existingSecret(s.state.keyVar, `providers.${providerName(p)}.apiKey`)?.value : undefined;
    s.prompt.say(`Checking ${providerName(p)}/${s.state.model} with one small call…`);
    const result = await checkModel({ provider: p, model: s.state.model!, ...(endpoint ? { baseUrl: endpoint } : {}), ...(key ? { apiKey: key } : {}) }, CHECK_TIMEOUT_MS, s.prompt.signal);
    if (result.ok) {
      s.prompt.say(`  ok: ${result.detail}.`);
      s.state.checked.push("model");
      return;
    }
    s.prompt.say(`  check failed: ${result.problem}.`);
    s.prompt.say(`  what to do: ${result.fix}.`);
    if (!s.prompt.interactive) {
      if (result.kind === "model") {
        s.prompt.say("  (kept: --non-interactive; a server may take a model it does not list)");
        return;
      }
      throw new CheckFailed(`the live check of the model failed: ${result.problem}. ${result.fix[0]!.toUpperCase()}${result.fix.slice(1)}, or add --skip-check to write the configuration without the check.`);
    }
    const next = await afterFailure(s, result);
    if (next === "cancel") throw new WizardCancelled("cancelled after the failed check");
    if (next === "keep") return;
    return { goto: next };
  },
};

/** a live check that failed in --non-interactive mode (exit 1) */
export class CheckFailed extends CliError {}

export const MODEL_STEPS: WizardStep[] = [security, existing, mode, provider, endpoint, model, apiKey, check];
