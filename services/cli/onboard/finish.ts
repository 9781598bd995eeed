/**
 * The last steps: config.json merged from what was there and the answers, validated by the
 * config schema before anything is written, then written atomically (mode 0600) with the
 * secrets in credentials/secrets.json; then what `lurkbot setup` and `lurkbot init` do, a
 * summary with the next command, and whether to start now.
 */
import { existsSync, readFileSync } from "node:fs";
import { writeFileAtomicSync } from "../../../shared/runtime/atomic-write.js";
import { loadConfig, parseConfig, type Env, type LurkConfig } from "../../../shared/runtime/config.js";
import { CHANNEL_TOKEN_ENV } from "../../../shared/runtime/config-channels.js";
import { channelSecretsPath, ensureChannelSecret } from "../../../shared/runtime/channel/secrets.js";
import { LurkError } from "../../../shared/contract/index.js";
import { CliError, EXIT } from "../errors.js";
import { initWorkspace } from "../init.js";
import { runSetup } from "../setup.js";
import { storedSecretsPath, writeStoredSecrets } from "../stored-secrets.js";
import type { OnboardState, WizardSession, WizardStep } from "./session.js";
import { CHAT_CHANNELS } from "./steps-channels.js";
import { KEY_VARS, providerName } from "./steps-model.js";
import { rawDefaultAgent } from "./steps-advanced.js";
import { whatsappSummary } from "./steps-whatsapp.js";

const obj = (node: Record<string, any>, key: string): Record<string, any> => {
  const next = node[key];
  node[key] = next && typeof next === "object" && !Array.isArray(next) ? { ...next } : {};
  return node[key];
};

/** Sets `key` when the raw config has it already or the value is not the default (no defaults written out). */
function setUnlessDefault(node: Record<string, any>, key: string, value: unknown, fallback: unknown): void {
  if (value === undefined) return;
  if (key in node || value !== fallback) node[key] = value;
}

/** The secrets to store: what was stored, plus the ones entered for the final provider and the enabled channels. */
export function secretsToStore(state: OnboardState): Record<string, string> {
  const wanted = new Set<string>();
  const keyVar = state.provider ? KEY_VARS[state.provider] : undefined;
  if (keyVar) wanted.add(keyVar);
  for (const t of CHANNEL_TOKEN_ENV) if ((state.channels as string[]).includes(t.channel)) wanted.add(t.env);
  const out = { ...state.stored };
  for (const [name, value] of Object.entries(state.secrets)) if (wanted.has(name)) out[name] = value;
  return out;
}

/** config.json as it will be written: the old one (or {} after --reset) with the answers set. */
export function mergedConfig(state: OnboardState): Record<string, any> {
  const raw: Record<string, any> = structuredClone(state.raw);
  const p = state.provider!;
  const name = providerName(p);
  raw.model = `${name}/${state.model}`;
  const provider = obj(obj(raw, "providers"), name);
  const endpointKey = name === "ollama" ? "host" : "baseUrl";
  if (state.baseUrl) provider[endpointKey] = state.baseUrl;
  else delete provider[endpointKey];
  // a key stored in secrets.json leaves config.json (every actor reads config.json)
  const stored = secretsToStore(state);
  if (KEY_VARS[p] && state.secrets[KEY_VARS[p]!]) delete provider.apiKey;

  const channels = obj(raw, "channels");
  for (const ch of CHAT_CHANNELS) {
    const on = state.channels.includes(ch);
    if (!on && !channels[ch]) continue;
    const c = obj(channels, ch);
    c.enabled = on;
    for (const t of CHANNEL_TOKEN_ENV.filter((t) => t.channel === ch)) if (state.secrets[t.env] && stored[t.env]) delete c[t.field];
  }
  if (state.signal && state.channels.includes("signal")) {
    const c = obj(channels, "signal");
    c.account = state.signal.account;
    setUnlessDefault(c, "url", state.signal.url, "http://127.0.0.1:8080");
  }
  if (state.matrix && state.channels.includes("matrix")) {
    const c = obj(channels, "matrix");
    c.homeserverUrl = state.matrix.homeserverUrl;
    c.userId = state.matrix.userId;
  }
  if (state.whatsapp && state.channels.includes("whatsapp")) obj(channels, "whatsapp").phoneNumberId = state.whatsapp.phoneNumberId;
  if (Object.keys(channels).length === 0) delete raw.channels;
  if (state.hooks) {
    // chosen: enabled; offered and not chosen: disabled only where config.json names them already
    const entries = obj(obj(raw, "hooks"), "entries");
    for (const name of state.hooks.offered) {
      const on = state.hooks.chosen.includes(name);
      if (!on && !entries[name]) continue;
      obj(entries, name).enabled = on;
    }
    if (Object.keys(entries).length === 0) delete raw.hooks.entries;
  }
  if (state.dmPolicy) setUnlessDefault(obj(obj(raw, "routing"), "dm"), "policy", state.dmPolicy, "open");

  const a = state.advanced;
  if (state.mode === "advanced") {
    if (a.natsUrl) setUnlessDefault(obj(raw, "nats"), "url", a.natsUrl, "nats://127.0.0.1:4222");
    if (a.workspace) setUnlessDefault(raw, "workspace", a.workspace, "workspace");
    if (a.toolProfile) {
      const agent = rawDefaultAgent(raw);
      if (agent) {
        raw.agents = (raw.agents as Record<string, any>[]).map((x) => (x === agent ? { ...x, toolProfile: a.toolProfile } : x));
      } else if (a.toolProfile !== "coding") {
        raw.agents = [{ id: "main", default: true, toolProfile: a.toolProfile }];
      }
    }
    if (a.execAsk) setUnlessDefault(obj(obj(raw, "tools"), "exec"), "ask", a.execAsk, "off");
    if (a.heartbeat !== undefined) setUnlessDefault(obj(raw, "heartbeat"), "enabled", a.heartbeat, true);
    if (a.tts) setUnlessDefault(obj(raw, "tts"), "auto", a.tts, "off");
  }
  if (Object.keys(provider).length === 0) delete raw.providers[name];
  if (Object.keys(raw.providers).length === 0) delete raw.providers;
  for (const key of ["nats", "tools", "heartbeat", "tts", "routing", "hooks"]) {
    if (raw[key] && typeof raw[key] === "object" && Object.keys(raw[key]).length === 0) delete raw[key];
  }
  return raw;
}

