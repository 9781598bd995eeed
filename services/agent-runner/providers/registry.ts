/**
 * `provider/model` -> a Provider instance (cached per provider and auth profile) and the bare
 * model name. Which model a run uses: RunRequest.options.model, else the agent's model, else
 * config.model; aliases ("sonnet", config `models.aliases`) are expanded (shared/runtime/models.ts). A model
 * without a provider prefix inherits the configured model's provider.
 *
 * Auth profiles of a provider: "default" (the provider's apiKey/baseUrl, also from the
 * environment) first, then `providers.<name>.profiles`. A profile's fingerprint (a hash of its
 * key and endpoint) lets the auth state forget cooldowns of a key that was replaced. A profile
 * with a token or an OAuth client gets its secret per call (credentials.ts, credentialed.ts).
 * A named provider instance (`providers.<name>` with an `api`, config-providers.ts) is a provider
 * of its own: its refs are `<name>/model`, its profiles and cooldowns are its own, its client
 * speaks its API and names itself `<name>` (so thinking signatures stay with it).
 */
import { createHash } from "node:crypto";
import type { KV } from "@nats-io/kv";
import { LurkError } from "../../../shared/contract/index.js";
import type { LurkConfig } from "../../../shared/runtime/config.js";
import { providerApi, providerNames, providerProfiles, PROVIDER_NAMES, type OAuthClientConfig, type ResolvedProfileConfig } from "../../../shared/runtime/config-providers.js";
import { ClientCredentials, RefreshedTokens, StaticToken, type CredentialSource } from "../credentials.js";
import { resolveModelRef } from "../../../shared/runtime/models.js";
import { CredentialedProvider } from "./credentialed.js";
import { CredentialedEmbedder, type Embedder } from "./embedder.js";
import { LazyEmbedder, LazyProvider, providerModules } from "./lazy.js";
import { OllamaEmbedder } from "./ollama-embed.js";
import { OllamaProvider } from "./ollama.js";
import type { Provider } from "./types.js";
import type { RateLimitBook } from "../rate-limits.js";

export const NO_MODEL_TEXT =
  "No model is configured. Set LURKBOT_MODEL=openai/gpt-4o-mini and OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server), then restart with `npx lurkbot start`.";

export const KNOWN_PROVIDERS = PROVIDER_NAMES;

export const NO_ANTHROPIC_EMBEDDINGS =
  "Anthropic has no embeddings API; use an OpenAI embedding model (openai/text-embedding-3-small; an OpenAI-compatible server's through OPENAI_BASE_URL) or an Ollama one (ollama/nomic-embed-text)";

/** A profile's credential when it is not an API key (config-providers.ts). */
export type ProfileCredential =
  | { kind: "token"; token: string; expires?: number }
  | { kind: "oauth"; client: OAuthClientConfig };

export interface AuthProfile {
  provider: string;
  id: string;
  apiKey?: string;
  credential?: ProfileCredential;
  baseUrl?: string;
  /** sha256 of the credential (a token, an OAuth client's endpoint and id) and endpoint, 16 hex chars */
  fingerprint: string;
}

export interface ProviderRegistryOptions {
  /** the `lurk_auth` bucket, for profiles whose OAuth client uses the refresh_token grant */
  authBucket?: () => Promise<KV>;
  now?: () => number;
  /** records the rate-limit headers of the OpenAI and Anthropic clients' responses, per profile (rate-limits.ts) */
  rateLimits?: RateLimitBook;
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

const credentialText = (c: ProfileCredential | undefined) =>
  !c ? "" : c.kind === "token" ? `token\u0000${c.token}` : `oauth\u0000${c.client.grant}\u0000${c.client.tokenUrl}\u0000${c.client.clientId}`;

const fingerprint = (apiKey: string | undefined, baseUrl: string | undefined, credential?: ProfileCredential) =>
  createHash("sha256").update(`${apiKey ?? ""}\n${baseUrl ?? ""}${credential ? `\n${credentialText(credential)}` : ""}`).digest("hex").slice(0, 16);

export class ProviderRegistry {
  private readonly cache = new Map<string, Provider>();
  private readonly embedders = new Map<string, Embedder>();
  private readonly profileCache = new Map<string, AuthProfile[]>();
  private readonly sources = new Map<string, CredentialSource>();

