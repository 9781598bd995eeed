/**
 * Small text files -> their content in the model's note (`media.inlineTextKb`, 64 KB by default;
 * 0: off), before a run stores its inputs, so a user's notes, code, CSV or JSON are read at once
 * instead of through media_save and read.
 *
 * Contract of `annotate(inputs)`: each user input's attachment that looks like text (a text/*
 * type, a JSON/XML/YAML/script type, or a generic type with a known text extension), has a media
 * ref, no `text`, no error or textError, and is at most the cap is read from the media store;
 * when its bytes are valid UTF-8 without NUL bytes, they go in the attachment's `text`
 * (transcript.ts puts it under the file's note, and the session keeps it). The texts of one call take at most what
 * is left of the inline budget (inline-budget.ts: the run's first transcript append must stay
 * under the bus payload cap); files past it, and anything else, are left as they were (a note
 * with the ref). It never throws: a store that cannot be read leaves the attachment as it was.
 */
import type { Attachment, RunInput } from "../../shared/contract/index.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { GENERIC_TYPES } from "../../shared/runtime/documents/formats.js";
import type { MediaStore } from "../../shared/runtime/media.js";
import { inlineWithinBudget } from "./inline-budget.js";

const TEXT_TYPES = new Set([
  "application/json", "application/ld+json", "application/x-ndjson", "application/xml", "application/yaml", "application/x-yaml",
  "application/toml", "application/javascript", "application/x-javascript", "application/typescript", "application/x-sh",
  "application/x-shellscript", "application/sql", "application/x-python", "application/csv", "application/x-tex",
]);
const TEXT_EXTENSIONS = new Set([
  "txt", "md", "markdown", "rst", "log", "csv", "tsv", "json", "jsonl", "ndjson", "xml", "yaml", "yml", "toml", "ini", "cfg", "conf", "env",
  "html", "htm", "css", "js", "mjs", "cjs", "ts", "tsx", "jsx", "py", "rb", "go", "rs", "java", "kt", "c", "h", "cc", "cpp", "hpp", "cs",
  "php", "pl", "lua", "swift", "sh", "bash", "zsh", "fish", "ps1", "sql", "r", "tex", "diff", "patch", "srt", "vtt", "ics", "vcf",
]);
/** MIME types that say nothing about the content: the file name's extension decides */

export class TextInliner {
  constructor(
    private readonly maxBytes: number,
    private readonly media: () => Pick<MediaStore, "get">,
    private readonly log: Logger,
    /** bus.maxPayloadBytes: the inline budget's bound (inline-budget.ts) */
    private readonly maxPayloadBytes: number,
  ) {}

  async annotate<T extends RunInput>(inputs: T[], _signal?: AbortSignal): Promise<T[]> {
    if (this.maxBytes === 0 || !inputs.some((i) => i.attachments.some((a) => this.wanted(a)))) return inputs;
    return inlineWithinBudget(inputs, this.maxPayloadBytes, this.maxBytes, { wanted: (a) => this.wanted(a), read: (a, allowance) => this.one(a, allowance) });
  }

  private wanted(a: Attachment): boolean {
    return !!a.ref && a.text === undefined && !a.error && !a.textError && (a.size === undefined || a.size <= this.maxBytes) && looksLikeText(a);
  }

  private async one(a: Attachment, maxBytes: number): Promise<Attachment> {
    try {
      const { bytes } = await this.media().get(a.ref!, maxBytes);
      const text = decodeText(bytes);
      return text === undefined ? a : { ...a, text };
    } catch (err) {
      this.log.debug({ err, ref: a.ref!.slice(0, 12) }, "a text attachment stays a ref (too large, or the store could not be read)");
      return a;
    }
  }
}

function looksLikeText(a: Attachment): boolean {
  const mime = a.mime.split(";")[0]!.trim().toLowerCase();
  if (mime.startsWith("text/") || TEXT_TYPES.has(mime) || mime.endsWith("+json") || mime.endsWith("+xml")) return true;
  const ext = /\.([A-Za-z0-9]+)$/.exec(a.name ?? "")?.[1]?.toLowerCase();
  return GENERIC_TYPES.has(mime) && ext !== undefined && TEXT_EXTENSIONS.has(ext);
}

/** The bytes as text when they are valid UTF-8 without NUL bytes (a BOM is dropped); else undefined. */
export function decodeText(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return undefined;
  }
}
