/**
 * `exec` (alias `bash`): runs a shell command with bash in the agent's workspace, inside the
 * bubblewrap sandbox (exec/sandbox.ts): no network, read-only system, private /tmp, clean
 * environment, resource limits, and a deadline after which everything it started is killed.
 * It runs in the tools actor's main thread (`runsIn: "process"`), not in a pool worker.
 *
 * The reply is the command's output (stdout and stderr interleaved, as a terminal shows them)
 * and its exit code. Output over config.tools.outputCapBytes is shown as head and tail; the
 * whole of it is saved in the workspace as `.lurkbot/outputs/<toolCallId>.txt` (named in the
 * reply's `truncated`), for `read` to page through. A non-zero exit is `isError` (TOOL_FAILED),
 * the deadline is TIMEOUT, cancellation ABORTED; without a sandbox the call is refused with
 * SANDBOX_UNAVAILABLE (unless tools.exec.allowUnsandboxed).
 */
import { createReadStream } from "node:fs";
import { z } from "zod";
import { LurkError } from "../../../shared/contract/index.js";
import { cutUtf8 } from "../content.js";
import { runCommand, type CommandOutcome } from "../exec/run.js";
import { unavailableMessage } from "../exec/sandbox.js";
import type { ConfinedFs } from "../fs-confined.js";
import { saveOutput } from "../saved-output.js";
import { defineTool } from "../tool.js";

export { OUTPUTS_DIR } from "../saved-output.js";
/** bytes of the cap kept for the notes around the output */
const NOTE_RESERVE = 700;

const parameters = z.object({
  command: z.string().min(1).max(100_000).describe("The shell command (bash) to run in the workspace"),
  timeoutSeconds: z.number().int().min(1).max(3600).optional()
    .describe("Kill the command after this many seconds (default and maximum: the configured tool timeout)"),
});

export const execTool = defineTool({
  name: "exec",
  aliases: ["bash"],
  description: "Run a shell command (bash -c) in the workspace, which is the working directory and the only writable place "
    + "(besides a private /tmp). Sandboxed: no network, read-only system, a clean environment, resource limits. "
    + "stdout and stderr come back interleaved, with the exit code. Long output is shown as its beginning and end; the full "
    + "output is saved in the workspace (the result names the file) and can be paged with read. Commands are killed at the "
    + "deadline, together with anything they started in the background.",
  parameters,
  sideEffects: true,
  parallelSafe: false,
  groups: ["group:runtime"],
  runsIn: "process",
  async execute(args, ctx) {
    const host = ctx.host;
    if (!host) throw new LurkError("TOOL_FAILED", "exec runs in the tools actor process only, not in a pool worker");
    if (host.exec.mode === "unavailable") throw new LurkError("SANDBOX_UNAVAILABLE", unavailableMessage(host.exec));
    const timeoutMs = Math.min(host.timeoutMs, (args.timeoutSeconds ?? Infinity) * 1000);
    const cap = ctx.limits.outputCapBytes;
    const outcome = await runCommand(host.exec, {
      command: args.command,
      workspace: ctx.fs.realRoot,
      timeoutMs,
      signal: ctx.signal,
      capBytes: Math.max(512, cap - NOTE_RESERVE),
    });
    try {
      return await describeOutcome(outcome, ctx.fs, ctx.call?.toolCallId ?? `exec-${Date.now()}`, cap, host.exec.mode === "none");
    } finally {
      await outcome.spool?.cleanup();
    }
  },
});

async function describeOutcome(outcome: CommandOutcome, fs: ConfinedFs, toolCallId: string, cap: number, unsandboxed: boolean) {
  const budget = Math.max(512, cap - NOTE_RESERVE);
  const notes: string[] = [];
  let body: string;
  let truncated: { fullOutputPath: string; totalBytes: number } | undefined;
  if (outcome.output) {
    body = cutUtf8(outcome.output.toString("utf8"), budget);
  } else {
    const head = cutUtf8(outcome.head!.toString("utf8"), Math.floor(budget * 0.6));
    const tail = tailUtf8(outcome.tail!.toString("utf8"), budget - Buffer.byteLength(head, "utf8"));
    const omitted = outcome.totalBytes - Buffer.byteLength(head, "utf8") - Buffer.byteLength(tail, "utf8");
    let where = "";
    if (outcome.spool) {
      try {
        const path = await saveOutput(fs, createReadStream(outcome.spool.path), toolCallId);
        truncated = { fullOutputPath: path, totalBytes: outcome.spool.bytes };
        where = outcome.spool.complete
          ? `; the full output is saved in ${path}: page through it with read (path "${path}", offset)`
          : `; the first ${outcome.spool.bytes} bytes are saved in ${path}: page through them with read (path "${path}", offset)`;
      } catch (err) {
        where = `; the full output could not be saved (${LurkError.from(err).message})`;
      }
    }
    body = `${head}\n[... ${Math.max(0, omitted)} bytes omitted: the output was ${outcome.totalBytes} bytes, over the ${cap}-byte cap${where} ...]\n${tail}`;
  }
  if (outcome.stopped) notes.push(`[${outcome.stopped.message}]`);
  else if (outcome.exitSignal) notes.push(`[killed by ${outcome.exitSignal}]`);
  else notes.push(`[exit code ${outcome.exitCode}]`);
  if (outcome.sandboxStderr) notes.push(`[sandbox: ${cutUtf8(outcome.sandboxStderr, 400)}]`);
  if (unsandboxed) notes.push("[ran WITHOUT a sandbox (tools.exec.allowUnsandboxed)]");
  const text = `${body.length > 0 ? (body.endsWith("\n") ? body : `${body}\n`) : "(no output)\n"}${notes.join("\n")}`;
  const failed = outcome.stopped !== undefined || outcome.exitSignal !== null || outcome.exitCode !== 0;
  return {
    content: [{ type: "text" as const, text }],
    ...(failed ? { isError: true, errorCode: outcome.stopped?.code ?? "TOOL_FAILED" } : {}),
    ...(truncated ? { truncated } : {}),
  };
}

/** The longest suffix of `text` that is at most `maxBytes` in UTF-8. */
function tailUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return text;
  let start = bytes.length - Math.max(0, maxBytes);
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
  return bytes.subarray(start).toString("utf8");
}
