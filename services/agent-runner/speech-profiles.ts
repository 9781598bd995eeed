/**
 * The auth profiles a speech provider is called with, in the order they are tried (tts.ts,
 * speech-rotation.ts), each with its own client (cached) and the key of its speech state in the
 * AuthStateStore.
 *
 * OpenAI: `tts.openai.apiKey`/`baseUrl` when set (one profile, "tts"); else the providers.openai
 * auth profiles (any kind: key, token, OAuth client): `tts.openai.profiles` in that order, or
 * `tts.openai.profile` (default the first) followed by every other one in config order.
 * ElevenLabs: "default" (ELEVENLABS_API_KEY / tts.elevenlabs.apiKey), then `tts.elevenlabs.profiles`.
 *
 * Speech state is kept under the provider `speech:<provider>` (SPEECH_STATE_PREFIX): a speech
 * failure never cools down or disables a chat model's use of the same key, nor the reverse (a
 * key can be refused for one and not the other, e.g. an OpenAI project key limited to some models).
 * Contract of `list(provider)`: the profiles, never empty; throws PROVIDER_AUTH saying what to
 * set when the provider has none, CONFIG_INVALID for a profile id that does not exist.
 */
import { createHash } from "node:crypto";
import { LurkError, type TtsProvider } from "../../shared/contract/index.js";
import type { TtsConfig } from "../../shared/runtime/config-tts.js";
import type { ProfileRef } from "./auth-profiles.js";
import type { CredentialSource } from "./credentials.js";
import { elevenlabsSpeech } from "./providers/elevenlabs-speech.js";
import { openaiSpeech } from "./providers/openai-speech.js";
import type { AuthProfile, ProviderRegistry } from "./providers/registry.js";
import type { Synthesize } from "./providers/speech.js";

/** the AuthStateStore provider name of a speech provider's state: `speech:openai`, `speech:elevenlabs` */
export const SPEECH_STATE_PREFIX = "speech:";
export const speechStateProvider = (provider: string) => `${SPEECH_STATE_PREFIX}${provider}`;

export interface SpeechProfile {
  provider: TtsProvider;
  id: string;
  /** the key of this profile's speech cooldowns and disable in the AuthStateStore */
  state: ProfileRef;
  synthesize: Synthesize;
}

const fingerprint = (...parts: Array<string | undefined>) => createHash("sha256").update(parts.map((p) => p ?? "").join("\n")).digest("hex").slice(0, 16);

export class SpeechProfiles {
  private readonly lists = new Map<TtsProvider, SpeechProfile[]>();

  constructor(private readonly config: TtsConfig, private readonly registry: Pick<ProviderRegistry, "profiles" | "credentialSource">) {}

  list(provider: TtsProvider): SpeechProfile[] {
    let list = this.lists.get(provider);
    if (!list) this.lists.set(provider, (list = provider === "elevenlabs" ? this.elevenlabs() : this.openai()));
    return list;
  }

  private openai(): SpeechProfile[] {
    const c = this.config.openai;
    const make = (id: string, fp: string, source: CredentialSource | undefined, baseUrl: string | undefined): SpeechProfile => ({
      provider: "openai", id, state: { provider: speechStateProvider("openai"), id, fingerprint: fp },
      synthesize: openaiSpeech({ ...(source ? { source } : {}), ...(baseUrl ? { baseUrl } : {}), timeoutMs: this.config.timeoutMs, ...(c.instructions ? { instructions: c.instructions } : {}) }),
    });
    if (c.apiKey || c.baseUrl) {
      const source: CredentialSource | undefined = c.apiKey ? { renewable: false, secret: () => Promise.resolve(c.apiKey!) } : undefined;
      return [make("tts", fingerprint(c.apiKey, c.baseUrl), source, c.baseUrl)];
    }
    return this.openaiOrder().map((p) => make(p.id, p.fingerprint, this.registry.credentialSource(p), p.baseUrl));
  }

  private openaiOrder(): AuthProfile[] {
    const c = this.config.openai;
    const all = this.registry.profiles("openai");
    const byId = (id: string, key: string): AuthProfile => {
      const p = all.find((x) => x.id === id);
      if (!p) throw new LurkError("PROVIDER_AUTH", `${key} "${id}" is not an auth profile of providers.openai (${all.map((x) => x.id).join(", ") || "none configured"})`);
      return p;
    };
    if (c.profiles) return c.profiles.map((id) => byId(id, "tts.openai.profiles:"));
    if (all.length === 0) {
      throw new LurkError("PROVIDER_AUTH", c.profile
        ? `tts.openai.profile "${c.profile}" is not an auth profile of providers.openai (none configured)`
        : "voice replies through OpenAI need credentials: set OPENAI_API_KEY (or OPENAI_BASE_URL for a compatible server), or tts.openai.apiKey / baseUrl; or use tts.provider \"elevenlabs\"");
    }
    const first = c.profile ? byId(c.profile, "tts.openai.profile") : all[0]!;
    return [first, ...all.filter((p) => p !== first)];
  }

  private elevenlabs(): SpeechProfile[] {
    const c = this.config.elevenlabs;
    const keys = [...(c.apiKey ? [{ id: "default", apiKey: c.apiKey, baseUrl: c.baseUrl }] : []), ...c.profiles.map((p) => ({ ...p, baseUrl: p.baseUrl ?? c.baseUrl }))];
    if (keys.length === 0) throw new LurkError("PROVIDER_AUTH", "voice replies through ElevenLabs need an API key: set ELEVENLABS_API_KEY (or tts.elevenlabs.apiKey) and restart with `npx lurkbot start`");
    return keys.map((k) => ({
      provider: "elevenlabs", id: k.id, state: { provider: speechStateProvider("elevenlabs"), id: k.id, fingerprint: fingerprint(k.apiKey, k.baseUrl) },
      synthesize: elevenlabsSpeech({
        apiKey: k.apiKey, baseUrl: k.baseUrl,
        ...(c.languageCode ? { languageCode: c.languageCode } : {}), ...(c.voiceSettings ? { voiceSettings: c.voiceSettings } : {}),
      }),
    }));
  }
}