/** The environment the actors will see: the shell's, plus the stored secrets it does not set. */
export function envWithSecrets(env: Env, secrets: Record<string, string>): Env {
  const out: Env = { ...env };
  for (const [name, value] of Object.entries(secrets)) if (!out[name]) out[name] = value;
  return out;
}

const stamp = () => new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");

export interface FinishState {
  /** the files written (the wizard can no longer say "nothing was written") */
  written: boolean;
  backup?: string;
  config?: LurkConfig;
  env?: Env;
  webTokenNew?: boolean;
  startNow: boolean;
}

function write(f: FinishState): WizardStep {
  return {
    id: "write",
    async run(s) {
      const st = s.state;
      const raw = mergedConfig(st);
      const secrets = secretsToStore(st);
      const env = envWithSecrets(st.env, secrets);
      try {
        parseConfig(raw, env, st.home, st.configPath);
      } catch (err) {
        const msg = LurkError.is(err) ? err.message : (err as Error).message;
        throw new CliError(`the new configuration would not be valid, so nothing was written: ${msg}. Fix that key in ${st.configPath} (or start over with \`npx lurkbot onboard --reset\`).`, EXIT.config);
      }
      // Ctrl-C since the last step (e.g. during a check whose answers came from flags): nothing is written
      if (s.prompt.cancelled) throw s.prompt.cancelled;
      if (st.reset && existsSync(st.configPath)) {
        f.backup = `${st.configPath}.bak-${stamp()}`;
        writeFileAtomicSync(f.backup, readFileSync(st.configPath), 0o600);
      }
      const storedPath = storedSecretsPath(st.env);
      if (JSON.stringify(secrets) !== JSON.stringify(st.stored)) writeStoredSecrets(storedPath, secrets);
      writeFileAtomicSync(st.configPath, JSON.stringify(raw, null, 2) + "\n", 0o600);
      f.written = true;
      s.prompt.say(`wrote ${st.configPath} (mode 600)${f.backup ? `; the old one is ${f.backup}` : ""}`);
      const newNames = Object.keys(st.secrets).filter((n) => secrets[n] === st.secrets[n] && st.stored[n] !== st.secrets[n]);
      if (newNames.length) s.prompt.say(`stored ${newNames.join(", ")} in ${storedPath} (mode 600)`);
      f.env = env;
    },
  };
}

/** whether channels.json holds a web token already (setup generates one when not) */
function storedWebToken(path: string): boolean {
  try {
    return typeof (JSON.parse(readFileSync(path, "utf8")) as { web?: { token?: unknown } }).web?.token === "string";
  } catch {
    return false;
  }
}

