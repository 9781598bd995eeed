/**
 * The files of an ACP prompt, sent with its inbound message as attachments (as `lurkbot chat`'s
 * `/file` sends one): image blocks (their type checked by schema.ts) and embedded binary
 * resources (`resource` with `blob`) of a type LurkBot reads — an image type models take, a
 * document (PDF, office: shared/runtime/documents/formats.ts) or text. `promptFiles` decodes the
 * base64 of each before anything is stored or sent: malformed or empty data, a file above the
 * cap (media.maxFileMb), files that together pass the prompt's budget (media.maxPromptFilesMb,
 * default 3 × maxFileMb) or more files than a message carries is an RpcError -32602 naming the
 * block (`prompt.<index>`). `storePromptFiles` puts the bytes in the media store; the attachment
 * carries the ref. Other binary resources (and audio) stay a note in the text (prompt-text.ts).
 */
import type { Attachment } from "../../../shared/contract/index.js";
import { MB, type MediaConfig } from "../../../shared/runtime/config-media.js";
import { decodeBase64Capped } from "../../../shared/runtime/channel/media.js";
import { bareMime, formatOf, GENERIC_TYPES } from "../../../shared/runtime/documents/formats.js";
import { formatBytes, mimeFromName, type MediaStore } from "../../../shared/runtime/media.js";
import { cleanFileName } from "../files.js";
import { RPC, RpcError } from "./jsonrpc.js";
import { PROMPT_IMAGE_TYPES, type ContentBlock } from "./schema.js";

/** inboundMessageSchema.attachments' limit */
export const MAX_PROMPT_FILES = 32;
/** media.maxPromptFilesMb's default, in files of media.maxFileMb */
export const PROMPT_FILES_DEFAULT_FACTOR = 3;

/** The bytes the images and files of one prompt may have together: media.maxPromptFilesMb, else 3 × media.maxFileMb. */
export function promptFilesMaxBytes(media: Pick<MediaConfig, "maxFileMb" | "maxPromptFilesMb">): number {
  return Math.floor((media.maxPromptFilesMb ?? PROMPT_FILES_DEFAULT_FACTOR * media.maxFileMb) * MB);
}

export interface PromptFile {
  /** the block's index in the prompt */
  block: number;
  kind: "image" | "file";
  mime: string;
  name?: string;
  bytes: Buffer;
}

type BlobResource = { uri: string; blob: string; mimeType?: string | null | undefined };

const IMAGE_TYPES: ReadonlySet<string> = new Set(PROMPT_IMAGE_TYPES);
const TEXT_TYPES: ReadonlySet<string> = new Set(["application/json", "application/xml", "application/x-yaml", "application/yaml", "application/toml", "application/javascript", "application/x-sh", "application/sql"]);

/** The last path segment of a URI (a file:// URI's file name), if it has one. */
export function uriName(uri: string): string | undefined {
  let path = uri;
  try {
    path = decodeURIComponent(new URL(uri).pathname);
  } catch {
    // not a URL: the string as a path
  }
  return cleanFileName(path);
}

/** How an embedded binary resource goes: as an image or a file attachment, or undefined (a note). */
export function passedBlob(r: Pick<BlobResource, "uri" | "mimeType">): { kind: "image" | "file"; mime: string; name?: string } | undefined {
  const name = uriName(r.uri);
  const given = bareMime(r.mimeType ?? "");
  const mime = GENERIC_TYPES.has(given) ? mimeFromName(name ?? "") : given;
  const named = name ? { name } : {};
  if (IMAGE_TYPES.has(mime)) return { kind: "image", mime, ...named };
  if (formatOf(mime, name) || mime.startsWith("text/") || TEXT_TYPES.has(mime) || mime.endsWith("+json") || mime.endsWith("+xml")) return { kind: "file", mime, ...named };
  return undefined;
}

function isBlob(r: unknown): r is BlobResource {
  return typeof (r as { blob?: unknown }).blob === "string";
}

/** The prompt's files, decoded; throws RpcError -32602 naming the first bad block (each at most `maxBytes`, all together `totalMaxBytes`). */
export function promptFiles(blocks: readonly ContentBlock[], maxBytes: number, totalMaxBytes = Number.POSITIVE_INFINITY): PromptFile[] {
  const out: PromptFile[] = [];
  let total = 0;
  blocks.forEach((b, block) => {
    let file: { kind: "image" | "file"; mime: string; name?: string | undefined; data: string; what: string } | undefined;
    if (b.type === "image") {
      file = { kind: "image", mime: b.mimeType, name: b.uri ? uriName(b.uri) : undefined, data: b.data, what: "image" };
    } else if (b.type === "resource" && isBlob(b.resource)) {
      const passed = passedBlob(b.resource);
      if (passed) file = { ...passed, data: b.resource.blob, what: "resource.blob" };
    }
    if (!file) return;
    const bad = (why: string, data: Record<string, unknown> = {}) => {
      const path = `prompt.${block}`;
      return new RpcError(RPC.invalidParams, `invalid params: ${path}: ${why}`, [{ path, message: why, ...data }]);
    };
    if (out.length >= MAX_PROMPT_FILES) throw bad(`more than ${MAX_PROMPT_FILES} images and files in one prompt`);
    const decoded = decodeBase64Capped(file.data, maxBytes);
    if ("bytes" in decoded) {
      total += decoded.bytes.length;
      if (total > totalMaxBytes) {
        throw bad(`the prompt's images and files come to ${formatBytes(total)} with this ${file.what}, above the ${formatBytes(totalMaxBytes)} one prompt may carry (media.maxPromptFilesMb)`, { size: total, maxBytes: totalMaxBytes });
      }
      out.push({ block, kind: file.kind, mime: file.mime, bytes: decoded.bytes, ...(file.name ? { name: file.name } : {}) });
      return;
    }
    if (decoded.problem === "too_large") {
      throw bad(`the ${file.what} is ${formatBytes(decoded.size)}, above the ${formatBytes(maxBytes)} cap (media.maxFileMb)`, { size: decoded.size, maxBytes });
    }
    throw bad(decoded.problem === "empty" ? `the ${file.what} is empty` : `the ${file.what}'s base64 data is malformed`);
  });
  return out;
}

/** Puts the files in the media store; the attachments carry their refs, in prompt order. */
export async function storePromptFiles(media: MediaStore, files: readonly PromptFile[]): Promise<Attachment[]> {
  const out: Attachment[] = [];
  for (const f of files) {
    const stored = await media.put(f.bytes, { mime: f.mime, name: f.name });
    out.push({ kind: f.kind, mime: f.mime, size: stored.size, ref: stored.ref, ...(f.name ? { name: f.name } : {}) });
  }
  return out;
}
