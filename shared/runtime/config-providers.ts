/**
 * The `providers` config key: per provider its default endpoint and key (also from the
 * environment: OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL,
 * OLLAMA_HOST) and any number of further auth profiles:
 *   "providers": { "openai": { "apiKey": "sk-a", "profiles": [{ "id": "team", "apiKey": "sk-b" }] } }
 * The default endpoint and key form the profile "default" (listed first); a profile without a
 * baseUrl uses the provider's. The agent-runner rotates among profiles (services/agent-runner/auth-profiles.ts).
 *
 * A profile holds one credential (seed 001 §3.9), or none for a local server that needs no key:
 *  - `apiKey`: an API key;
 *  - `token` (+ `expires`): a bearer token, e.g. `claude setup-token`'s; unusable once expired;
 *  - `oauth`: an OAuth 2.0 client. `client_credentials` gets access tokens with the client's
 *    secret (e.g. a Microsoft Entra ID app for Azure OpenAI); `refresh_token` refreshes the tokens
 *    `lurkbot auth login` (or `auth import`) stored in the `lurk_auth` KV bucket, shared by every
 *    agent-runner of the cluster because a refresh may replace the refresh token.
 *
 * Named provider instances: any other key under `providers` is an instance of one of the three
 * APIs with its own endpoint, keys, profiles and cooldowns, named in model refs like a provider:
 *   "providers": { "minimax": { "api": "anthropic", "baseUrl": "https://api.minimax.io/anthropic", "apiKey": "…" } }
 * so `minimax/MiniMax-M2.5` and `anthropic/claude-sonnet-4-6` work side by side.
 */
import { z } from "zod";

export const OAUTH_GRANTS = ["client_credentials", "refresh_token"] as const;

export const oauthClientConfigSchema = z.object({
  grant: z.enum(OAUTH_GRANTS),
  /** the authorization server's token endpoint */
  tokenUrl: z.url({ protocol: /^https?$/ }),
  clientId: z.string().min(1).max(512),
  /** never logged; required by client_credentials, optional for refresh_token (public clients) */
  clientSecret: z.string().min(1).optional(),
  /** space-separated scopes asked for (client_credentials, and the login of refresh_token) */
  scope: z.string().max(2048).optional(),
  /** further request fields, e.g. { "audience": "https://llm.example" } or { "resource": ... }: sent to the token endpoint and, for a login, in the authorization request */
  params: z.record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/), z.string().max(2048)).optional(),
  /** the token request's body: form-encoded (RFC 6749) or JSON (some servers take only that) */
  body: z.enum(["form", "json"]).default("form"),
  /** refresh_token: the authorization endpoint `lurkbot auth login` sends the browser to (PKCE) */
  authorizeUrl: z.url({ protocol: /^https?$/ }).optional(),
  /** refresh_token: the redirect URI registered for the client; absent: a loopback one on a free port */
  redirectUri: z.url({ protocol: /^https?$/ }).optional(),
}).refine((o) => o.grant !== "client_credentials" || o.clientSecret !== undefined, { message: "the client_credentials grant needs clientSecret", path: ["clientSecret"] });
export type OAuthClientConfig = z.infer<typeof oauthClientConfigSchema>;

/** An expiry as an ISO date or epoch milliseconds. */
const expiresSchema = z.union([z.number().int().positive(), z.iso.datetime({ offset: true }), z.iso.date()])
  .transform((v) => (typeof v === "number" ? v : Date.parse(v)));

export const authProfileConfigSchema = z.object({
  id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "a profile id is letters, digits, '.', '_', '-' (at most 64)"),
  /** never logged; redacted from logs and events */
  apiKey: z.string().min(1).optional(),
  /** a bearer token (never logged); `expires` ends its use */
  token: z.string().min(1).optional(),
  expires: expiresSchema.optional(),
  oauth: oauthClientConfigSchema.optional(),
  /** the endpoint of this profile (Ollama: its host) */
  baseUrl: z.string().min(1).optional(),
}).refine((p) => [p.apiKey, p.token, p.oauth].filter((x) => x !== undefined).length <= 1, "a profile has one credential: apiKey, token or oauth")
  .refine((p) => p.expires === undefined || p.token !== undefined, { message: "expires goes with token", path: ["expires"] });
export type AuthProfileConfig = z.infer<typeof authProfileConfigSchema>;

const profiles = z.array(authProfileConfigSchema).max(32).default([])
  .refine((list) => new Set(list.map((p) => p.id)).size === list.length, "profile ids must be unique");

/** The providers LurkBot speaks to (`provider/model` ids); named instances (below) speak one of their APIs. */
export const PROVIDER_NAMES = ["openai", "anthropic", "ollama"] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];
export type ProviderApi = ProviderName;

