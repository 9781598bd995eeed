/**
 * Text to speech through ElevenLabs over HTTPS with fetch: POST
 * `<baseUrl>/v1/text-to-speech/<voiceId>?output_format=<format>` with the `xi-api-key` header and
 * `{ text, model_id, language_code?, voice_settings? }`; the answer is the audio. Redirects are
 * refused (the key is a custom header fetch would carry to another host). The time limit is the
 * caller's `signal` (tts.ts adds tts.timeoutMs). Errors are classified like the chat calls'
 * (errors.ts), with ElevenLabs' `detail.message`; a `quota_exceeded` refusal is billing, not
 * auth. Contract: speech.ts `Synthesize`.
 */
import { LurkError } from "../../../shared/contract/index.js";
import { classifyProviderError } from "./errors.js";
import { readAudio, type Synthesize } from "./speech.js";

export interface ElevenLabsVoiceSettings {
  stability?: number;
  similarityBoost?: number;
  style?: number;
  useSpeakerBoost?: boolean;
  speed?: number;
}

export interface ElevenLabsSpeechOptions {
  apiKey: string;
  baseUrl: string;
  languageCode?: string;
  voiceSettings?: ElevenLabsVoiceSettings;
}

const ERROR_BODY_BYTES = 4096;

export function elevenlabsSpeech(opts: ElevenLabsSpeechOptions): Synthesize {
  const base = opts.baseUrl.replace(/\/+$/, "");
  return async (req) => {
    const url = `${base}/v1/text-to-speech/${encodeURIComponent(req.voice)}?output_format=${encodeURIComponent(req.format)}`;
    const settings = voiceSettings(opts.voiceSettings, req.speed);
    const body = { text: req.text, model_id: req.model, ...(opts.languageCode ? { language_code: opts.languageCode } : {}), ...(settings ? { voice_settings: settings } : {}) };
    try {
      const res = await fetch(url, {
        method: "POST", redirect: "error", signal: req.signal,
        headers: { "xi-api-key": opts.apiKey, "content-type": "application/json", accept: "audio/*" },
        body: JSON.stringify(body),
      });
      if (!res.ok) throw await httpError(res);
      const type = res.headers.get("content-type") ?? "";
      if (/json|text\//i.test(type)) throw new LurkError("PROVIDER_ERROR", `elevenlabs: answered ${type} instead of audio: ${(await res.text()).slice(0, 200)}`);
      return await readAudio(res.body, req.maxBytes, "elevenlabs");
    } catch (err) {
      if (LurkError.is(err)) throw err;
      if (!req.signal.aborted && err instanceof TypeError) {
        throw new LurkError("PROVIDER_ERROR", `elevenlabs: ${err.message}${err.cause instanceof Error ? `: ${err.cause.message}` : ""}`, { retryable: true });
      }
      throw classifyProviderError(err, "elevenlabs", req.signal.aborted);
    }
  };
}

function voiceSettings(s: ElevenLabsVoiceSettings | undefined, speed: number | undefined): Record<string, number | boolean> | undefined {
  const out: Record<string, number | boolean> = {};
  if (s?.stability !== undefined) out.stability = s.stability;
  if (s?.similarityBoost !== undefined) out.similarity_boost = s.similarityBoost;
  if (s?.style !== undefined) out.style = s.style;
  if (s?.useSpeakerBoost !== undefined) out.use_speaker_boost = s.useSpeakerBoost;
  const pace = speed ?? s?.speed;
  // ElevenLabs takes 0.7 to 1.2
  if (pace !== undefined) out.speed = Math.min(1.2, Math.max(0.7, pace));
  return Object.keys(out).length > 0 ? out : undefined;
}

/** A refused request as a classified LurkError, with ElevenLabs' own message. */
async function httpError(res: Response): Promise<LurkError> {
  const text = (await res.text().catch(() => "")).slice(0, ERROR_BODY_BYTES);
  let message = text || res.statusText;
  let code: string | undefined;
  try {
    const detail = (JSON.parse(text) as { detail?: unknown }).detail;
    if (typeof detail === "string") message = detail;
    else if (detail && typeof detail === "object") {
      const d = detail as { status?: unknown; message?: unknown };
      if (typeof d.message === "string") message = d.message;
      if (typeof d.status === "string") code = d.status;
    }
  } catch {
    // not JSON: the text itself
  }
  const status = code && /quota|credit|payment/i.test(code) ? 402 : res.status;
  return classifyProviderError({ status, message: `HTTP ${res.status}${code ? ` ${code}` : ""}: ${message}`, code: code ?? null, headers: res.headers }, "elevenlabs");
}
