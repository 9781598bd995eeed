/**
 * Voice notes and other audio -> text, before a run stores its inputs (`media.transcription`,
 * shared/runtime/config-media.ts; off unless its model is set).
 *
 * Contract of `annotate(inputs)`: each user input's audio attachment (kind audio, or a video in
 * a type the API takes: mp4, mpeg, webm) that has a media ref and no transcript, error or
 * textError is read from the media store (at most `maxMb`) and transcribed; its text goes in the
 * attachment's `transcript`, a failure's reason in `textError` ("not transcribed: …";
 * transcript.ts turns both into the note the model reads and the session keeps). Attachments are transcribed in
 * parallel; the inputs are returned as new objects (the same array when nothing applies). It
 * never throws: a run goes on without a transcript. Transcripts are cached by ref (CACHE_SIZE
 * entries), so a redelivered run or the same file sent again is not transcribed twice.
 * Usage: each transcription made is booked with `ctx.book` (the run's, usage-booking.ts) under
 * purpose `transcription` at `provider/model`: the audio's seconds as the answer reports them,
 * else as the file's own headers tell (audio-duration.ts: Ogg, WAV), else `durationUnknown`
 * (booked without seconds or cost). A cached transcript books nothing: nothing was billed.
 */
import { emptyUsage, LurkError, type Attachment, type RunInput } from "../../shared/contract/index.js";
import { MB, type TranscriptionConfig } from "../../shared/runtime/config-media.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { formatBytes, type MediaStore } from "../../shared/runtime/media.js";
import { openaiTranscriber, type Transcribe } from "./providers/openai-transcribe.js";
import type { AuthProfile } from "./providers/registry.js";
import { audioDurationSec } from "./audio-duration.js";
import type { PrepareContext } from "./document-text.js";

const CACHE_SIZE = 256;
const VIDEO_TYPES = new Set(["video/mp4", "video/mpeg", "video/webm"]);

export class AudioTranscriber {
  private readonly cache = new Map<string, string>();
  private readonly transcribe: Transcribe | undefined;
  private readonly missingCredentials: boolean;

  constructor(
    private readonly config: TranscriptionConfig | undefined,
    /** the openai provider's first auth profile (the registry's), used unless the config names its own */
    openai: Pick<AuthProfile, "apiKey" | "baseUrl"> | undefined,
    private readonly media: () => Pick<MediaStore, "get">,
    private readonly log: Logger,
  ) {
    const apiKey = config?.apiKey ?? openai?.apiKey;
    const baseUrl = config?.baseUrl ?? openai?.baseUrl;
    // the official API needs a key; a compatible server named by baseUrl may not
    this.missingCredentials = !apiKey && !baseUrl;
    this.transcribe = config ? openaiTranscriber({ ...(apiKey ? { apiKey } : {}), ...(baseUrl ? { baseUrl } : {}), timeoutMs: config.timeoutMs }) : undefined;
  }

  async annotate<T extends RunInput>(inputs: T[], signal: AbortSignal, ctx: PrepareContext = {}): Promise<T[]> {
    if (!this.config || !inputs.some((i) => i.attachments.some(wanted))) return inputs;
    return Promise.all(inputs.map(async (input) => {
      if (!input.attachments.some(wanted)) return input;
      const attachments = await Promise.all(input.attachments.map((a) => (wanted(a) ? this.one(a, signal, ctx) : a)));
      return { ...input, attachments };
    }));
  }

  private async one(a: Attachment, signal: AbortSignal, ctx: PrepareContext): Promise<Attachment> {
    const config = this.config!;
    const ref = a.ref!;
    const cached = this.cache.get(ref);
    if (cached !== undefined) return { ...a, transcript: cached };
    const max = config.maxMb * MB;
    const tooLarge = (size?: number) => ({ ...a, textError: `not transcribed: ${size !== undefined ? formatBytes(size) : "the file"} is above the ${formatBytes(max)} cap (media.transcription.maxMb)` });
    if (a.size !== undefined && a.size > max) return tooLarge(a.size);
    if (this.missingCredentials) return { ...a, textError: "not transcribed: media.transcription needs OpenAI credentials (set OPENAI_API_KEY, or media.transcription.apiKey / baseUrl)" };
    const started = Date.now();
    try {
      const file = await this.media().get(ref, max);
      const model = config.model.slice("openai/".length);
      const { text, durationSec } = await this.transcribe!({
        model, bytes: file.bytes, fileName: a.name ?? file.name ?? `audio.${a.mime.split("/")[1] ?? "bin"}`, mime: a.mime,
        ...(config.language ? { language: config.language } : {}), signal,
      });
      this.remember(ref, text);
      const seconds = durationSec ?? audioDurationSec(file.bytes);
      ctx.book?.({ purpose: "transcription", provider: "openai", model, usage: emptyUsage(), units: seconds !== undefined ? { audioSeconds: seconds } : { durationUnknown: true } });
      this.log.info({ ref: ref.slice(0, 12), bytes: file.bytes.byteLength, chars: text.length, seconds: seconds ?? "unknown", ms: Date.now() - started }, "audio transcribed");
      return { ...a, transcript: text };
    } catch (err) {
      const e = LurkError.from(err);
      if (e.code === "LIMIT_EXCEEDED") return tooLarge(); // the store's size was above the cap
      this.log.warn({ err: e, ref: ref.slice(0, 12) }, "could not transcribe an audio attachment");
      return { ...a, textError: `not transcribed (${e.code}): ${e.message}`.slice(0, 500) };
    }
  }

  private remember(ref: string, text: string): void {
    this.cache.delete(ref);
    this.cache.set(ref, text);
    if (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
  }
}

/** An attachment to transcribe: audio (or a video the API takes) in the media store, not done yet. */
function wanted(a: Attachment): boolean {
  return (a.kind === "audio" || (a.kind === "video" && VIDEO_TYPES.has(a.mime)))
    && !!a.ref && a.transcript === undefined && !a.error && !a.textError;
}