/** a named instance: one of the APIs at its own endpoint (Ollama: its host) */
export const providerInstanceSchema = z.object({
  api: z.enum(PROVIDER_NAMES),
  baseUrl: z.string().min(1).optional(),
  apiKey: z.string().optional(),
  profiles,
});
export type ProviderInstanceConfig = z.infer<typeof providerInstanceSchema>;

/** a provider instance's name (also the built-in ones' spelling): lowercase letters, digits and '-' */
export const INSTANCE_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;

const builtinProviders = z.object({
  openai: z.object({ baseUrl: z.string().optional(), apiKey: z.string().optional(), profiles }).default({ profiles: [] }),
  anthropic: z.object({ baseUrl: z.string().optional(), apiKey: z.string().optional(), profiles }).default({ profiles: [] }),
  ollama: z.object({ host: z.string().optional(), apiKey: z.string().optional(), profiles }).default({ profiles: [] }),
});

/** the three built-in providers; any other key is a named instance (read it with providerApi / providerProfiles) */
export type ProvidersConfig = z.output<typeof builtinProviders> & { [name: string]: unknown };

export const providersConfigSchema = builtinProviders.catchall(providerInstanceSchema).superRefine((p, ctx) => {
  for (const name of Object.keys(p)) {
    if (!INSTANCE_NAME.test(name)) ctx.addIssue({ code: "custom", input: name, path: [name], message: "a provider instance name is lowercase letters, digits and '-' (it is the prefix of its model refs)" });
  }
}).default({ openai: { profiles: [] }, anthropic: { profiles: [] }, ollama: { profiles: [] } } as never) as unknown as z.ZodType<ProvidersConfig>;

/** The API a provider name speaks: a built-in provider's own, a named instance's `api`; undefined when unknown. */
export function providerApi(providers: ProvidersConfig | undefined, name: string): ProviderApi | undefined {
  if ((PROVIDER_NAMES as readonly string[]).includes(name)) return name as ProviderApi;
  const instance = providers && Object.hasOwn(providers, name) ? (providers[name] as ProviderInstanceConfig | undefined) : undefined;
  return instance?.api;
}

/** Every provider name a model ref may use: the built-in ones, then the named instances. */
export function providerNames(providers: ProvidersConfig | undefined): string[] {
  return [...PROVIDER_NAMES, ...Object.keys(providers ?? {}).filter((n) => !(PROVIDER_NAMES as readonly string[]).includes(n))];
}

/** A profile as the agent-runner uses it: the configured one, its endpoint defaulted to the provider's. */
export type ResolvedProfileConfig = Omit<AuthProfileConfig, "baseUrl"> & { baseUrl?: string };

/**
 * A provider's auth profiles in the order the agent-runner uses them (the agent-runner's
 * registry and `lurkbot auth list` both read them here): "default", from the provider-level key
 * and endpoint (Ollama: also when no profile is configured), first; then `profiles`, each
 * without a baseUrl taking the provider's. A configured profile named "default" is used only
 * when there is no provider-level one; otherwise its id is in `shadowed`.
 */
export function providerProfiles(providers: ProvidersConfig, name: string): { profiles: ResolvedProfileConfig[]; shadowed: string[] } {
  const api = providerApi(providers, name);
  const c = (Object.hasOwn(providers, name) ? providers[name] : undefined) as { apiKey?: string; baseUrl?: string; host?: string; profiles: AuthProfileConfig[] } | undefined;
  if (!api || !c) return { profiles: [], shadowed: [] };
  const endpoint = name === "ollama" ? c.host : c.baseUrl;
  const hasDefault = api === "ollama" ? c.profiles.length === 0 || !!endpoint || !!c.apiKey : !!c.apiKey || !!endpoint;
  const profiles: ResolvedProfileConfig[] = hasDefault ? [{ id: "default", ...(c.apiKey ? { apiKey: c.apiKey } : {}), ...(endpoint ? { baseUrl: endpoint } : {}) }] : [];
  const shadowed: string[] = [];
  for (const p of c.profiles) {
    if (p.id === "default" && profiles.length > 0) {
      shadowed.push(p.id);
      continue;
    }
    const baseUrl = p.baseUrl ?? endpoint;
    profiles.push({ ...p, ...(baseUrl ? { baseUrl } : {}) });
  }
  return { profiles, shadowed };
}

/** Every key, token and client secret of the providers' config (for log and event redaction). */
export function providerSecrets(providers: ProvidersConfig): string[] {
  const out: string[] = [];
  for (const p of Object.values(providers) as Array<{ apiKey?: string; profiles: AuthProfileConfig[] }>) {
    if (p.apiKey) out.push(p.apiKey);
    for (const profile of p.profiles) {
      for (const secret of [profile.apiKey, profile.token, profile.oauth?.clientSecret]) if (secret) out.push(secret);
    }
  }
  return out;
}
