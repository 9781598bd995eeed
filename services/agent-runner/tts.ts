/**
 * Text to a voice message in the media store (`tts`, shared/runtime/config-tts.ts), for voice
 * replies (voice-reply.ts) and the tts tool (`lurk.agent-runner.speak`, tts-serve.ts).
 *
 * Contract of `speak(opts)`: synthesizes `text` with the provider (opts, else tts.provider), voice
 * and model (opts, else the provider's config), in the channel's format (tts.<provider>.format;
 * "auto": OGG/Opus for Telegram's voice notes, MP3 elsewhere), within tts.timeoutMs, stores it
 * (media.maxFileMb) and resolves with an audio attachment (`voice.ogg` / `voice.mp3`, its ref).
 * Rejects with a LurkError: PROVIDER_AUTH when the provider has no credentials (saying what to
 * set), the provider's classified failure, LIMIT_EXCEEDED / UNAVAILABLE from the store.
 * Credentials: OpenAI uses `tts.openai.apiKey`/`baseUrl` when set, else the providers.openai auth
 * profile `tts.openai.profile` (default the first: OPENAI_API_KEY, OPENAI_BASE_URL), whatever its
 * kind (key, token, OAuth client). ElevenLabs uses ELEVENLABS_API_KEY or tts.elevenlabs.apiKey.
 */
import { LurkError, type Attachment, type ChannelName, type TtsProvider } from "../../shared/contract/index.js";
import type { TtsConfig } from "../../shared/runtime/config-tts.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { MediaStore } from "../../shared/runtime/media.js";
import type { CredentialSource } from "./credentials.js";
import { elevenlabsSpeech } from "./providers/elevenlabs-speech.js";
import { openaiSpeech } from "./providers/openai-speech.js";
import type { ProviderRegistry } from "./providers/registry.js";
import type { Synthesize } from "./providers/speech.js";

/** channels whose voice notes want OGG/Opus (the others get MP3, which every channel plays) */
const VOICE_NOTE_CHANNELS = new Set<string>(["telegram"]);

const MIME_OF: Record<string, { mime: string; ext: string }> = {
  mp3: { mime: "audio/mpeg", ext: "mp3" }, opus: { mime: "audio/ogg", ext: "ogg" }, aac: { mime: "audio/aac", ext: "aac" },
  flac: { mime: "audio/flac", ext: "flac" }, wav: { mime: "audio/wav", ext: "wav" },
};

export interface SpeakOptions {
  text: string;
  channel?: ChannelName | string;
  provider?: TtsProvider;
  voice?: string;
  model?: string;
  speed?: number;
  signal: AbortSignal;
}

export interface Spoken {
  attachment: Attachment & { kind: "audio"; ref: string; size: number };
  provider: TtsProvider;
  voice: string;
  model: string;
}

export class Speaker {
  private openai: Synthesize | undefined;
  private elevenlabs: Synthesize | undefined;

  constructor(
    private readonly config: TtsConfig,
    private readonly registry: Pick<ProviderRegistry, "profiles" | "credentialSource">,
    private readonly media: () => Pick<MediaStore, "put" | "maxFileBytes">,
    private readonly log: Logger,
  ) {}

  async speak(opts: SpeakOptions): Promise<Spoken> {
    const provider = opts.provider ?? this.config.provider;
    const voiceNote = opts.channel !== undefined && VOICE_NOTE_CHANNELS.has(opts.channel);
    const started = Date.now();
    let voice: string, model: string, format: string, file: { mime: string; ext: string };
    let synthesize: Synthesize;
    if (provider === "elevenlabs") {
      const c = this.config.elevenlabs;
      voice = opts.voice ?? c.voiceId;
      model = opts.model ?? c.modelId;
      format = c.format === "auto" ? (voiceNote ? "opus_48000_64" : "mp3_44100_128") : c.format;
      file = format.startsWith("opus") ? MIME_OF.opus! : MIME_OF.mp3!;
      synthesize = this.elevenlabsClient();
    } else {
      const c = this.config.openai;
      voice = opts.voice ?? c.voice;
      model = opts.model ?? c.model;
      format = c.format === "auto" ? (voiceNote ? "opus" : "mp3") : c.format;
      file = MIME_OF[format]!;
      synthesize = this.openaiClient();
    }
    const signal = AbortSignal.any([opts.signal, AbortSignal.timeout(this.config.timeoutMs)]);
    const store = this.media();
    const speed = opts.speed ?? (provider === "openai" ? this.config.openai.speed : undefined);
    const bytes = await synthesize({ text: opts.text, model, voice, format, ...(speed !== undefined ? { speed } : {}), signal, maxBytes: store.maxFileBytes })
      .catch((err: unknown) => {
        const e = LurkError.from(err);
        throw e.code === "ABORTED" && !opts.signal.aborted ? new LurkError("PROVIDER_TIMEOUT", `${provider}: no audio within ${this.config.timeoutMs} ms (tts.timeoutMs)`) : e;
      });
    const name = `voice.${file.ext}`;
    const stored = await store.put(bytes, { mime: file.mime, name });
    this.log.info({ provider, voice, model, format, chars: opts.text.length, bytes: bytes.byteLength, ms: Date.now() - started }, "speech synthesized");
    return { attachment: { kind: "audio", mime: file.mime, name, size: stored.size, ref: stored.ref }, provider, voice, model };
  }

  private openaiClient(): Synthesize {
    if (this.openai) return this.openai;
    const c = this.config.openai;
    let source: CredentialSource | undefined;
    let baseUrl = c.baseUrl;
    if (c.apiKey) source = { renewable: false, secret: () => Promise.resolve(c.apiKey!) };
    else if (!c.baseUrl) {
      const profiles = this.registry.profiles("openai");
      const profile = c.profile ? profiles.find((p) => p.id === c.profile) : profiles[0];
      if (!profile) {
        throw new LurkError("PROVIDER_AUTH", c.profile
          ? `tts.openai.profile "${c.profile}" is not an auth profile of providers.openai (${profiles.map((p) => p.id).join(", ") || "none configured"})`
          : "voice replies through OpenAI need credentials: set OPENAI_API_KEY (or OPENAI_BASE_URL for a compatible server), or tts.openai.apiKey / baseUrl; or use tts.provider \"elevenlabs\"");
      }
      source = this.registry.credentialSource(profile);
      baseUrl = profile.baseUrl;
    }
    return (this.openai = openaiSpeech({ ...(source ? { source } : {}), ...(baseUrl ? { baseUrl } : {}), timeoutMs: this.config.timeoutMs, ...(c.instructions ? { instructions: c.instructions } : {}) }));
  }

  private elevenlabsClient(): Synthesize {
    if (this.elevenlabs) return this.elevenlabs;
    const c = this.config.elevenlabs;
    if (!c.apiKey) throw new LurkError("PROVIDER_AUTH", "voice replies through ElevenLabs need an API key: set ELEVENLABS_API_KEY (or tts.elevenlabs.apiKey) and restart with `npx lurkbot start`");
    return (this.elevenlabs = elevenlabsSpeech({
      apiKey: c.apiKey, baseUrl: c.baseUrl,
      ...(c.languageCode ? { languageCode: c.languageCode } : {}), ...(c.voiceSettings ? { voiceSettings: c.voiceSettings } : {}),
    }));
  }
}
