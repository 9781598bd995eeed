/**
 * `apply_patch`: the patch format coding agents use:
 *
 *   *** Begin Patch
 *   *** Add File: path          then the content, every line prefixed with "+"
 *   *** Delete File: path
 *   *** Update File: path       optionally "*** Move to: new/path", then hunks:
 *   @@ optional context line    (the hunk applies after the first line matching it)
 *    context line              (" " prefix)
 *   -removed line
 *   +added line
 *   *** End of File             (optional: the hunk is anchored at the end of the file)
 *   *** End Patch
 *
 * All or nothing: the patch is parsed, every path checked (confined like every file tool), and
 * every hunk applied in memory before anything is written; then each file is written atomically.
 * Should a write still fail (the disk changed under us), the files already written are put
 * back as they were. Context lines match exactly first, then ignoring trailing whitespace, then
 * ignoring surrounding whitespace.
 */
import { z } from "zod";
import { LurkError } from "../../../shared/contract/index.js";
import { looksBinary } from "../content.js";
import { defineTool, type ToolContext } from "../tool.js";
import { maxWriteBytes } from "./write.js";

const parameters = z.object({
  patch: z.string().min(1).describe("The whole patch, from \"*** Begin Patch\" to \"*** End Patch\""),
});

export const applyPatchTool = defineTool({
  name: "apply_patch",
  description: "Apply a patch to files in the workspace. Format: \"*** Begin Patch\", then any number of "
    + "\"*** Add File: <path>\" (content lines prefixed with +), \"*** Delete File: <path>\", or \"*** Update File: <path>\" "
    + "(optionally \"*** Move to: <path>\") followed by hunks: \"@@\" (optionally followed by a line to find first), then lines "
    + "prefixed with a space (context, about 3 lines around each change), - (removed) or + (added); then \"*** End Patch\". "
    + "Paths are relative to the workspace. Either every change applies or none does.",
  parameters,
  sideEffects: true,
  parallelSafe: false,
  groups: ["group:fs"],
  async execute(args, ctx) {
    const ops = parsePatch(args.patch);
    const plans = await planAll(ops, ctx);
    const summary = await commit(plans, ctx);
    return { content: [{ type: "text", text: `Applied the patch:\n${summary.join("\n")}` }] };
  },
});

interface Chunk {
  /** the text after "@@ ", a line to find before the hunk */
  anchor?: string;
  oldLines: string[];
  newLines: string[];
  endOfFile: boolean;
  /** "+" and "-" lines, for the summary */
  plus: number;
  minus: number;
  /** 1-based line of the patch where the hunk starts, for messages */
  at: number;
}

export type PatchOp =
  | { kind: "add"; path: string; content: string }
  | { kind: "delete"; path: string }
  | { kind: "update"; path: string; moveTo?: string; chunks: Chunk[] };

const BEGIN = "*** Begin Patch";
const END = "*** End Patch";
const ADD = "*** Add File: ";
const DELETE = "*** Delete File: ";
const UPDATE = "*** Update File: ";
const MOVE = "*** Move to: ";
const EOF_MARK = "*** End of File";

const bad = (line: number, message: string) => new LurkError("TOOL_INVALID_ARGS", `invalid patch at line ${line}: ${message}`);

