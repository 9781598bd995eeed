/**
 * Text to a voice message in the media store (`tts`, shared/runtime/config-tts.ts), for voice
 * replies (voice-reply.ts) and the tts tool (`lurk.agent-runner.speak`, tts-serve.ts).
 *
 * Contract of `speak(opts)`: synthesizes `text` in the channel's format (tts.<provider>.format;
 * "auto": OGG/Opus for Telegram's voice notes and Discord's voice messages, MP3 elsewhere),
 * stores it (media.maxFileMb) and resolves with an audio attachment (`voice.ogg` / `voice.mp3`,
 * its ref) and who spoke it. Providers are tried in order: opts.provider (else tts.provider),
 * then tts.provider, then tts.fallbacks, each once; the first one takes opts' voice and model, a
 * fallback its own configured ones (a voice of one provider means nothing to the other). Within a
 * provider its profiles rotate with cooldowns (speech-profiles.ts, speech-rotation.ts). All the
 * calls share tts.totalTimeoutMs, each at most tts.timeoutMs.
 * Rejects with a LurkError when no provider gave audio: with one attempt its error as it was
 * (PROVIDER_AUTH when the provider has no credentials, saying what to set; the provider's
 * classified failure); with several the last one, its message naming the earlier ones;
 * LIMIT_EXCEEDED / UNAVAILABLE from the store; ABORTED when opts.signal fired.
 * Usage: each synthesis a provider answered with audio is booked (in the background, with `book`)
 * to opts.owner under purpose `speech`: the text's characters (code points) at `provider/model`
 * (usage-booking.ts; priced by the sessions actor, shared/runtime/media-prices.ts). Failed calls
 * are not booked.
 */
import { emptyUsage, LurkError, type Attachment, type ChannelName, type TtsProvider } from "../../shared/contract/index.js";
import type { TtsConfig } from "../../shared/runtime/config-tts.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { MediaStore } from "../../shared/runtime/media.js";
import type { AuthStateStore } from "./auth-profiles.js";
import type { ProviderRegistry } from "./providers/registry.js";
import { SpeechProfiles } from "./speech-profiles.js";
import type { BookUsage, UsageOwner } from "./usage-booking.js";
import { synthesizeRotating, type SpeechAttempt } from "./speech-rotation.js";

/** channels whose voice messages want OGG/Opus (Telegram's voice notes, Discord's voice messages); the others get MP3, which every channel plays */
const VOICE_NOTE_CHANNELS = new Set<string>(["telegram", "discord"]);

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
  /** whose speech it is, for the usage ledger (without one it is not booked) */
  owner?: UsageOwner;
}

export interface Spoken {
  attachment: Attachment & { kind: "audio"; ref: string; size: number };
  provider: TtsProvider;
  voice: string;
  model: string;
  /** the calls that failed or were skipped (cooling down) before this one: `provider/profile CODE` */
  failed?: string[];
}

/** One provider's request for this voice message. */
interface Plan {
  provider: TtsProvider;
  voice: string;
  model: string;
  /** the provider's own format name */
  format: string;
  file: { mime: string; ext: string };
  speed?: number;
}

export class Speaker {
  private readonly profiles: SpeechProfiles;

  constructor(
    private readonly config: TtsConfig,
    registry: Pick<ProviderRegistry, "profiles" | "credentialSource">,
    private readonly media: () => Pick<MediaStore, "put" | "maxFileBytes">,
    private readonly log: Logger,
    /** the agent-runner's auth state (cooldowns survive restarts); without it failures only move on to the next profile */
    private readonly store?: AuthStateStore,
    /** books each synthesis's characters in the usage ledger (usage-booking.ts); without it nothing is booked */
    private readonly book?: BookUsage,
  ) {
    this.profiles = new SpeechProfiles(config, registry);
  }

  /** The providers tried for a voice message, in order (each once). */
  order(requested: TtsProvider | undefined): TtsProvider[] {
    return [...new Set([requested ?? this.config.provider, this.config.provider, ...this.config.fallbacks])];
  }

