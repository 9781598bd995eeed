/**
 * Prices of speech (text to audio) and transcription (audio to text) models, which bill by
 * characters or audio minutes rather than tokens: the usage ledger's `speech` and `transcription`
 * bookings (services/sessions/usage-ledger.ts). A built-in table of list prices in USD, by
 * provider then model-name prefix (as models.ts: `tts-1-1106` -> `tts-1`), overridden per unit by
 * config `models.entries["provider/model"].cost.perMChars` / `.perAudioMinute`
 * (shared/runtime/config-models.ts). A model neither knows has no price: its units are booked
 * without cost.
 * Estimates, not list prices: OpenAI bills gpt-4o-mini-tts by tokens and publishes about $0.015 a
 * minute of audio, here per character at ~900 characters a spoken minute; ElevenLabs bills
 * credits by plan, here its API's pay-as-you-go rate per character (Multilingual/v3 $0.10,
 * Flash/Turbo $0.05 per 1,000): set your plan's price in config.
 */
import type { UsageUnits } from "../contract/index.js";
import type { LurkConfig } from "./config.js";
import { prefixRow } from "./models.js";

export interface MediaCost {
  /** USD per million characters synthesized */
  perMChars?: number;
  /** USD per minute of audio transcribed */
  perAudioMinute?: number;
}

/** ~150 words a minute of speech, ~6 characters a word with its space */
const CHARS_PER_SPOKEN_MINUTE = 900;

export const BUILTIN_MEDIA_PRICES: Record<string, Record<string, MediaCost>> = {
  openai: {
    "tts-1": { perMChars: 15 },
    "tts-1-hd": { perMChars: 30 },
    // an estimate: token-priced, ~$0.015 a minute
    "gpt-4o-mini-tts": { perMChars: (0.015 / CHARS_PER_SPOKEN_MINUTE) * 1e6 },
    "whisper-1": { perAudioMinute: 0.006 },
    "gpt-4o-transcribe": { perAudioMinute: 0.006 },
    "gpt-4o-mini-transcribe": { perAudioMinute: 0.003 },
  },
  // estimates: the API's per-character rate; plans' credits cost otherwise
  elevenlabs: {
    eleven_multilingual_v2: { perMChars: 100 },
    eleven_multilingual_v1: { perMChars: 100 },
    eleven_monolingual_v1: { perMChars: 100 },
    eleven_v3: { perMChars: 100 },
    eleven_flash_v2: { perMChars: 50 },
    eleven_flash_v2_5: { perMChars: 50 },
    eleven_turbo_v2: { perMChars: 50 },
    eleven_turbo_v2_5: { perMChars: 50 },
  },
};

/** The unit prices of `provider/model`: config `models.entries` first, unit by unit, then the built-in table. */
export function mediaCost(ref: string, config: Pick<LurkConfig, "models">): MediaCost {
  const slash = ref.indexOf("/");
  const base = slash > 0 ? prefixRow(BUILTIN_MEDIA_PRICES[ref.slice(0, slash)], ref.slice(slash + 1)) : undefined;
  const entry = config.models?.entries[ref]?.cost;
  const perMChars = entry?.perMChars ?? base?.perMChars;
  const perAudioMinute = entry?.perAudioMinute ?? base?.perAudioMinute;
  return { ...(perMChars !== undefined ? { perMChars } : {}), ...(perAudioMinute !== undefined ? { perAudioMinute } : {}) };
}

/**
 * USD of one booking's units at `cost`; undefined when a unit it has has no price. A transcription
 * of unknown duration (no seconds) costs nothing known: undefined.
 */
export function unitsCostUsd(units: UsageUnits, cost: MediaCost): number | undefined {
  let usd = 0;
  if (units.durationUnknown) return undefined;
  if (units.chars !== undefined) {
    if (cost.perMChars === undefined) return undefined;
    usd += (units.chars * cost.perMChars) / 1e6;
  }
  if (units.audioSeconds !== undefined) {
    if (cost.perAudioMinute === undefined) return undefined;
    usd += (units.audioSeconds / 60) * cost.perAudioMinute;
  }
  return usd;
}