/** Parses the patch text; throws TOOL_INVALID_ARGS naming the line. */
export function parsePatch(patch: string): PatchOp[] {
  const lines = patch.replace(/\r\n/g, "\n").split("\n");
  let start = 0;
  while (start < lines.length && lines[start]!.trim() === "") start++;
  let end = lines.length - 1;
  while (end >= 0 && lines[end]!.trim() === "") end--;
  if (lines[start]?.trim() !== BEGIN) throw bad(start + 1, `the first line must be "${BEGIN}"`);
  if (end <= start || lines[end]?.trim() !== END) throw bad(end + 1, `the last line must be "${END}"`);

  const ops: PatchOp[] = [];
  let i = start + 1;
  const isHeader = (l: string) => l.startsWith(ADD) || l.startsWith(DELETE) || l.startsWith(UPDATE) || l.trim() === END;
  const pathOf = (l: string, prefix: string) => {
    const p = l.slice(prefix.length).trim();
    if (p === "") throw bad(i + 1, "the path is empty");
    return p;
  };
  while (i < end) {
    const line = lines[i]!;
    if (line.startsWith(ADD)) {
      const path = pathOf(line, ADD);
      i++;
      const content: string[] = [];
      while (i < end && !isHeader(lines[i]!)) {
        const l = lines[i]!;
        if (!l.startsWith("+")) throw bad(i + 1, `every line of an added file starts with "+" (in ${path})`);
        content.push(l.slice(1));
        i++;
      }
      ops.push({ kind: "add", path, content: content.length > 0 ? `${content.join("\n")}\n` : "" });
    } else if (line.startsWith(DELETE)) {
      ops.push({ kind: "delete", path: pathOf(line, DELETE) });
      i++;
    } else if (line.startsWith(UPDATE)) {
      const path = pathOf(line, UPDATE);
      i++;
      let moveTo: string | undefined;
      if (i < end && lines[i]!.startsWith(MOVE)) {
        moveTo = pathOf(lines[i]!, MOVE);
        i++;
      }
      const chunks: Chunk[] = [];
      let chunk: Chunk | undefined;
      while (i < end && !isHeader(lines[i]!)) {
        const l = lines[i]!;
        if (l.startsWith("@@")) {
          const anchor = l.slice(2).trim();
          chunk = { anchor: anchor === "" ? undefined : anchor, oldLines: [], newLines: [], endOfFile: false, plus: 0, minus: 0, at: i + 1 };
          chunks.push(chunk);
        } else if (l.trim() === EOF_MARK) {
          if (!chunk) throw bad(i + 1, `"${EOF_MARK}" outside a hunk`);
          chunk.endOfFile = true;
        } else {
          if (!chunk) {
            if (chunks.length > 0) throw bad(i + 1, "a hunk line after the end of file marker");
            chunk = { oldLines: [], newLines: [], endOfFile: false, plus: 0, minus: 0, at: i + 1 };
            chunks.push(chunk);
          }
          if (chunk.endOfFile) throw bad(i + 1, `lines after "${EOF_MARK}"; start a new hunk with "@@"`);
          const sign = l[0];
          const body = l.slice(1);
          if (l === "") {
            chunk.oldLines.push("");
            chunk.newLines.push("");
          } else if (sign === " ") {
            chunk.oldLines.push(body);
            chunk.newLines.push(body);
          } else if (sign === "-") {
            chunk.oldLines.push(body);
            chunk.minus++;
          } else if (sign === "+") {
            chunk.newLines.push(body);
            chunk.plus++;
          } else {
            throw bad(i + 1, `a hunk line must start with " ", "-" or "+" (in ${path}): ${JSON.stringify(l.slice(0, 80))}`);
          }
        }
        i++;
      }
      const real = chunks.filter((c) => c.oldLines.length > 0 || c.newLines.length > 0);
      if (real.length === 0 && moveTo === undefined) throw bad(i, `"${UPDATE}${path}" has no hunks`);
      ops.push({ kind: "update", path, moveTo, chunks: real });
    } else {
      throw bad(i + 1, `expected "${ADD}", "${DELETE}" or "${UPDATE}", got ${JSON.stringify(line.slice(0, 80))}`);
    }
  }
  if (ops.length === 0) throw bad(start + 1, "the patch changes nothing");
  return ops;
}

interface Plan {
  op: PatchOp;
  /** workspace-relative paths */
  path: string;
  target: string;
  /** what the target gets; undefined for a delete */
  content?: string;
  /** the file before (for the rollback); undefined if it did not exist */
  before?: Buffer;
  /** the source of a move, written/removed after the target */
  removeSource: boolean;
  summary: string;
}

/** Checks every path and applies every hunk in memory; nothing is written. */
async function planAll(ops: PatchOp[], ctx: ToolContext): Promise<Plan[]> {
  const cap = maxWriteBytes(ctx);
  const seen = new Set<string>();
  const claim = (userPath: string) => {
    const shown = ctx.fs.display(ctx.fs.resolve(userPath));
    if (seen.has(shown)) throw new LurkError("TOOL_INVALID_ARGS", `the patch changes "${shown}" more than once; combine those changes into one section`);
    seen.add(shown);
    return shown;
  };
  const capped = (path: string, content: string) => {
    const size = Buffer.byteLength(content, "utf8");
    if (size > cap) throw new LurkError("LIMIT_EXCEEDED", `"${path}" would be ${size} bytes, over the ${cap}-byte cap; nothing was changed`);
  };
  const plans: Plan[] = [];
  for (const op of ops) {
    if (ctx.signal.aborted) throw new LurkError("ABORTED", "the patch was stopped; nothing was changed");
    const path = claim(op.path);
    if (op.kind === "add") {
      capped(path, op.content);
      await ctx.fs.checkWritable(path, { mustNotExist: true }).catch((err: unknown) => {
        if (LurkError.is(err) && err.code === "CONFLICT") throw new LurkError("CONFLICT", `"${path}" already exists; use "${UPDATE}${path}" to change it (nothing was changed)`);
        throw err;
      });
      plans.push({ op, path, target: path, content: op.content, removeSource: false, summary: `A ${path} (${op.content === "" ? 0 : op.content.split("\n").length - 1} lines)` });
    } else if (op.kind === "delete") {
      const file = await ctx.fs.readForEdit(path, { maxBytes: cap });
      plans.push({ op, path, target: path, before: file.data, removeSource: false, summary: `D ${path}` });
    } else {
      const file = await ctx.fs.readForEdit(path, { maxBytes: cap });
      if (looksBinary(file.data.subarray(0, 8192))) throw new LurkError("TOOL_FAILED", `"${path}" is a binary file; apply_patch changes text files only (nothing was changed)`);
      const { text, added, removed } = applyChunks(file.data.toString("utf8"), op.chunks, path);
      capped(path, text);
      let target = path;
      if (op.moveTo !== undefined) {
        target = claim(op.moveTo);
        await ctx.fs.checkWritable(target, { mustNotExist: true }).catch((err: unknown) => {
          if (LurkError.is(err) && err.code === "CONFLICT") throw new LurkError("CONFLICT", `cannot move "${path}" to "${target}": it already exists (nothing was changed)`);
          throw err;
        });
      } else {
        await ctx.fs.checkWritable(path);
      }
      const moved = target !== path ? ` -> ${target}` : "";
      plans.push({ op, path, target, content: text, before: file.data, removeSource: target !== path, summary: `M ${path}${moved} (+${added} -${removed})` });
    }
  }
  return plans;
}

