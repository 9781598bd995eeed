/**
 * Speech to text through OpenAI's /v1/audio/transcriptions with the official SDK (OpenAI, or a
 * compatible server: a local whisper server, Groq...). The SDK is imported on the first call.
 * Contract: resolves with the transcript's text (trimmed; may be empty for silence) and the audio's
 * duration in seconds when the answer tells it (`duration`, as verbose_json and some compatible
 * servers give; `usage: { type: "duration", seconds }`, as OpenAI's whisper-1 gives); rejects with
 * a classified LurkError (PROVIDER_* codes; ABORTED when `signal` fired).
 */
import { classifyProviderError } from "./errors.js";

export interface TranscribeRequest {
  model: string;
  bytes: Uint8Array;
  fileName: string;
  mime: string;
  language?: string;
  signal: AbortSignal;
}

export interface TranscriptionClientOptions {
  apiKey?: string;
  baseUrl?: string;
  timeoutMs: number;
}

export interface Transcription {
  text: string;
  /** the audio's duration as the provider reported it */
  durationSec?: number;
}

export type Transcribe = (req: TranscribeRequest) => Promise<Transcription>;

/** The duration an answer reports, if any (a finite, non-negative number of seconds). */
export function reportedDuration(answer: unknown): number | undefined {
  const a = answer as { duration?: unknown; usage?: { type?: unknown; seconds?: unknown } } | null;
  const seconds = typeof a?.duration === "number" ? a.duration
    : a?.usage?.type === "duration" && typeof a.usage.seconds === "number" ? a.usage.seconds : undefined;
  return seconds !== undefined && Number.isFinite(seconds) && seconds >= 0 && seconds <= 10_000_000 ? seconds : undefined;
}

export function openaiTranscriber(opts: TranscriptionClientOptions): Transcribe {
  let client: Promise<import("openai").default> | undefined;
  const load = () => (client ??= import("openai").then(({ default: OpenAI }) => new OpenAI({
    // a local server usually needs no key; the SDK insists on one
    apiKey: opts.apiKey ?? "no-key",
    ...(opts.baseUrl ? { baseURL: opts.baseUrl } : {}),
    maxRetries: 1,
    timeout: opts.timeoutMs,
  })));
  return async (req) => {
    try {
      const { toFile } = await import("openai");
      const file = await toFile(req.bytes, req.fileName, { type: req.mime });
      const result = await (await load()).audio.transcriptions.create(
        { model: req.model, file, response_format: "json", ...(req.language ? { language: req.language } : {}) },
        { signal: req.signal },
      );
      const durationSec = reportedDuration(result);
      return { text: result.text.trim(), ...(durationSec !== undefined ? { durationSec } : {}) };
    } catch (err) {
      throw classifyProviderError(err, "openai", req.signal.aborted);
    }
  };
}
