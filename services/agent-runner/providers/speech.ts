/**
 * What the speech providers share (openai-speech.ts, elevenlabs-speech.ts): one request in, the
 * audio's bytes out. Contract of `Synthesize`: resolves with the bytes (at most `maxBytes`, never
 * empty); rejects with a classified LurkError (PROVIDER_* as for chat calls; ABORTED when
 * `signal` fired; LIMIT_EXCEEDED for audio above `maxBytes`).
 */
import { LurkError } from "../../../shared/contract/index.js";
import { formatBytes } from "../../../shared/runtime/media.js";

export interface SpeechRequest {
  text: string;
  model: string;
  voice: string;
  /** the provider's own format name (OpenAI `opus`, ElevenLabs `opus_48000_64`, ...) */
  format: string;
  speed?: number;
  signal: AbortSignal;
  maxBytes: number;
}

export type Synthesize = (req: SpeechRequest) => Promise<Uint8Array>;

/** Reads a response body up to `maxBytes` (LIMIT_EXCEEDED beyond; PROVIDER_ERROR when empty). */
export async function readAudio(body: ReadableStream<Uint8Array> | null, maxBytes: number, provider: string): Promise<Uint8Array> {
  if (!body) throw new LurkError("PROVIDER_ERROR", `${provider}: the speech response had no body`);
  const parts: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) throw new LurkError("LIMIT_EXCEEDED", `${provider}: the audio is above the ${formatBytes(maxBytes)} cap for a sent file (media.maxFileMb); ask for a shorter text`);
      parts.push(value);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  if (size === 0) throw new LurkError("PROVIDER_ERROR", `${provider}: the speech response was empty`);
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