/** Writes the plans in order; on a failure, restores what was already done (best effort). */
async function commit(plans: Plan[], ctx: ToolContext): Promise<string[]> {
  const undo: Array<() => Promise<unknown>> = [];
  const cap = maxWriteBytes(ctx);
  try {
    for (const plan of plans) {
      if (plan.content === undefined) {
        await ctx.fs.unlink(plan.path);
        undo.push(() => ctx.fs.writeFileAtomic(plan.path, plan.before!, { mustNotExist: true }));
        continue;
      }
      await ctx.fs.writeFileAtomic(plan.target, plan.content, { maxBytes: cap, mustNotExist: plan.op.kind === "add" || plan.removeSource });
      undo.push(plan.before === undefined || plan.removeSource
        ? () => ctx.fs.unlink(plan.target)
        : () => ctx.fs.writeFileAtomic(plan.target, plan.before!));
      if (plan.removeSource) {
        await ctx.fs.unlink(plan.path);
        undo.push(() => ctx.fs.writeFileAtomic(plan.path, plan.before!, { mustNotExist: true }));
      }
    }
  } catch (err) {
    let restored = true;
    for (const step of undo.reverse()) {
      await step().catch(() => {
        restored = false;
      });
    }
    const e = LurkError.from(err, "TOOL_FAILED");
    throw new LurkError(e.code, `${e.message} (while applying the patch; ${restored ? "the files already changed were restored" : "some files could not be restored"})`);
  }
  return plans.map((p) => p.summary);
}

/** Applies the hunks of an update to `text`; throws TOOL_FAILED naming the hunk that does not fit. */
export function applyChunks(text: string, chunks: Chunk[], path: string): { text: string; added: number; removed: number } {
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  const lines = text.split(/\r?\n/);
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  const edits: Array<{ at: number; remove: number; insert: string[] }> = [];
  let cursor = 0;
  let added = 0;
  let removed = 0;
  chunks.forEach((chunk, n) => {
    const where = `hunk ${n + 1} (patch line ${chunk.at}) of "${path}"`;
    if (chunk.anchor !== undefined) {
      const found = seek(lines, [chunk.anchor], cursor, false);
      if (found === -1) throw new LurkError("TOOL_FAILED", `${where}: the line after "@@" was not found: ${JSON.stringify(chunk.anchor.slice(0, 120))}; nothing was changed`);
      cursor = found + 1;
    }
    added += chunk.plus;
    removed += chunk.minus;
    if (chunk.oldLines.length === 0) {
      edits.push({ at: lines.length, remove: 0, insert: chunk.newLines });
      return;
    }
    let oldLines = chunk.oldLines;
    let newLines = chunk.newLines;
    let found = seek(lines, oldLines, cursor, chunk.endOfFile);
    if (found === -1 && oldLines[oldLines.length - 1] === "") {
      // a trailing blank context line that the file does not have at that place
      oldLines = oldLines.slice(0, -1);
      if (newLines[newLines.length - 1] === "") newLines = newLines.slice(0, -1);
      found = oldLines.length > 0 ? seek(lines, oldLines, cursor, chunk.endOfFile) : -1;
    }
    if (found === -1) {
      const preview = chunk.oldLines.slice(0, 3).map((l) => JSON.stringify(l.slice(0, 120))).join(", ");
      throw new LurkError("TOOL_FAILED", `${where}: the context and removed lines were not found in the file (starting ${preview}${chunk.oldLines.length > 3 ? ", ..." : ""}); nothing was changed. Read the file and make the hunk match it`);
    }
    edits.push({ at: found, remove: oldLines.length, insert: newLines });
    cursor = found + oldLines.length;
  });
  for (const edit of edits.sort((a, b) => b.at - a.at)) lines.splice(edit.at, edit.remove, ...edit.insert);
  const out = lines.length > 0 ? lines.join(eol) + eol : "";
  return { text: out, added, removed };
}

/** The first index >= `start` where `pattern` matches: exactly, then ignoring trailing, then all surrounding whitespace. */
function seek(lines: string[], pattern: string[], start: number, endOfFile: boolean): number {
  if (pattern.length > lines.length) return -1;
  const passes: Array<(s: string) => string> = [(s) => s, (s) => s.trimEnd(), (s) => s.trim()];
  for (const norm of passes) {
    const matchAt = (i: number) => pattern.every((p, k) => norm(lines[i + k]!) === norm(p));
    if (endOfFile) {
      const last = lines.length - pattern.length;
      if (last >= start && matchAt(last)) return last;
    }
    for (let i = start; i <= lines.length - pattern.length; i++) if (matchAt(i)) return i;
  }
  return -1;
}