  async speak(opts: SpeakOptions): Promise<Spoken> {
    const started = Date.now();
    const store = this.media();
    const deadline = started + this.config.totalTimeoutMs;
    const failed: SpeechAttempt[] = [];
    for (const [i, provider] of this.order(opts.provider).entries()) {
      const plan = this.plan(provider, opts.channel, i === 0 ? opts : opts.speed !== undefined ? { speed: opts.speed } : {});
      let profiles;
      try {
        profiles = this.profiles.list(provider);
      } catch (err) {
        failed.push({ label: provider, error: LurkError.from(err) });
        continue;
      }
      const result = await synthesizeRotating(profiles, {
        text: opts.text, model: plan.model, voice: plan.voice, format: plan.format, ...(plan.speed !== undefined ? { speed: plan.speed } : {}), maxBytes: store.maxFileBytes,
      }, { ...(this.store ? { store: this.store } : {}), log: this.log, timeoutMs: this.config.timeoutMs, deadline, signal: opts.signal });
      failed.push(...result.failed);
      if (!result.ok) continue;
      // the provider made the audio: it is billed, whether or not the store takes it
      if (this.book && opts.owner) void this.book({ owner: opts.owner, purpose: "speech", provider, model: plan.model, usage: emptyUsage(), units: { chars: [...opts.text].length } });
      const name = `voice.${plan.file.ext}`;
      const stored = await store.put(result.bytes, { mime: plan.file.mime, name });
      const tried = failed.map((f) => `${f.label} ${f.error.code}`);
      this.log.info({
        provider, profile: result.profile.id, voice: plan.voice, model: plan.model, format: plan.format, chars: opts.text.length, bytes: result.bytes.byteLength, ms: Date.now() - started,
        ...(tried.length > 0 ? { failed: tried } : {}),
      }, i > 0 ? `speech synthesized by the fallback provider ${provider}` : "speech synthesized");
      return {
        attachment: { kind: "audio", mime: plan.file.mime, name, size: stored.size, ref: stored.ref }, provider, voice: plan.voice, model: plan.model,
        ...(tried.length > 0 ? { failed: tried } : {}),
      };
    }
    throw noAudio(failed);
  }

  /** The provider's voice, model, format and speed for this message. */
  private plan(provider: TtsProvider, channel: string | undefined, choice: Pick<SpeakOptions, "voice" | "model" | "speed">): Plan {
    const voiceNote = channel !== undefined && VOICE_NOTE_CHANNELS.has(channel);
    if (provider === "elevenlabs") {
      const c = this.config.elevenlabs;
      const format = c.format === "auto" ? (voiceNote ? "opus_48000_64" : "mp3_44100_128") : c.format;
      return {
        provider, voice: choice.voice ?? c.voiceId, model: choice.model ?? c.modelId, format, file: format.startsWith("opus") ? MIME_OF.opus! : MIME_OF.mp3!,
        ...(choice.speed !== undefined ? { speed: choice.speed } : {}),
      };
    }
    const c = this.config.openai;
    const format = c.format === "auto" ? (voiceNote ? "opus" : "mp3") : c.format;
    const speed = choice.speed ?? c.speed;
    return { provider, voice: choice.voice ?? c.voice, model: choice.model ?? c.model, format, file: MIME_OF[format]!, ...(speed !== undefined ? { speed } : {}) };
  }
}

/** Every provider failed: the last real failure (a call, else a skip), naming the earlier attempts. */
function noAudio(failed: SpeechAttempt[]): LurkError {
  const last = failed.findLast((f) => !f.skipped) ?? failed.at(-1);
  if (!last) return new LurkError("PROVIDER_ERROR", "no speech provider could be asked");
  if (failed.length === 1) return last.error;
  const others = failed.filter((f) => f !== last).map((f) => `${f.label}: ${f.skipped ? f.error.message : f.error.code}`);
  return new LurkError(last.error.code, `${last.error.message} (before: ${others.join("; ")})`.slice(0, 2000), {
    retryable: last.error.retryable, ...(last.error.details ? { details: last.error.details } : {}),
  });
}
