/**
 * `edit`: exact-match replacement in a text file of the workspace. `oldText` must occur exactly
 * once unless `replaceAll` is set; a missing or ambiguous match is an error the model can act
 * on (nothing is written). If the file uses CRLF line endings and `oldText` uses LF, the match
 * is retried with CRLF. The file is written atomically, and only if it did not change since it
 * was read. The result is a short diff-like summary.
 */
import { z } from "zod";
import { LurkError } from "../../../shared/contract/index.js";
import { looksBinary } from "../content.js";
import { defineTool } from "../tool.js";
import { maxWriteBytes } from "./write.js";

const SUMMARY_LINES = 12;

const parameters = z.object({
  path: z.string().min(1).max(4096).describe("The file to edit, relative to the workspace root"),
  oldText: z.string().min(1).describe("The exact text to replace (including whitespace and indentation); it must occur exactly once unless replaceAll is true"),
  newText: z.string().describe("The text to put in its place"),
  replaceAll: z.boolean().optional().describe("Replace every occurrence of oldText (default false)"),
});

export const editTool = defineTool({
  name: "edit",
  description: "Edit a text file in the workspace by exact string replacement: oldText (which must match exactly, "
    + "and occur once unless replaceAll is true) is replaced by newText. Read the file first; include enough surrounding context to make oldText unique.",
  parameters,
  sideEffects: true,
  parallelSafe: false,
  groups: ["group:fs"],
  async execute(args, ctx) {
    if (ctx.signal.aborted) throw new LurkError("ABORTED", "the edit was stopped");
    if (args.oldText === args.newText) throw new LurkError("TOOL_INVALID_ARGS", "oldText and newText are the same; nothing to change");
    const cap = maxWriteBytes(ctx);
    const file = await ctx.fs.readForEdit(args.path, { maxBytes: cap });
    if (looksBinary(file.data.subarray(0, 8192))) throw new LurkError("TOOL_FAILED", `"${file.path}" is a binary file; edit changes text files only`);
    const text = file.data.toString("utf8");

    let oldText = args.oldText;
    let newText = args.newText;
    let positions = occurrences(text, oldText);
    if (positions.length === 0 && text.includes("\r\n") && oldText.includes("\n") && !oldText.includes("\r\n")) {
      const crlf = (s: string) => s.replace(/\r?\n/g, "\r\n");
      positions = occurrences(text, crlf(oldText));
      if (positions.length > 0) {
        oldText = crlf(oldText);
        newText = crlf(newText);
      }
    }
    if (positions.length === 0) {
      throw new LurkError("TOOL_FAILED", `oldText was not found in "${file.path}"; nothing was changed. It must match exactly (whitespace and indentation included): read the file again and copy the text`);
    }
    if (positions.length > 1 && !args.replaceAll) {
      const lines = positions.slice(0, 10).map((p) => lineAt(text, p)).join(", ");
      throw new LurkError("TOOL_FAILED", `oldText occurs ${positions.length} times in "${file.path}" (at lines ${lines}${positions.length > 10 ? ", ..." : ""}); nothing was changed. Include more surrounding context to make it unique, or set replaceAll to true`);
    }

    const updated = args.replaceAll ? text.split(oldText).join(newText) : text.slice(0, positions[0]) + newText + text.slice(positions[0]! + oldText.length);
    const size = Buffer.byteLength(updated, "utf8");
    if (size > cap) throw new LurkError("LIMIT_EXCEEDED", `the edited file would be ${size} bytes, over the ${cap}-byte cap; nothing was changed`);
    const written = await ctx.fs.writeFileAtomic(file.path, updated, { maxBytes: cap, ifUnchanged: file.stat, createParents: false });

    const first = lineAt(text, positions[0]!);
    const count = args.replaceAll ? positions.length : 1;
    const header = `Edited ${written.path}: replaced ${count} occurrence${count === 1 ? "" : "s"} (first at line ${first}); ${written.bytes} bytes now`;
    return { content: [{ type: "text", text: `${header}\n${diffSummary(oldText, newText, first)}` }] };
  },
});

/** Start offsets of the non-overlapping occurrences of `needle`. */
function occurrences(text: string, needle: string): number[] {
  const out: number[] = [];
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) out.push(i);
  return out;
}

/** The 1-based line number of offset `pos`. */
function lineAt(text: string, pos: number): number {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < pos; i = text.indexOf("\n", i + 1)) line++;
  return line;
}

/** `-`/`+` lines of the first replacement, a few of each. */
function diffSummary(oldText: string, newText: string, line: number): string {
  const show = (s: string, sign: string) => {
    const lines = s.replace(/\r\n/g, "\n").split("\n");
    const shown = lines.slice(0, SUMMARY_LINES).map((l) => `${sign} ${l.length > 200 ? `${l.slice(0, 200)}...` : l}`);
    if (lines.length > SUMMARY_LINES) shown.push(`${sign} ... (${lines.length - SUMMARY_LINES} more lines)`);
    return shown;
  };
  return [`@@ line ${line}`, ...show(oldText, "-"), ...(newText === "" ? ["+ (nothing)"] : show(newText, "+"))].join("\n");
}
