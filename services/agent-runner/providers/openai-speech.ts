/**
 * Text to speech through OpenAI's /v1/audio/speech with the official SDK (`audio.speech.create`:
 * model, voice, input, response_format, speed, instructions), for OpenAI and compatible servers.
 * The SDK is imported on the first call. The secret comes from a CredentialSource (an API key, a
 * bearer token, an OAuth access token; none for a local server): a refused renewable one (401/403)
 * is renewed and the call made once more. No SDK retries: a failure goes back to the caller, which
 * cools the profile down and tries the next one (speech-rotation.ts). Contract: speech.ts `Synthesize`.
 */
import type OpenAI from "openai";
import type { CredentialSource } from "../credentials.js";
import { classifyProviderError } from "./errors.js";
import { readAudio, type Synthesize } from "./speech.js";

export interface OpenAISpeechOptions {
  /** absent: no key (a local server) */
  source?: CredentialSource;
  baseUrl?: string;
  timeoutMs: number;
  /** gpt-4o-mini-tts: how to speak */
  instructions?: string;
}

type Format = "mp3" | "opus" | "aac" | "flac" | "wav" | "pcm";

export function openaiSpeech(opts: OpenAISpeechOptions): Synthesize {
  let current: { secret: string | undefined; client: OpenAI } | undefined;
  const clientFor = async (secret: string | undefined): Promise<OpenAI> => {
    if (current && current.secret === secret) return current.client;
    const { default: OpenAISdk } = await import("openai");
    // a local server usually needs no key; the SDK insists on one
    const client = new OpenAISdk({ apiKey: secret ?? "no-key", ...(opts.baseUrl ? { baseURL: opts.baseUrl } : {}), maxRetries: 0, timeout: opts.timeoutMs });
    current = { secret, client };
    return client;
  };
  return async (req) => {
    let refused: string | undefined;
    for (let attempt = 0; ; attempt++) {
      const secret = opts.source ? await opts.source.secret(req.signal, refused) : undefined;
      try {
        const client = await clientFor(secret);
        const response = await client.audio.speech.create({
          model: req.model, voice: req.voice, input: req.text, response_format: req.format as Format,
          ...(req.speed !== undefined ? { speed: req.speed } : {}),
          ...(opts.instructions ? { instructions: opts.instructions } : {}),
        }, { signal: req.signal });
        return await readAudio(response.body, req.maxBytes, "openai");
      } catch (err) {
        const e = classifyProviderError(err, "openai", req.signal.aborted);
        if (e.code === "PROVIDER_AUTH" && attempt === 0 && secret && opts.source?.renewable) {
          refused = secret;
          continue;
        }
        throw e;
      }
    }
  };
}
