/**
 * Files in the terminal channel. Sending: a local file goes into the media store
 * (shared/runtime/media.ts) and the message carries its ref. Receiving: the files of a delivery
 * are fetched from the store into `$LURKBOT_HOME/downloads/` (a name already there gets a
 * numbered copy); the caller prints where each went, or why it could not be fetched.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, extname, join, resolve } from "node:path";
import type { Attachment } from "../../shared/contract/index.js";
import { attachmentKind, fallbackFileName, formatBytes, mimeFromName, type MediaStore } from "../../shared/runtime/media.js";
import { CliError } from "./errors.js";

export async function attachLocalFile(media: MediaStore, path: string): Promise<Attachment> {
  const absolute = resolve(path);
  let size: number;
  try {
    const stat = statSync(absolute);
    if (!stat.isFile()) throw new CliError(`${path} is not a regular file; give the path of a file to send.`);
    size = stat.size;
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); give the path of a file to send.`);
  }
  if (size > media.maxFileBytes) throw new CliError(`${path} is ${formatBytes(size)}, above the ${formatBytes(media.maxFileBytes)} cap (media.maxFileMb); send a smaller file or raise the cap.`);
  const name = basename(absolute);
  const mime = mimeFromName(name);
  try {
    const stored = await media.put(readFileSync(absolute), { mime, name });
    return { kind: attachmentKind(mime), mime, name, size: stored.size, ref: stored.ref };
  } catch (err) {
    throw new CliError(`could not store ${path} in the media store: ${(err as Error).message}`);
  }
}

export interface ReceivedFile {
  name: string;
  mime: string;
  size?: number;
  /** where it was saved */
  path?: string;
  /** why it was not */
  error?: string;
}

export async function saveReceivedFiles(media: MediaStore, attachments: readonly Attachment[], dir: string): Promise<ReceivedFile[]> {
  const out: ReceivedFile[] = [];
  for (const a of attachments) {
    const name = safeName(a.name ?? (a.ref ? fallbackFileName(a.ref, a.mime) : a.kind));
    const base = { name, mime: a.mime, ...(a.size !== undefined ? { size: a.size } : {}) };
    if (!a.ref) {
      out.push({ ...base, error: a.error ?? "the message names the file but does not carry it" });
      continue;
    }
    try {
      const file = await media.get(a.ref);
      mkdirSync(dir, { recursive: true });
      const path = freePath(dir, name);
      writeFileSync(path, file.bytes, { flag: "wx" });
      out.push({ ...base, size: file.size, path });
    } catch (err) {
      out.push({ ...base, error: (err as Error).message });
    }
  }
  return out;
}

export function describeReceived(f: ReceivedFile): string {
  return f.path ? `file ${f.name} (${f.mime}${f.size !== undefined ? `, ${formatBytes(f.size)}` : ""}) saved to ${f.path}` : `file ${f.name} could not be fetched: ${f.error}`;
}

/** The last segment of a path (either slash), without control characters, at most 200 characters; undefined when nothing usable is left. */
export function cleanFileName(name: string): string | undefined {
  const cleaned = basename(name.replace(/\\/g, "/")).replace(/[\u0000-\u001f\u007f]/g, "").trim();
  return cleaned === "" || cleaned === "." || cleaned === ".." ? undefined : cleaned.slice(0, 200);
}

const safeName = (name: string): string => cleanFileName(name) ?? "file";

function freePath(dir: string, name: string): string {
  const ext = extname(name);
  const stem = name.slice(0, name.length - ext.length);
  for (let i = 0; ; i++) {
    const path = join(dir, i === 0 ? name : `${stem} (${i})${ext}`);
    if (!existsSync(path)) return path;
  }
}
