/**
 * The `tts` config key: replies spoken as voice messages (services/agent-runner/tts.ts), off by default.
 *   "tts": { "auto": "inbound", "provider": "openai", "openai": { "voice": "nova" } }
 * `auto`: off (default) | always (every delivered reply) | inbound (a reply to a message that
 * carried a voice note or other audio) | tagged (a reply whose text has a [[tts]] directive).
 * A session overrides it with `/tts off|on|inbound|tagged` (router). The audio is made by the
 * agent-runner after the run's final text is known, stored in the media store and attached to
 * the reply (the text stays: a failed synthesis only loses the audio).
 * `provider`: openai (OpenAI's /v1/audio/speech, or a compatible server; the openai provider's
 * auth profiles, `openai.profile` first (`openai.profiles` to choose which), or
 * `openai.apiKey`/`baseUrl` of its own) or elevenlabs (POST /v1/text-to-speech/{voiceId}; key
 * from ELEVENLABS_API_KEY or `elevenlabs.apiKey`, more keys in `elevenlabs.profiles`). Edge TTS
 * is not supported: it has no official API.
 * `fallbacks`: the providers tried, in order, when the chosen one (the model's or the tool's
 * choice, then `provider`) gives no audio; default none. Within a provider a rate limit, auth,
 * billing, overload, timeout or server failure cools the profile down (the agent-runner's auth
 * state, as for model calls, under speech keys of their own) and the next profile is tried; all
 * the calls of one voice message share `totalTimeoutMs`, each call at most `timeoutMs`.
 * Formats: "auto" sends OGG/Opus to Telegram and Discord (their voice notes and voice messages)
 * and MP3 elsewhere.
 * A spoken text longer than `maxChars` is summarized by one model call (`summaryModel`, else
 * compaction.model, else the run's models) when `summarize` is on, else (or when that fails) cut at
 * a sentence end. `modelOverrides: false` makes the model's [[tts:provider=… voice=…]] ignored.
 */
import { z } from "zod";
import { ttsAutoSchema, ttsProviderSchema, ttsVoiceSchema } from "../contract/index.js";

export const OPENAI_TTS_VOICES = ["alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer", "verse"] as const;
export const OPENAI_TTS_FORMATS = ["mp3", "opus", "aac", "flac", "wav"] as const;
/** ElevenLabs output formats that make a playable file (raw PCM, µ-law and A-law do not) */
export const ELEVENLABS_FORMATS = [
  "mp3_22050_32", "mp3_44100_32", "mp3_44100_64", "mp3_44100_96", "mp3_44100_128", "mp3_44100_192",
  "opus_48000_32", "opus_48000_64", "opus_48000_96", "opus_48000_128", "opus_48000_192",
] as const;
export type ElevenLabsFormat = (typeof ELEVENLABS_FORMATS)[number];
export type OpenAITtsFormat = (typeof OPENAI_TTS_FORMATS)[number];

export const TTS_DEFAULTS = { auto: "off", provider: "openai", maxChars: 1500, summarize: true, timeoutMs: 60_000, totalTimeoutMs: 120_000, modelOverrides: true } as const;

const profileIdSchema = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "a profile id is letters, digits, '.', '_', '-' (at most 64)");

const providerSchema = z.string({ error: () => "use \"openai\" or \"elevenlabs\"" }).superRefine((value, ctx) => {
  if (value === "openai" || value === "elevenlabs") return;
  ctx.addIssue({
    code: "custom", input: value,
    message: value === "edge"
      ? "\"edge\" is not supported: Microsoft's Edge TTS has no official API; use \"openai\" (or an OpenAI-compatible server through tts.openai.baseUrl) or \"elevenlabs\""
      : `"${String(value).slice(0, 40)}" is not a speech provider; use "openai" or "elevenlabs"`,
  });
}).transform((v) => v as z.infer<typeof ttsProviderSchema>);

