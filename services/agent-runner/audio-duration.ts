/**
 * An audio file's duration read from its own headers, for the usage ledger's transcription
 * seconds when the provider's answer does not tell it (transcribe.ts). Knows Ogg (Opus: the last
 * page's granule position at 48 kHz less the pre-skip; Vorbis: at its sample rate; the voice
 * notes of Telegram and WhatsApp) and WAV (the data chunk's size, as far as the file holds it,
 * over the byte rate). Anything else, or a file it cannot make sense of: undefined (the duration
 * is unknown). Never throws.
 * A header is checked against the file's size: audio is never coded in fewer than
 * MIN_BITS_PER_SEC (Opus goes down to 6 kbit/s; the floor leaves room for silence), so an Ogg
 * whose last granule position claims more seconds than bytes × 8 / MIN_BITS_PER_SEC (a crafted
 * file: one second of audio booked as days) is unknown, as is a WAV whose byte rate is below that
 * floor or, for PCM, does not match its sample rate × block size.
 */

const OGG_CAPTURE = 0x5367674f; // "OggS" read as little-endian uint32
/** an Ogg page header without its segment table */
const OGG_HEADER = 27;

export function audioDurationSec(bytes: Uint8Array): number | undefined {
  try {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (bytes.byteLength >= OGG_HEADER && view.getUint32(0, true) === OGG_CAPTURE) return oggDuration(bytes, view);
    if (bytes.byteLength >= 12 && ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 4) === "WAVE") return wavDuration(bytes, view);
  } catch {
    // a truncated or odd header: unknown
  }
  return undefined;
}

const ascii = (b: Uint8Array, at: number, n: number) => String.fromCharCode(...b.subarray(at, at + n));
/** the lowest bit rate any audio file here is believed to have, container included */
export const MIN_BITS_PER_SEC = 4_000;
/** `s` rounded to ms, when a file of `fileBytes` can hold that much audio; else undefined */
const sane = (s: number, fileBytes: number) => (Number.isFinite(s) && s >= 0 && s <= (fileBytes * 8) / MIN_BITS_PER_SEC ? Math.round(s * 1000) / 1000 : undefined);
/** WAVE_FORMAT_PCM, _IEEE_FLOAT, _EXTENSIBLE: the byte rate follows from the sample rate and block size */
const PCM_FORMATS = new Set([1, 3, 0xfffe]);

function oggDuration(bytes: Uint8Array, view: DataView): number | undefined {
  const serial = view.getUint32(14, true);
  const first = OGG_HEADER + bytes[26]!; // the first packet follows the segment table
  let rate: number;
  let preSkip = 0;
  if (ascii(bytes, first, 8) === "OpusHead") {
    rate = 48_000; // Opus granule positions count 48 kHz samples whatever the input rate
    preSkip = view.getUint16(first + 10, true);
  } else if (ascii(bytes, first, 7) === "\x01vorbis") {
    rate = view.getUint32(first + 12, true);
  } else return undefined;
  if (rate === 0) return undefined;
  // the last page of the stream that has a granule position (-1: no packet ends on it)
  for (let at = bytes.byteLength - OGG_HEADER; at >= 0; at--) {
    if (view.getUint32(at, true) !== OGG_CAPTURE || bytes[at + 4] !== 0 || view.getUint32(at + 14, true) !== serial) continue;
    const granule = view.getBigInt64(at + 6, true);
    if (granule < 0n) continue;
    return sane((Number(granule) - preSkip) / rate, bytes.byteLength);
  }
  return undefined;
}

function wavDuration(bytes: Uint8Array, view: DataView): number | undefined {
  let byteRate: number | undefined;
  for (let at = 12; at + 8 <= bytes.byteLength;) {
    const id = ascii(bytes, at, 4);
    const size = view.getUint32(at + 4, true);
    if (id === "fmt ") {
      const format = view.getUint16(at + 8, true);
      const sampleRate = view.getUint32(at + 12, true);
      byteRate = view.getUint32(at + 16, true);
      const blockAlign = view.getUint16(at + 20, true);
      // a byte rate that does not follow from the format, or too low to be audio: not believed
      if ((PCM_FORMATS.has(format) && byteRate !== sampleRate * blockAlign) || byteRate * 8 < MIN_BITS_PER_SEC) return undefined;
    }
    if (id === "data") {
      if (!byteRate) return undefined;
      // a streamed WAV may leave the size at 0 or 0xFFFFFFFF: what the file holds
      const data = size === 0 || size === 0xffffffff ? bytes.byteLength - at - 8 : Math.min(size, bytes.byteLength - at - 8);
      return sane(data / byteRate, bytes.byteLength);
    }
    at += 8 + size + (size % 2); // chunks are padded to an even size
  }
  return undefined;
}