function setup(f: FinishState): WizardStep {
  return {
    id: "setup",
    async run(s) {
      const cfg = loadConfig(f.env!);
      f.config = cfg;
      const web = cfg.channels.web;
      const hadWebToken = !(web?.enabled && !web.token && !web.users) || storedWebToken(channelSecretsPath(cfg));
      runSetup(cfg, (line) => s.prompt.say(line));
      initWorkspace(cfg.workspace, false, (line) => s.prompt.say(line));
      f.webTokenNew = !hadWebToken;
    },
  };
}

function webLine(s: WizardSession, f: FinishState): string | undefined {
  const cfg = f.config!;
  const web = cfg.channels.web;
  if (!web?.enabled) return undefined;
  const host = web.host === "0.0.0.0" || web.host === "::" ? "127.0.0.1" : web.host.includes(":") ? `[${web.host}]` : web.host;
  const url = `http://${host}:${web.port}/`;
  if (web.users) return `web chat: ${url}?token=<your token from channels.web.users> (after \`npx lurkbot start\`)`;
  if (f.webTokenNew && s.prompt.interactive) {
    const { value } = ensureChannelSecret(cfg, "web", "token", web.token);
    return `web chat: ${url}?token=${value}  (open it once after \`npx lurkbot start\`; the page keeps the token; shown only now)`;
  }
  return `web chat: ${url}?token=<the "web" token in ${channelSecretsPath(cfg)}${web.token ? ", or channels.web.token" : ""}> (after \`npx lurkbot start\`)`;
}

function summary(f: FinishState): WizardStep {
  return {
    id: "summary",
    async run(s) {
      const st = s.state;
      const cfg = f.config!;
      const say = (line: string) => s.prompt.say(line);
      say("");
      say("LurkBot is set up:");
      say(`  model: ${providerName(st.provider!)}/${st.model}${st.baseUrl ? ` at ${st.baseUrl}` : ""}${st.checked.includes("model") ? " (checked live)" : ""}`);
      if (st.keyVar) {
        const stored = secretsToStore(st)[st.keyVar] !== undefined;
        const fromShell = !!st.env[st.keyVar];
        say(`  API key: ${!stored && fromShell ? `${st.keyVar} of your environment (not stored: set it wherever you run \`npx lurkbot start\`)` : stored ? `${st.keyVar}, stored in ${storedSecretsPath(st.env)}` : "none"}`);
        if (stored && fromShell && st.secrets[st.keyVar] && st.env[st.keyVar] !== st.secrets[st.keyVar]) say(`  note: ${st.keyVar} is also set in your environment, and that one wins; unset it before \`npx lurkbot start\`.`);
      }
      const checked = (ch: string) => (!st.checked.some((c) => c.startsWith(ch)) ? "" : CHANNEL_TOKEN_ENV.some((t) => t.channel === ch) ? " (token checked)" : ch === "signal" ? " (daemon checked)" : "");
      say(`  channels: terminal${st.channels.map((c) => `, ${c}${checked(c)}`).join("")}`);
      const web = webLine(s, f);
      if (web) say(`  ${web}`);
      for (const line of whatsappSummary(st, cfg, s.prompt.interactive, storedSecretsPath(st.env))) say(`  ${line}`);
      // a channel secret entered now and stored, while the shell sets another: the shell's is the one the channel gets
      for (const t of CHANNEL_TOKEN_ENV) {
        if ((st.channels as string[]).includes(t.channel) && st.secrets[t.env] && st.env[t.env] && st.env[t.env] !== st.secrets[t.env]) say(`  note: ${t.env} is also set in your environment, and that one wins; unset it before \`npx lurkbot start\`.`);
      }
      say(`  workspace: ${cfg.workspace}`);
      say(`  config: ${st.configPath}`);
      if (st.env.LURKBOT_MODEL && st.env.LURKBOT_MODEL !== `${providerName(st.provider!)}/${st.model}`) say(`  note: LURKBOT_MODEL=${st.env.LURKBOT_MODEL} in your environment overrides the model in config.json; unset it to use this one.`);
      if (st.env.OPENAI_BASE_URL && providerName(st.provider!) === "openai" && st.env.OPENAI_BASE_URL !== st.baseUrl) say("  note: OPENAI_BASE_URL in your environment overrides the endpoint in config.json.");
      say("");
      say("Next: npx lurkbot start     (then, in another terminal: npx lurkbot chat)");
      say("Check the setup any time: npx lurkbot security audit");
    },
  };
}

function start(f: FinishState): WizardStep {
  return {
    id: "start",
    async run(s) {
      f.startNow = await s.prompt.confirm({ id: "start", message: "Start LurkBot now (Ctrl-C stops it)?", default: false });
    },
  };
}

export function finishSteps(f: FinishState): WizardStep[] {
  return [write(f), setup(f), summary(f), start(f)];
}
