/**
 * `provider/model` -> a Provider instance (cached per provider and auth profile) and the bare
 * model name. Which model a run uses: RunRequest.options.model, else the agent's model, else
 * config.model; aliases ("sonnet", config `models.aliases`) are expanded (models.ts). A model
 * without a provider prefix inherits the configured model's provider.
 *
 * Auth profiles of a provider: "default" (the provider's apiKey/baseUrl, also from the
 * environment) first, then `providers.<name>.profiles`. A profile's fingerprint (a hash of its
 * key and endpoint) lets the auth state forget cooldowns of a key that was replaced.
 */
import { createHash } from "node:crypto";
import { LurkError } from "../../../shared/contract/index.js";
import type { LurkConfig } from "../../../shared/runtime/config.js";
import { resolveModelRef } from "../models.js";
import { LazyProvider, providerModules } from "./lazy.js";
import { OllamaProvider } from "./ollama.js";
import type { Provider } from "./types.js";

export const NO_MODEL_TEXT =
  "No model is configured. Set LURKBOT_MODEL=openai/gpt-4o-mini and OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server), then restart with `npx lurkbot start`.";

export const KNOWN_PROVIDERS = ["openai", "anthropic", "ollama"] as const;

export interface AuthProfile {
  provider: string;
  id: string;
  apiKey?: string;
  baseUrl?: string;
  /** sha256 of key and endpoint, 16 hex chars (never the key itself) */
  fingerprint: string;
}

export interface ResolvedModel {
  provider: Provider;
  providerName: string;
  /** the model name the provider gets */
  model: string;
  /** `provider/model` */
  ref: string;
  /** the profile `provider` uses */
  profile: AuthProfile;
}

const fingerprint = (apiKey: string | undefined, baseUrl: string | undefined) =>
  createHash("sha256").update(`${apiKey ?? ""}\n${baseUrl ?? ""}`).digest("hex").slice(0, 16);

export class ProviderRegistry {
  private readonly cache = new Map<string, Provider>();
  private readonly profileCache = new Map<string, AuthProfile[]>();

  constructor(private readonly config: LurkConfig) {}

  /** The model ref a run uses (aliases expanded), or undefined when none is configured anywhere. */
  pick(requested: string | undefined, agentModel: string | undefined): string | undefined {
    const base = agentModel ? this.expand(agentModel) : this.config.model;
    if (!requested) return base;
    return this.expand(requested, base?.split("/")[0]);
  }

  /** An alias, `provider/model` or bare model name as `provider/model`. */
  expand(ref: string, defaultProvider = this.config.model?.split("/")[0]): string {
    return resolveModelRef(ref, this.config, defaultProvider);
  }

  /** The provider's auth profiles in config order ("default" first); empty when none is configured. */
  profiles(providerName: string): AuthProfile[] {
    const cached = this.profileCache.get(providerName);
    if (cached) return cached;
    const make = (id: string, apiKey: string | undefined, baseUrl: string | undefined): AuthProfile => ({
      provider: providerName, id, ...(apiKey ? { apiKey } : {}), ...(baseUrl ? { baseUrl } : {}), fingerprint: fingerprint(apiKey, baseUrl),
    });
    const out: AuthProfile[] = [];
    const p = this.config.providers;
    if (providerName === "openai" || providerName === "anthropic") {
      const c = p[providerName];
      if (c.apiKey || c.baseUrl) out.push(make("default", c.apiKey, c.baseUrl));
      for (const profile of c.profiles) if (profile.id !== "default" || out.length === 0) out.push(make(profile.id, profile.apiKey, profile.baseUrl ?? c.baseUrl));
    } else if (providerName === "ollama") {
      const c = p.ollama;
      if (c.profiles.length === 0 || c.host || c.apiKey) out.push(make("default", c.apiKey, c.host));
      for (const profile of c.profiles) if (profile.id !== "default" || out.length === 0) out.push(make(profile.id, profile.apiKey, profile.baseUrl ?? c.host));
    }
    this.profileCache.set(providerName, out);
    return out;
  }

  /** Splits and checks a ref; throws NO_MODEL / CONFIG_INVALID with the fix. */
  parse(ref: string | undefined): { providerName: string; model: string; ref: string } {
    if (!ref) throw new LurkError("NO_MODEL", NO_MODEL_TEXT);
    const slash = ref.indexOf("/");
    const providerName = slash > 0 ? ref.slice(0, slash) : "";
    const model = ref.slice(slash + 1);
    if (!providerName || !model) {
      throw new LurkError("CONFIG_INVALID", `model "${ref}" is not provider/model; use e.g. LURKBOT_MODEL=openai/gpt-4o-mini`);
    }
    if (!(KNOWN_PROVIDERS as readonly string[]).includes(providerName)) {
      throw new LurkError("CONFIG_INVALID", `unknown model provider "${providerName}" in "${ref}"; supported: ${KNOWN_PROVIDERS.join(", ")} (e.g. LURKBOT_MODEL=openai/gpt-4o-mini)`);
    }
    return { providerName, model, ref };
  }

  /** The ref with its first profile (no rotation: see failover.ts for that). */
  resolve(ref: string | undefined): ResolvedModel {
    const parsed = this.parse(ref);
    const profile = this.profiles(parsed.providerName)[0];
    if (!profile) throw this.missingCredentials(parsed.providerName, parsed.ref);
    return { ...parsed, provider: this.providerFor(profile), profile };
  }

  missingCredentials(providerName: string, ref: string): LurkError {
    return providerName === "anthropic"
      ? new LurkError("PROVIDER_AUTH", `model ${ref} needs Anthropic credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for an Anthropic-compatible endpoint such as MiniMax), then restart with \`npx lurkbot start\`.`)
      : new LurkError("PROVIDER_AUTH", `model ${ref} needs ${providerName === "openai" ? "OpenAI" : providerName} credentials: set OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server), then restart with \`npx lurkbot start\`.`);
  }

  /** The provider client of one profile (cached); its SDK is imported on its first call (lazy.ts). */
  providerFor(profile: AuthProfile): Provider {
    const key = `${profile.provider}#${profile.id}#${profile.fingerprint}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    const timeoutMs = this.config.runs.llmTimeoutMs;
    const creds = { ...(profile.apiKey ? { apiKey: profile.apiKey } : {}), ...(profile.baseUrl ? { baseUrl: profile.baseUrl } : {}), timeoutMs };
    let provider: Provider;
    switch (profile.provider) {
      case "openai":
        provider = new LazyProvider("openai", async () => new (await providerModules.openai()).OpenAIProvider(creds));
        break;
      case "anthropic":
        provider = new LazyProvider("anthropic", async () => new (await providerModules.anthropic()).AnthropicProvider(creds));
        break;
      case "ollama":
        // imports its client library itself on the first call
        provider = new OllamaProvider({ ...(profile.baseUrl ? { host: profile.baseUrl } : {}), ...(profile.apiKey ? { apiKey: profile.apiKey } : {}), timeoutMs });
        break;
      default:
        throw new LurkError("CONFIG_INVALID", `unknown model provider "${profile.provider}"; supported: ${KNOWN_PROVIDERS.join(", ")}`);
    }
    this.cache.set(key, provider);
    return provider;
  }
}
