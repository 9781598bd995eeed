/**
 * `write`: a whole file in the workspace, created or replaced. Missing parent directories are
 * made. The write is atomic (a temp file in the same directory, then a rename), so a reader
 * never sees half of it. Confined like every file tool (fs-confined.ts): no path, symlink or
 * hard link leads outside the workspace. The content is capped at config.tools.maxWriteBytes.
 */
import { z } from "zod";
import { LurkError } from "../../../shared/contract/index.js";
import { defineTool, type ToolContext } from "../tool.js";

export const DEFAULT_MAX_WRITE_BYTES = 5 * 1024 * 1024;

export function maxWriteBytes(ctx: ToolContext): number {
  return ctx.limits.maxWriteBytes ?? DEFAULT_MAX_WRITE_BYTES;
}

const parameters = z.object({
  path: z.string().min(1).max(4096).describe("The file to write, relative to the workspace root; missing parent directories are created"),
  content: z.string().describe("The complete new content of the file (UTF-8)"),
});

export const writeTool = defineTool({
  name: "write",
  description: "Write a file in the workspace: creates it (and missing parent directories) or replaces its whole content. "
    + "To change part of an existing file, prefer edit or apply_patch. The write is atomic.",
  parameters,
  sideEffects: true,
  parallelSafe: false,
  groups: ["group:fs"],
  async execute(args, ctx) {
    if (ctx.signal.aborted) throw new LurkError("ABORTED", "the write was stopped");
    const cap = maxWriteBytes(ctx);
    const size = Buffer.byteLength(args.content, "utf8");
    if (size > cap) throw new LurkError("LIMIT_EXCEEDED", `the content is ${size} bytes, over the ${cap}-byte cap for a written file; nothing was written`);
    const result = await ctx.fs.writeFileAtomic(args.path, args.content, { maxBytes: cap });
    return { content: [{ type: "text", text: `${result.created ? "Created" : "Wrote"} ${result.path} (${result.bytes} bytes)` }] };
  },
});
