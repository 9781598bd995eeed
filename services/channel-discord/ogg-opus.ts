/**
 * Reads an Ogg Opus file (RFC 3533 pages, RFC 7845 encapsulation) without decoding the audio:
 * the first logical stream's OpusHead (pre-skip), its audio packets with their duration from
 * each packet's TOC byte (RFC 6716 §3.1), and the duration of the whole (the last granule
 * position minus the pre-skip, at 48 kHz; the packets' durations when no page carries one).
 * Contract of `readOggOpus(bytes)`: the stream, or undefined for anything else (not Ogg, Ogg
 * Vorbis, a stream without audio, a truncated header). Page CRCs are not checked.
 */

export interface OpusPacketInfo {
  /** bytes of the packet */
  size: number;
  /** its audio at 48 kHz */
  samples: number;
}

export interface OggOpus {
  channels: number;
  preSkip: number;
  packets: OpusPacketInfo[];
  durationSecs: number;
}

const RATE = 48_000;
const MAX_PACKETS = 200_000;

/** Samples at 48 kHz of one Opus packet, from its TOC byte (and frame count byte for code 3); 0 when malformed. */
export function opusPacketSamples(packet: Uint8Array): number {
  if (packet.byteLength === 0) return 0;
  const toc = packet[0]!;
  const config = toc >> 3;
  // frame sizes in units of 2.5 ms: SILK 10/20/40/60, hybrid 10/20, CELT 2.5/5/10/20
  const units = config < 12 ? [4, 8, 16, 24][config & 3]! : config < 16 ? [4, 8][config & 1]! : [1, 2, 4, 8][config & 3]!;
  const code = toc & 3;
  const frames = code === 0 ? 1 : code < 3 ? 2 : packet.byteLength > 1 ? packet[1]! & 0x3f : 0;
  return units * 120 * frames;
}

export function readOggOpus(bytes: Uint8Array): OggOpus | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let serial: number | undefined;
  let head: { channels: number; preSkip: number } | undefined;
  let tagsSeen = false;
  let lastGranule = -1n;
  const packets: OpusPacketInfo[] = [];
  let pending: Uint8Array[] = [];
  let at = 0;
  while (at + 27 <= bytes.byteLength) {
    if (view.getUint32(at) !== 0x4f676753) { // "OggS"
      if (!head) return undefined;
      break; // trailing bytes after the last page
    }
    const segments = bytes[at + 26]!;
    const dataAt = at + 27 + segments;
    if (dataAt > bytes.byteLength) break;
    const granule = view.getBigInt64(at + 6, true);
    const pageSerial = view.getUint32(at + 14, true);
    serial ??= pageSerial;
    let offset = dataAt;
    for (let i = 0; i < segments; i++) {
      const lace = bytes[at + 27 + i]!;
      if (offset + lace > bytes.byteLength) return undefined;
      if (pageSerial === serial) pending.push(bytes.subarray(offset, offset + lace));
      offset += lace;
      if (lace < 255 && pageSerial === serial) {
        if (!head) {
          head = opusHead(join(pending));
          if (!head) return undefined;
        } else if (!tagsSeen) {
          tagsSeen = true;
        } else if (packets.length < MAX_PACKETS) {
          // the first segment holds the TOC (and frame count) byte: no need to join the packet
          packets.push({ size: pending.reduce((n, p) => n + p.byteLength, 0), samples: pending[0] ? opusPacketSamples(pending[0]) : 0 });
        }
        pending = [];
      }
    }
    if (pageSerial === serial && granule >= 0n) lastGranule = granule;
    at = offset;
  }
  if (!head || packets.length === 0) return undefined;
  const counted = packets.reduce((n, p) => n + p.samples, 0);
  const samples = lastGranule > BigInt(head.preSkip) ? Number(lastGranule) - head.preSkip : counted - head.preSkip;
  if (samples <= 0) return undefined;
  return { ...head, packets, durationSecs: samples / RATE };
}

function opusHead(packet: Uint8Array): { channels: number; preSkip: number } | undefined {
  if (packet.byteLength < 19 || String.fromCharCode(...packet.subarray(0, 8)) !== "OpusHead") return undefined;
  return { channels: packet[9]!, preSkip: packet[10]! | (packet[11]! << 8) };
}

function join(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
