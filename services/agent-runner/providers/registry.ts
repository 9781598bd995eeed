/**
 * `provider/model` -> a Provider instance (cached per provider) and the bare model name.
 * Which model a run uses: RunRequest.options.model, else the agent's model, else config.model.
 * A model without a provider prefix inherits the configured model's provider.
 */
import { LurkError } from "../../../shared/contract/index.js";
import type { LurkConfig } from "../../../shared/runtime/config.js";
import { AnthropicProvider } from "./anthropic.js";
import { OllamaProvider } from "./ollama.js";
import { OpenAIProvider } from "./openai.js";
import type { Provider } from "./types.js";

export const NO_MODEL_TEXT =
  "No model is configured. Set LURKBOT_MODEL=openai/gpt-4o-mini and OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server), then restart with `npx lurkbot start`.";

export const KNOWN_PROVIDERS = ["openai", "anthropic", "ollama"] as const;

export interface ResolvedModel {
  provider: Provider;
  providerName: string;
  /** the model name the provider gets */
  model: string;
  /** `provider/model` */
  ref: string;
}

export class ProviderRegistry {
  private readonly cache = new Map<string, Provider>();

  constructor(private readonly config: LurkConfig) {}

  /** The model ref a run uses, or undefined when none is configured anywhere. */
  pick(requested: string | undefined, agentModel: string | undefined): string | undefined {
    const base = agentModel ?? this.config.model;
    if (!requested) return base;
    if (requested.includes("/")) return requested;
    const provider = base?.split("/")[0] ?? "openai";
    return `${provider}/${requested}`;
  }

  resolve(ref: string | undefined): ResolvedModel {
    if (!ref) throw new LurkError("NO_MODEL", NO_MODEL_TEXT);
    const slash = ref.indexOf("/");
    const providerName = slash > 0 ? ref.slice(0, slash) : "";
    const model = ref.slice(slash + 1);
    if (!providerName || !model) {
      throw new LurkError("CONFIG_INVALID", `model "${ref}" is not provider/model; use e.g. LURKBOT_MODEL=openai/gpt-4o-mini`);
    }
    return { provider: this.provider(providerName, ref), providerName, model, ref };
  }

  private provider(name: string, ref: string): Provider {
    const cached = this.cache.get(name);
    if (cached) return cached;
    let provider: Provider;
    switch (name) {
      case "openai": {
        const { apiKey, baseUrl } = this.config.providers.openai;
        if (!apiKey && !baseUrl) {
          throw new LurkError("PROVIDER_AUTH", `model ${ref} needs OpenAI credentials: set OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server), then restart with \`npx lurkbot start\`.`);
        }
        provider = new OpenAIProvider({ ...(apiKey ? { apiKey } : {}), ...(baseUrl ? { baseUrl } : {}), timeoutMs: this.config.runs.llmTimeoutMs });
        break;
      }
      case "anthropic": {
        const { apiKey, baseUrl } = this.config.providers.anthropic;
        if (!apiKey && !baseUrl) {
          throw new LurkError("PROVIDER_AUTH", `model ${ref} needs Anthropic credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for an Anthropic-compatible endpoint such as MiniMax), then restart with \`npx lurkbot start\`.`);
        }
        provider = new AnthropicProvider({ ...(apiKey ? { apiKey } : {}), ...(baseUrl ? { baseUrl } : {}), timeoutMs: this.config.runs.llmTimeoutMs });
        break;
      }
      case "ollama":
        provider = new OllamaProvider({ host: this.config.providers.ollama.host, timeoutMs: this.config.runs.llmTimeoutMs });
        break;
      default:
        throw new LurkError("CONFIG_INVALID", `unknown model provider "${name}" in "${ref}"; supported: ${KNOWN_PROVIDERS.join(", ")} (e.g. LURKBOT_MODEL=openai/gpt-4o-mini)`);
    }
    this.cache.set(name, provider);
    return provider;
  }
}
