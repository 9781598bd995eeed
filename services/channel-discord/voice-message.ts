/**
 * What a Discord voice message needs besides the file (message flag IS_VOICE_MESSAGE, 1 << 13):
 * the attachment's `duration_secs` and `waveform`, base64 of at most 256 amplitude bytes (0-255),
 * which clients draw as the message's bars (they sample a recording at most every 100 ms).
 *
 * The waveform is derived without decoding the audio (a decoder would be a new native or wasm
 * dependency): the bytes the Opus encoder spent per slice of time, from the packets' sizes and
 * durations (ogg-opus.ts). A variable-bitrate encoder spends far more on speech than on pauses,
 * so the bars follow the speech and drop in its pauses; a constant-bitrate stream gives even
 * bars. Slices: one per 100 ms, at most 256, each scaled against the busiest.
 * Contract of `voiceMessageOf(file)`: the metadata when the file is OGG (audio/ogg or
 * audio/opus) holding an Opus stream with audio, else undefined (it goes as a plain file).
 */
import type { OutboundFile } from "../../shared/runtime/channel/index.js";
import { readOggOpus, type OpusPacketInfo } from "./ogg-opus.js";

export const IS_VOICE_MESSAGE = 1 << 13;
export const MAX_WAVEFORM_POINTS = 256;
const SLICE_SECS = 0.1;
const OGG_MIMES = new Set(["audio/ogg", "audio/opus"]);

export interface VoiceMessageMeta {
  durationSecs: number;
  /** base64 of the amplitude bytes */
  waveform: string;
}

export function voiceMessageOf(file: Pick<OutboundFile, "bytes" | "mime" | "kind">): VoiceMessageMeta | undefined {
  if (file.kind !== "audio" || !OGG_MIMES.has(file.mime.toLowerCase())) return undefined;
  const ogg = readOggOpus(file.bytes);
  if (!ogg) return undefined;
  const points = Math.min(MAX_WAVEFORM_POINTS, Math.max(1, Math.round(ogg.durationSecs / SLICE_SECS)));
  return { durationSecs: Math.round(ogg.durationSecs * 1000) / 1000, waveform: Buffer.from(waveformOf(ogg.packets, points)).toString("base64") };
}

/** `points` amplitudes (0-255): the bytes per sample of the packets in each equal slice of time, scaled to the busiest slice. */
export function waveformOf(packets: OpusPacketInfo[], points: number): Uint8Array {
  const total = packets.reduce((n, p) => n + p.samples, 0);
  const bytes = new Float64Array(points);
  const samples = new Float64Array(points);
  let t = 0;
  for (const p of packets) {
    // a packet without a known duration (malformed) counts where it starts
    const slice = total > 0 ? Math.min(points - 1, Math.floor((t / total) * points)) : 0;
    bytes[slice]! += p.size;
    samples[slice]! += p.samples;
    t += p.samples;
  }
  // a slice no packet starts in (packets longer than a slice) shows the one before it
  const rate: number[] = [];
  for (let i = 0; i < points; i++) rate.push(samples[i]! > 0 ? bytes[i]! / samples[i]! : (rate[i - 1] ?? 0));
  const max = Math.max(...rate);
  return Uint8Array.from(rate, (r) => (max > 0 ? Math.round((r / max) * 255) : 0));
}
