/**
 * The auth profiles `lurkbot auth` lists and logs in, from the config, in the agent-runner's
 * order (providerProfiles in shared/runtime/config-providers.ts, which the agent-runner's
 * registry uses too): per provider, the three built-in ones then the named instances
 * (`providers.<name>: { api, … }`), "default" first, then `providers.<name>.profiles`.
 */
import { configFilePath, type LurkConfig } from "../../shared/runtime/config.js";
import { INSTANCE_NAME, providerNames, providerProfiles, type AuthProfileConfig, type OAuthClientConfig } from "../../shared/runtime/config-providers.js";
import { CliError, EXIT, UsageError } from "./errors.js";

export type CredentialKind = "api key" | "token" | "oauth client_credentials" | "oauth refresh_token" | "none";

export interface ListedProfile {
  /** a built-in provider or a named instance */
  provider: string;
  id: string;
  kind: CredentialKind;
  /** the host of the profile's endpoint (baseUrl, Ollama's host) when one is configured */
  endpoint?: string;
  /** a token's expiry, epoch ms */
  expires?: number;
  oauth?: OAuthClientConfig;
}

const PROFILE_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** host[:port] of an endpoint, never its userinfo or path */
export function endpointHost(endpoint: string | undefined): string | undefined {
  if (!endpoint?.trim()) return undefined;
  const text = endpoint.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    try {
      return new URL(text).host || undefined;
    } catch {
      return undefined;
    }
  }
  // Ollama's `host:port` or `:port`
  return text.replace(/^[^@/]*@/, "").split("/")[0] || undefined;
}

function kindOf(profile: Pick<AuthProfileConfig, "apiKey" | "token" | "oauth">): CredentialKind {
  if (profile.apiKey) return "api key";
  if (profile.token) return "token";
  if (profile.oauth) return `oauth ${profile.oauth.grant}`;
  return "none";
}

/** Every profile the agent-runner would use, in its order, and notes on configured ones it ignores. */
export function configuredProfiles(cfg: LurkConfig): { profiles: ListedProfile[]; notes: string[] } {
  const profiles: ListedProfile[] = [];
  const notes: string[] = [];
  for (const provider of providerNames(cfg.providers)) {
    const { profiles: own, shadowed } = providerProfiles(cfg.providers, provider);
    for (const _ of shadowed) {
      notes.push(`providers.${provider}.profiles has a profile "default" that is not used: the provider-level ${provider === "ollama" ? "apiKey/host" : "apiKey/baseUrl"} form the profile "default"; rename it.`);
    }
    for (const p of own) {
      profiles.push({
        provider, id: p.id, kind: kindOf(p), ...host(p.baseUrl),
        ...(p.expires !== undefined ? { expires: p.expires } : {}),
        ...(p.oauth ? { oauth: p.oauth } : {}),
      });
    }
  }
  return { profiles, notes };
}

function host(endpoint: string | undefined): { endpoint?: string } {
  const h = endpointHost(endpoint);
  return h ? { endpoint: h } : {};
}

/** the spelling of `lurkbot auth <sub> PROVIDER PROFILE`'s two words, checked before the config is read */
export function checkProfileArgs(provider: string, id: string): void {
  if (!INSTANCE_NAME.test(provider)) throw new UsageError(`"${provider}" is not a provider name (openai, anthropic, ollama or a named instance: lowercase letters, digits and '-'); see \`lurkbot auth list\`.`, "auth");
  if (!PROFILE_ID.test(id)) throw new UsageError(`"${id}" is not a profile id (letters, digits, '.', '_', '-'); see \`lurkbot auth list\`.`, "auth");
}

/** A provider the config knows (built-in, or a named instance of `providers`); else a config error that lists them. */
export function checkKnownProvider(cfg: LurkConfig, provider: string): void {
  const names = providerNames(cfg.providers);
  if (names.includes(provider)) return;
  throw new CliError(
    `unknown provider "${provider}"; it is one of ${names.join(", ")}. A named instance is a key of \`providers\` in ${configFilePath(cfg.home)} with its "api" (see \`lurkbot auth list\`).`,
    EXIT.config,
  );
}

const OAUTH_EXAMPLE = `"oauth": { "grant": "refresh_token", "tokenUrl": "https://…/token", "authorizeUrl": "https://…/authorize", "clientId": "…", "scope": "offline_access …" }`;

/**
 * The OAuth client of a refresh_token profile, for `auth login` (which also needs authorizeUrl)
 * and `auth import`; anything else is a config error that says what to put in config.json.
 */
export function refreshTokenClient(cfg: LurkConfig, provider: string, id: string, sub: "login" | "import"): OAuthClientConfig {
  checkKnownProvider(cfg, provider);
  const file = configFilePath(cfg.home);
  const listed = configuredProfiles(cfg).profiles;
  const profile = listed.find((p) => p.provider === provider && p.id === id);
  if (!profile) {
    const shadowed = providerProfiles(cfg.providers, provider).shadowed.includes(id);
    const others = listed.filter((p) => p.provider === provider).map((p) => p.id);
    throw new CliError(shadowed
      ? `the profile "${id}" of providers.${provider}.profiles is not used: the provider-level key/endpoint form the profile "default". Rename it in ${file}.`
      : `there is no auth profile ${provider}/${id}${others.length ? ` (${provider} has ${others.join(", ")})` : ""}. Add it to providers.${provider}.profiles in ${file}: { "id": "${id}", ${OAUTH_EXAMPLE} }`, EXIT.config);
  }
  const client = profile.oauth;
  if (!client || client.grant !== "refresh_token") {
    const what = profile.kind === "oauth client_credentials"
      ? "an OAuth client with the client_credentials grant, which gets its tokens itself with clientSecret: it needs no login"
      : profile.kind === "none" ? "no credential" : `an ${profile.kind === "token" ? "bearer token" : "API key"}`;
    throw new CliError(
      `auth profile ${provider}/${id} has ${what}; \`lurkbot auth ${sub}\` stores tokens only for an OAuth client with the refresh_token grant. ` +
        `To use one, give the profile in providers.${provider}.profiles of ${file} ${OAUTH_EXAMPLE}${profile.kind === "none" ? "" : " instead"}.`,
      EXIT.config,
    );
  }
  if (sub === "login" && !client.authorizeUrl) {
    throw new CliError(
      `auth profile ${provider}/${id} has no oauth.authorizeUrl, so there is no page to log in at. Add "authorizeUrl": "https://…/authorize" ` +
        `(the authorization endpoint of the server of ${endpointHost(client.tokenUrl)}) to its oauth in ${file}, or store tokens you have with \`lurkbot auth import ${provider} ${id} < tokens.json\`.`,
      EXIT.config,
    );
  }
  return client;
}
