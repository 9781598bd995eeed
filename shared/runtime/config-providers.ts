/**
 * The `providers` config key: per provider its default endpoint and key (also from the
 * environment: OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL,
 * OLLAMA_HOST) and any number of further auth profiles:
 *   "providers": { "openai": { "apiKey": "sk-a", "profiles": [{ "id": "team", "apiKey": "sk-b" }] } }
 * The default endpoint and key form the profile "default" (listed first); a profile without a
 * baseUrl uses the provider's. The agent-runner rotates among profiles (services/agent-runner/auth-profiles.ts).
 */
import { z } from "zod";

export const authProfileConfigSchema = z.object({
  id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "a profile id is letters, digits, '.', '_', '-' (at most 64)"),
  /** never logged; redacted from logs and events */
  apiKey: z.string().min(1).optional(),
  /** the endpoint of this profile (Ollama: its host) */
  baseUrl: z.string().min(1).optional(),
});
export type AuthProfileConfig = z.infer<typeof authProfileConfigSchema>;

const profiles = z.array(authProfileConfigSchema).max(32).default([])
  .refine((list) => new Set(list.map((p) => p.id)).size === list.length, "profile ids must be unique");

export const providersConfigSchema = z.object({
  openai: z.object({ baseUrl: z.string().optional(), apiKey: z.string().optional(), profiles }).default({ profiles: [] }),
  anthropic: z.object({ baseUrl: z.string().optional(), apiKey: z.string().optional(), profiles }).default({ profiles: [] }),
  ollama: z.object({ host: z.string().optional(), apiKey: z.string().optional(), profiles }).default({ profiles: [] }),
}).default({ openai: { profiles: [] }, anthropic: { profiles: [] }, ollama: { profiles: [] } });
export type ProvidersConfig = z.infer<typeof providersConfigSchema>;

/** Every API key of the providers' config (for log and event redaction). */
export function providerSecrets(providers: ProvidersConfig): string[] {
  const out: string[] = [];
  for (const p of [providers.openai, providers.anthropic, providers.ollama]) {
    if (p.apiKey) out.push(p.apiKey);
    for (const profile of p.profiles) if (profile.apiKey) out.push(profile.apiKey);
  }
  return out;
}