export const ttsConfigSchema = z.object({
  auto: z.enum(ttsAutoSchema.options, { error: () => `use one of ${ttsAutoSchema.options.join(", ")} (off: no voice replies)` }).default(TTS_DEFAULTS.auto),
  provider: providerSchema.default(TTS_DEFAULTS.provider),
  /** a longer spoken text is summarized (summarize) or cut at a sentence end */
  maxChars: z.number().int().min(100).max(4096).default(TTS_DEFAULTS.maxChars),
  summarize: z.boolean().default(TTS_DEFAULTS.summarize),
  /** `provider/model` of the summary call; default compaction.model, else the run's models */
  summaryModel: z.string().min(1).max(200).optional(),
  /** one synthesis call (the summary call has runs.llmTimeoutMs) */
  timeoutMs: z.number().int().min(1_000).max(300_000).default(TTS_DEFAULTS.timeoutMs),
  /** every synthesis call of one voice message together: other profiles, fallback providers */
  totalTimeoutMs: z.number().int().min(1_000).max(600_000).default(TTS_DEFAULTS.totalTimeoutMs),
  /** providers tried in order when the chosen one gives no audio (e.g. ["elevenlabs"]); default none */
  fallbacks: z.array(providerSchema).max(2).default([])
    .refine((list) => new Set(list).size === list.length, "list each provider once"),
  /** the model's [[tts:provider=… voice=… model=… speed=…]] directives are honoured */
  modelOverrides: z.boolean().default(TTS_DEFAULTS.modelOverrides),
  openai: z.object({
    /** tts-1, tts-1-hd, gpt-4o-mini-tts, or a compatible server's model */
    model: z.string().min(1).max(100).default("tts-1"),
    /** OpenAI's voices (alloy, ash, ballad, coral, echo, fable, nova, onyx, sage, shimmer, verse) or a compatible server's */
    voice: ttsVoiceSchema.default("alloy"),
    /** auto: opus for Telegram voice notes and Discord voice messages, mp3 elsewhere */
    format: z.enum(["auto", ...OPENAI_TTS_FORMATS], { error: () => `use auto or one of ${OPENAI_TTS_FORMATS.join(", ")}` }).default("auto"),
    speed: z.number().min(0.25).max(4).optional(),
    /** how to speak (gpt-4o-mini-tts only), e.g. "calm and friendly" */
    instructions: z.string().min(1).max(2_000).optional(),
    /** the id of the providers.openai auth profile tried first (default: the first, "default"); the others follow */
    profile: z.string().min(1).max(64).optional(),
    /** the providers.openai auth profiles speech may use, in order (default: `profile`, then every other one) */
    profiles: z.array(profileIdSchema).min(1).max(32).optional(),
    /** the speech API when it is not the openai provider's (a local server) */
    baseUrl: z.url({ protocol: /^https?$/ }).optional(),
    apiKey: z.string().min(1).optional(),
  }).prefault({}),
  elevenlabs: z.object({
    /** env ELEVENLABS_API_KEY (or XI_API_KEY): the profile "default", tried first */
    apiKey: z.string().min(1).optional(),
    baseUrl: z.url({ protocol: /^https?$/ }).default("https://api.elevenlabs.io"),
    /** more keys (other accounts), tried in order after the default one */
    profiles: z.array(z.object({
      id: profileIdSchema,
      apiKey: z.string().min(1),
      /** default: elevenlabs.baseUrl */
      baseUrl: z.url({ protocol: /^https?$/ }).optional(),
    })).max(16).default([]),
    voiceId: ttsVoiceSchema.default("21m00Tcm4TlvDq8ikWAM"),
    modelId: z.string().regex(/^[A-Za-z0-9_.-]{1,100}$/, "an ElevenLabs model id, e.g. eleven_multilingual_v2").default("eleven_multilingual_v2"),
    /** auto: opus_48000_64 for Telegram voice notes and Discord voice messages, mp3_44100_128 elsewhere */
    format: z.enum(["auto", ...ELEVENLABS_FORMATS], { error: () => `use auto or an MP3 or Opus format (${ELEVENLABS_FORMATS.join(", ")}); raw PCM, µ-law and A-law make no playable file` }).default("auto"),
    /** ISO-639-1 code, for models that take one */
    languageCode: z.string().regex(/^[a-z]{2}$/, "a two-letter ISO-639-1 code, e.g. en").optional(),
    voiceSettings: z.object({
      stability: z.number().min(0).max(1).optional(),
      similarityBoost: z.number().min(0).max(1).optional(),
      style: z.number().min(0).max(1).optional(),
      useSpeakerBoost: z.boolean().optional(),
      speed: z.number().min(0.7).max(1.2).optional(),
    }).optional(),
  }).prefault({}).superRefine((c, ctx) => {
    const ids = [...(c.apiKey ? ["default"] : []), ...c.profiles.map((p) => p.id)];
    if (new Set(ids).size !== ids.length) {
      ctx.addIssue({ code: "custom", path: ["profiles"], input: c.profiles, message: `profile ids must be unique${c.apiKey ? " (\"default\" is the key of ELEVENLABS_API_KEY / tts.elevenlabs.apiKey)" : ""}` });
    }
  }),
}).prefault({});
export type TtsConfig = z.infer<typeof ttsConfigSchema>;

/** ELEVENLABS_API_KEY (or XI_API_KEY) into tts.elevenlabs.apiKey (config.ts parseConfig). */
export function ttsEnvOverrides(raw: Record<string, any>, env: Record<string, string | undefined>): void {
  const key = env.ELEVENLABS_API_KEY || env.XI_API_KEY;
  if (!key) return;
  raw.tts = { ...(raw.tts ?? {}) };
  raw.tts.elevenlabs = { ...(raw.tts.elevenlabs ?? {}), apiKey: key };
}

/** The secret values of the tts config, for log redaction. */
export function ttsSecrets(tts: TtsConfig): Array<string | undefined> {
  return [tts.openai.apiKey, tts.elevenlabs.apiKey, ...tts.elevenlabs.profiles.map((p) => p.apiKey)];
}