  constructor(private readonly config: LurkConfig, private readonly opts: ProviderRegistryOptions = {}) {}

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
    const make = (id: string, apiKey: string | undefined, baseUrl: string | undefined, credential?: ProfileCredential): AuthProfile => ({
      provider: providerName, id, ...(apiKey ? { apiKey } : {}), ...(credential ? { credential } : {}), ...(baseUrl ? { baseUrl } : {}),
      fingerprint: fingerprint(apiKey, baseUrl, credential),
    });
    const out: AuthProfile[] = providerApi(this.config.providers, providerName)
      ? providerProfiles(this.config.providers, providerName).profiles.map((p) => make(p.id, p.apiKey, p.baseUrl, credentialOf(p)))
      : [];
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
    if (!providerApi(this.config.providers, providerName)) {
      throw new LurkError("CONFIG_INVALID", `unknown model provider "${providerName}" in "${ref}"; supported: ${this.providerNames().join(", ")} (e.g. LURKBOT_MODEL=openai/gpt-4o-mini; another endpoint of an API: providers.<name>.api)`);
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

  /** the built-in providers and the configured named instances */
  providerNames(): string[] {
    return providerNames(this.config.providers);
  }

  missingCredentials(providerName: string, ref: string): LurkError {
    if (!(PROVIDER_NAMES as readonly string[]).includes(providerName)) {
      return new LurkError("PROVIDER_AUTH", `model ${ref} needs credentials for the provider instance "${providerName}": set providers.${providerName}.apiKey (or its baseUrl, or profiles) in config.json, then restart with \`npx lurkbot start\`.`);
    }
    return providerName === "anthropic"
      ? new LurkError("PROVIDER_AUTH", `model ${ref} needs Anthropic credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for an Anthropic-compatible endpoint such as MiniMax), then restart with \`npx lurkbot start\`.`)
      : new LurkError("PROVIDER_AUTH", `model ${ref} needs ${providerName === "openai" ? "OpenAI" : providerName} credentials: set OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server), then restart with \`npx lurkbot start\`.`);
  }

  /** The provider client of one profile (cached); its SDK is imported on its first call (lazy.ts). */
  providerFor(profile: AuthProfile): Provider {
    const key = `${profile.provider}#${profile.id}#${profile.fingerprint}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    const provider = profile.credential
      ? new CredentialedProvider(profile.provider, this.sourceFor(profile, profile.credential), (secret) => this.client(profile, secret, true))
      : this.client(profile, profile.apiKey, false);
    this.cache.set(key, provider);
    return provider;
  }

  /**
   * The embeddings client of one profile (cached; the OpenAI SDK is imported on its first call).
   * Anthropic has no embeddings API: VALIDATION_FAILED saying what to use instead.
   */
  embedderFor(profile: AuthProfile): Embedder {
    const key = `${profile.provider}#${profile.id}#${profile.fingerprint}`;
    const cached = this.embedders.get(key);
    if (cached) return cached;
    const embedder = profile.credential
      ? new CredentialedEmbedder(profile.provider, this.sourceFor(profile, profile.credential), (secret) => this.embedClient(profile, secret))
      : this.embedClient(profile, profile.apiKey);
    this.embedders.set(key, embedder);
    return embedder;
  }

  private embedClient(profile: AuthProfile, secret: string | undefined): Embedder {
    const opts = { ...(secret ? { apiKey: secret } : {}), ...(profile.baseUrl ? { baseUrl: profile.baseUrl } : {}) };
    switch (providerApi(this.config.providers, profile.provider)) {
      case "openai":
        return new LazyEmbedder("openai", async () => new (await providerModules.openaiEmbed()).OpenAIEmbedder(opts));
      case "ollama":
        return new OllamaEmbedder({ ...(profile.baseUrl ? { host: profile.baseUrl } : {}), ...(secret ? { apiKey: secret } : {}) });
      case "anthropic":
        throw new LurkError("VALIDATION_FAILED", NO_ANTHROPIC_EMBEDDINGS);
      default:
        throw new LurkError("CONFIG_INVALID", `unknown model provider "${profile.provider}"; supported: ${KNOWN_PROVIDERS.join(", ")}`);
    }
  }

  /** A provider client with one fixed secret: an API key, or a bearer token (`bearer`). */
  private client(profile: AuthProfile, secret: string | undefined, bearer: boolean): Provider {
    const timeoutMs = this.config.runs.llmTimeoutMs;
    const base = profile.baseUrl ? { baseUrl: profile.baseUrl } : {};
    // a named instance's client names itself after the instance (AssistantMessage.provider)
    const name = profile.provider;
    const api = providerApi(this.config.providers, profile.provider);
    const onResponse = api === "openai" || api === "anthropic" ? this.opts.rateLimits?.recorder(profile.provider, profile.id, api) : undefined;
    const creds = { ...(secret ? { apiKey: secret } : {}), ...base, timeoutMs, name, ...(onResponse ? { onResponse } : {}) };
    switch (api) {
      case "openai":
        // OpenAI and compatible servers take keys and tokens alike as `Authorization: Bearer`
        return new LazyProvider(name, async () => new (await providerModules.openai()).OpenAIProvider(creds));
      case "anthropic": {
        const anthropic = bearer && secret ? { authToken: secret, ...base, timeoutMs, name, ...(onResponse ? { onResponse } : {}) } : creds;
        return new LazyProvider(name, async () => new (await providerModules.anthropic()).AnthropicProvider(anthropic));
      }
      case "ollama":
        // imports its client library itself on the first call; a key or token goes as Bearer
        return new OllamaProvider({ ...(profile.baseUrl ? { host: profile.baseUrl } : {}), ...(secret ? { apiKey: secret } : {}), timeoutMs, name });
      default:
        throw new LurkError("CONFIG_INVALID", `unknown model provider "${profile.provider}"; supported: ${KNOWN_PROVIDERS.join(", ")}`);
    }
  }

  /**
   * Where a profile's secret comes from, for calls outside the providers (speech, tts.ts): its
   * API key, its token or its OAuth client (one source per profile, so OAuth tokens are shared);
   * undefined for a profile without any (a local server).
   */
  credentialSource(profile: AuthProfile): CredentialSource | undefined {
    if (!profile.credential) return profile.apiKey ? { renewable: false, secret: () => Promise.resolve(profile.apiKey!) } : undefined;
    const key = `${profile.provider}#${profile.id}#${profile.fingerprint}`;
    let source = this.sources.get(key);
    if (!source) this.sources.set(key, (source = this.sourceFor(profile, profile.credential)));
    return source;
  }

  private sourceFor(profile: AuthProfile, credential: ProfileCredential): CredentialSource {
    const label = `auth profile ${profile.provider}/${profile.id}`;
    if (credential.kind === "token") {
      return new StaticToken(credential.token, credential.expires, label, `put a new token in providers.${profile.provider}.profiles (id "${profile.id}") of config.json and restart the agent-runner`, this.opts.now);
    }
    if (credential.client.grant === "client_credentials") return new ClientCredentials(credential.client, label, this.opts.now);
    const bucket = this.opts.authBucket;
    if (!bucket) throw new LurkError("CONFIG_INVALID", `${label} uses the refresh_token grant, which needs the lurk_auth bucket; this process has no bus connection for it`);
    return new RefreshedTokens(bucket, profile.provider, profile.id, credential.client, this.opts.now);
  }
}

function credentialOf(profile: ResolvedProfileConfig): ProfileCredential | undefined {
  if (profile.token) return { kind: "token", token: profile.token, ...(profile.expires !== undefined ? { expires: profile.expires } : {}) };
  if (profile.oauth) return { kind: "oauth", client: profile.oauth };
  return undefined;
}
