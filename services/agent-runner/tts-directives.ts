/**
 * The model's voice directives in a reply (seed 001 §16.4), removed from the text the user sees:
 *   [[tts]]                                  speak this reply (tts.auto "tagged")
 *   [[tts:provider=openai voice=nova]]       and with this provider / voice (also model=, speed=)
 *   [[tts:text]]…[[/tts:text]]               speak this instead of the written text (hidden)
 * Tags are matched case-insensitively, spaces allowed inside the brackets, at most MAX_TAG
 * characters and on one line; anything else in double brackets stays text.
 *
 * Contract of TtsDirectiveFilter: `push(chunk)` returns the visible part of the text so far and
 * holds back only what may still become a tag (from a "[" on); `end()` returns what was held
 * (a tag that never closed is text). The result does not depend on how the text was cut into
 * chunks, so the streamed deltas (events.ts) add up to exactly the reply's visible text
 * (`parseTtsReply`, the same filter over the whole text). An unclosed [[tts:text]] hides (and
 * speaks) the rest of the reply.
 */
import { ttsProviderSchema, ttsVoiceSchema, type TtsProvider } from "../../shared/contract/index.js";

const MAX_TAG = 200;

export interface TtsOverrides {
  provider?: TtsProvider;
  voice?: string;
  model?: string;
  speed?: number;
}

export interface TtsReply {
  /** the text without directives (what the user reads) */
  visible: string;
  /** the [[tts:text]] parts joined (undefined: none) */
  spoken?: string;
  /** the reply had a tts directive of any kind */
  tagged: boolean;
  overrides: TtsOverrides;
  /** directive attributes that were not understood (logged) */
  ignored: string[];
}

type Match = { kind: "none" } | { kind: "partial" } | { kind: "tag"; end: number; body: string };

export class TtsDirectiveFilter {
  private held = "";
  private inSpoken = false;
  private current = "";
  private readonly parts: string[] = [];
  tagged = false;
  readonly overrides: TtsOverrides = {};
  readonly ignored: string[] = [];

  push(chunk: string, final = false): string {
    const buf = this.held + chunk;
    this.held = "";
    let out = "";
    let i = 0;
    while (i < buf.length) {
      const k = buf.indexOf("[", i);
      const upto = k < 0 ? buf.length : k;
      if (this.inSpoken) this.current += buf.slice(i, upto);
      else out += buf.slice(i, upto);
      if (k < 0) break;
      const m = matchTag(buf, k, final);
      if (m.kind === "partial") {
        this.held = buf.slice(k);
        break;
      }
      if (m.kind === "none") {
        if (this.inSpoken) this.current += "[";
        else out += "[";
        i = k + 1;
        continue;
      }
      this.tag(m.body);
      i = m.end;
    }
    return out;
  }

  end(): string {
    return this.push("", true);
  }

  /** the [[tts:text]] parts so far (an unclosed one included) */
  get spoken(): string | undefined {
    const all = this.inSpoken ? [...this.parts, this.current] : this.parts;
    if (!this.tagged || all.length === 0) return undefined;
    return all.map((p) => p.trim()).filter(Boolean).join(" ");
  }

  private tag(body: string): void {
    this.tagged = true;
    const lower = body.toLowerCase().replace(/\s+/g, "");
    if (lower === "tts:text") {
      if (!this.inSpoken) {
        this.inSpoken = true;
        this.current = "";
      }
      return;
    }
    if (lower === "/tts:text") {
      if (this.inSpoken) {
        this.parts.push(this.current);
        this.inSpoken = false;
        this.current = "";
      }
      return;
    }
    if (lower.startsWith("/")) return;
    const attrs = body.replace(/^\s*tts\s*:?/i, "").trim();
    for (const pair of attrs.split(/\s+/).filter(Boolean)) this.attribute(pair);
  }

  private attribute(pair: string): void {
    const eq = pair.indexOf("=");
    const key = (eq < 0 ? pair : pair.slice(0, eq)).toLowerCase().replace(/[-_]/g, "");
    const value = eq < 0 ? "" : pair.slice(eq + 1).replace(/^["']|["']$/g, "");
    const o = this.overrides;
    if (key === "provider" && ttsProviderSchema.safeParse(value.toLowerCase()).success) o.provider = value.toLowerCase() as TtsProvider;
    else if ((key === "voice" || key === "voiceid") && ttsVoiceSchema.safeParse(value).success) o.voice = value;
    else if ((key === "model" || key === "modelid") && /^[A-Za-z0-9_.:-]{1,100}$/.test(value)) o.model = value;
    else if (key === "speed" && Number.isFinite(Number(value)) && Number(value) >= 0.25 && Number(value) <= 4) o.speed = Number(value);
    else if (this.ignored.length < 10) this.ignored.push(pair.slice(0, 80));
  }
}

/** The directives of a whole reply: the visible text, the spoken text, the overrides. */
export function parseTtsReply(text: string): TtsReply {
  if (!text.includes("[")) return { visible: text, tagged: false, overrides: {}, ignored: [] };
  const f = new TtsDirectiveFilter();
  const visible = f.push(text) + f.end();
  const spoken = f.spoken;
  return { visible, ...(spoken !== undefined ? { spoken } : {}), tagged: f.tagged, overrides: f.overrides, ignored: f.ignored };
}

/**
 * Whether a tts tag starts at `buf[k]` ("["): partial when the buffer ends before that is known
 * (and more may come), none when it cannot be one, else the tag's end and inner text.
 */
function matchTag(buf: string, k: number, final: boolean): Match {
  const partial: Match = final ? { kind: "none" } : { kind: "partial" };
  let p = k + 1;
  if (p >= buf.length) return partial;
  if (buf[p] !== "[") return { kind: "none" };
  p++;
  while (p < buf.length && (buf[p] === " " || buf[p] === "\t")) p++;
  if (p < buf.length && buf[p] === "/") p++;
  for (const c of "tts") {
    if (p >= buf.length) return partial;
    if (buf[p]!.toLowerCase() !== c) return { kind: "none" };
    p++;
  }
  if (p >= buf.length) return partial;
  if (!/[\]: \t]/.test(buf[p]!)) return { kind: "none" };
  for (let q = p; q < buf.length; q++) {
    if (q - k >= MAX_TAG) return { kind: "none" };
    const c = buf[q]!;
    if (c === "\n" || c === "[") return { kind: "none" };
    if (c === "]") {
      if (q + 1 >= buf.length) return partial;
      if (buf[q + 1] === "]") return { kind: "tag", end: q + 2, body: buf.slice(k + 2, q).trim() };
      return { kind: "none" };
    }
  }
  return buf.length - k >= MAX_TAG ? { kind: "none" } : partial;
}
