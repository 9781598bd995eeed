/**
 * The room for text the input preparers put inline in one call's inputs, all together: file
 * contents (inline-text.ts), documents' text (document-text.ts), and what is already there
 * (transcripts, the messages themselves). The run's first transcript append (sessions.begin)
 * carries all of it and must stay under the bus payload cap (bus.maxPayloadBytes), so the budget
 * is that cap, less RESERVE_BYTES for what the records add around the inputs, less the inputs'
 * JSON size. Sizes are counted as JSON-encoded UTF-8 (a newline or a quote takes two bytes).
 */
import { jsonBytes, type Attachment, type RunInput } from "../../shared/contract/index.js";

/** room for the records' ids, the notes' headers and the request's other fields */
const RESERVE_BYTES = 32 * 1024;

export class InlineBudget {
  private left: number;

  constructor(inputs: readonly RunInput[], maxPayloadBytes: number) {
    this.left = Math.max(0, maxPayloadBytes - RESERVE_BYTES - jsonBytes(inputs));
  }

  /** what is left, JSON-encoded bytes */
  get bytes(): number {
    return this.left;
  }

  /** Counts `text` against the budget; false (and nothing counted) when it does not fit. */
  take(text: string): boolean {
    const size = jsonBytes(text);
    if (size > this.left) return false;
    this.left -= size;
    return true;
  }
}

/** The length of the longest start of `text` whose JSON-encoded UTF-8 (without the quotes) fits in `maxBytes`. */
export function jsonFit(text: string, maxBytes: number): number {
  let size = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    let step: number;
    let width = 1;
    if (c === 0x22 || c === 0x5c || c === 0x0a || c === 0x0d || c === 0x09 || c === 0x08 || c === 0x0c) step = 2;
    else if (c < 0x20) step = 6;
    else if (c < 0x80) step = 1;
    else if (c < 0x800) step = 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && text.charCodeAt(i + 1) >= 0xdc00 && text.charCodeAt(i + 1) <= 0xdfff) [step, width] = [4, 2];
    else if (c >= 0xd800 && c <= 0xdfff) step = 6; // a lone surrogate is escaped
    else step = 3;
    if (size + step > maxBytes) return i;
    size += step;
    i += width - 1;
  }
  return text.length;
}

export interface InlineReader {
  /** whether this reader puts the attachment's text inline */
  wanted(a: Attachment): boolean;
  /** the attachment with its `text` (or `textError`), read with at most `allowance` JSON bytes of room; never throws */
  read(a: Attachment, allowance: number): Promise<Attachment>;
}

/**
 * Each wanted attachment of `inputs`, in order, read while at least `minAllowance` bytes of the
 * budget are left (each gets at most `cap`); one whose text turns out not to fit stays as it was.
 * Inputs with nothing wanted come back as they are.
 */
export async function inlineWithinBudget<T extends RunInput>(inputs: T[], maxPayloadBytes: number, cap: number, reader: InlineReader, minAllowance = 1): Promise<T[]> {
  const budget = new InlineBudget(inputs, maxPayloadBytes);
  const out: T[] = [];
  for (const input of inputs) {
    if (!input.attachments.some((a) => reader.wanted(a))) {
      out.push(input);
      continue;
    }
    const attachments: Attachment[] = [];
    for (const a of input.attachments) {
      const allowance = Math.min(cap, budget.bytes);
      const done = reader.wanted(a) && allowance >= minAllowance ? await reader.read(a, allowance) : a;
      // escaped for JSON, a text can outgrow the bytes it was read with (a scan's OCR text counts like a text)
      const added = (done.text ?? "") + (done.ocrText ?? "");
      attachments.push((done.text === undefined && done.ocrText === undefined) || budget.take(added) ? done : a);
    }
    out.push({ ...input, attachments });
  }
  return out;
}
