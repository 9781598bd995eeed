/**
 * Files between the media store (shared/runtime/media.ts) and the workspace.
 *  - `media_save`: a file a user sent (its media ref is in the conversation) into the workspace,
 *    where read, exec and the other tools reach it. Default path: `media/<its name>`.
 *  - `workspaceFilesToAttachments`: the `message` tool's `files`, read from the workspace
 *    (confined like every file tool) and put in the store; the message carries their refs.
 */
import { basename } from "node:path";
import { z } from "zod";
import { LurkError, mediaRefSchema, type Attachment } from "../../../shared/contract/index.js";
import type { ActorRuntime } from "../../../shared/runtime/actor.js";
import { attachmentKind, fallbackFileName, formatBytes, mimeFromName } from "../../../shared/runtime/media.js";
import { defineTool, type ToolContext } from "../tool.js";
import { busOf } from "./bus.js";

const parameters = z.object({
  ref: mediaRefSchema.describe("The media ref of the file (64 hex characters), as the conversation shows it"),
  path: z.string().min(1).max(4096).optional().describe("Where to save it, relative to the workspace root (default: media/<file name>)"),
  name: z.string().min(1).max(255).optional().describe("The file's name, for the default path (default: the name it was sent with)"),
});

export const mediaSaveTool = defineTool({
  name: "media_save",
  description: "Save a file the user sent (an attachment with a media ref) into the workspace, so you can read or process it. "
    + "Returns the workspace path. Images you can already see need no saving unless you want to process them.",
  parameters,
  sideEffects: true,
  parallelSafe: false,
  groups: ["group:fs"],
  runsIn: "process",
  async execute(args, ctx) {
    const { rt } = busOf(ctx);
    const file = await rt.media.get(args.ref);
    const name = safeFileName(args.name ?? file.name ?? fallbackFileName(args.ref, file.mime));
    const result = await ctx.fs.writeFileAtomic(args.path ?? `media/${name}`, Buffer.from(file.bytes), { maxBytes: rt.media.maxFileBytes });
    return { content: [{ type: "text", text: `${result.created ? "Saved" : "Replaced"} ${result.path} (${file.mime}, ${formatBytes(result.bytes)})` }] };
  },
});

/** A name without directories or control characters (the user chose it, not the agent). */
function safeFileName(name: string): string {
  const cleaned = basename(name.replace(/\\/g, "/")).replace(/[\u0000-\u001f\u007f]/g, "").trim();
  return cleaned === "" || cleaned === "." || cleaned === ".." ? "file" : cleaned.slice(0, 200);
}

export const MAX_FILES_PER_MESSAGE = 10;

/** Workspace files -> stored attachments (each at most media.maxFileMb). */
export async function workspaceFilesToAttachments(rt: ActorRuntime, ctx: ToolContext, paths: readonly string[]): Promise<Attachment[]> {
  const out: Attachment[] = [];
  for (const path of paths) {
    if (ctx.signal.aborted) throw new LurkError("ABORTED", "the message was stopped");
    const file = await ctx.fs.readFile(path, { maxBytes: rt.media.maxFileBytes });
    if (file.truncated) throw new LurkError("LIMIT_EXCEEDED", `${file.path} is ${formatBytes(file.size)}, above the ${formatBytes(rt.media.maxFileBytes)} cap for a sent file (media.maxFileMb); nothing was sent`);
    const name = basename(file.path);
    const mime = mimeFromName(name);
    const stored = await rt.media.put(file.data, { mime, name });
    out.push({ kind: attachmentKind(mime), mime, name, size: stored.size, ref: stored.ref });
  }
  return out;
}
