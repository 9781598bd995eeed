/**
 * HEARTBEAT.md: reading it, the "effectively empty" rule (seeds 001 §3.7) and the prompt.
 * Effectively empty = nothing but headings, blank lines, HTML comments and empty list items or
 * checkboxes ("-", "- [ ]", "1."). Such a file means: no heartbeat, no LLM call.
 */
import { closeSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import { HEARTBEAT_OK_TOKEN } from "../../shared/contract/index.js";

export const HEARTBEAT_FILE = "HEARTBEAT.md";
/** larger files are cut: the checklist is a short list, not a document */
export const MAX_CHECKLIST_CHARS = 20_000;

const EMPTY_LINE = [
  /^$/,
  /^#{1,6}(\s.*)?$/, // a heading
  /^([-*+]|\d+[.)])\s*(\[[ xX]?\])?\s*$/, // an empty list item or checkbox
];

export function isEffectivelyEmpty(content: string): boolean {
  const withoutComments = content.replace(/<!--[\s\S]*?(-->|$)/g, "");
  return withoutComments.split(/\r?\n/).every((line) => EMPTY_LINE.some((re) => re.test(line.trim())));
}

/**
 * The checklist text (its first MAX_CHECKLIST_CHARS bytes), or null when the file does not exist.
 * Read synchronously: a few KB from the page cache cost microseconds, four thread-pool hops of
 * an async read cost more than the whole rest of an idle tick.
 */
export async function readChecklist(workspace: string): Promise<string | null> {
  let fd: number | undefined;
  try {
    fd = openSync(join(workspace, HEARTBEAT_FILE), "r");
    const buffer = Buffer.alloc(MAX_CHECKLIST_CHARS);
    const bytes = readSync(fd, buffer, 0, buffer.length, 0);
    return buffer.toString("utf8", 0, bytes);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT" || (err as NodeJS.ErrnoException).code === "ENOTDIR") return null;
    throw err;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The seeds' default heartbeat prompt, or the configured one. */
export function heartbeatPrompt(checklist: string, override?: string): string {
  if (override) return override;
  return [
    "## Heartbeat Check",
    "",
    "It's time for your periodic check. Please review and handle these tasks:",
    "",
    checklist.trim(),
    "",
    "After completing checks:",
    "1. If anything needs user attention, notify them",
    `2. If no action needed, respond with ${HEARTBEAT_OK_TOKEN}`,
    "",
    "Keep responses brief and actionable.",
  ].join("\n");
}
