/**
 * A page as text the model can act on: playwright-core's ARIA snapshot in its "ai" mode (a YAML
 * outline of roles and names; every element gets a ref like `[ref=e12]` that `page.getByRef`
 * resolves against the latest snapshot of its frame; iframes included), cut at a character cap
 * with a note. The values of password fields are never shown (they would end up in transcripts).
 * After an action, `changes` gives the lines that appeared and disappeared, when that is
 * shorter than the whole snapshot.
 */
import type { Tab } from "./session.js";

export interface Snapshot {
  text: string;
  /** the characters of the whole snapshot */
  total: number;
  cut: boolean;
}

/** The values of the password fields in every frame of the tab (not shown in snapshots). */
async function passwordValues(tab: Tab): Promise<Set<string>> {
  const values = new Set<string>();
  for (const frame of tab.page.frames()) {
    const found = await frame.$$eval("input[type=password]", (els) => els.map((e) => (e as unknown as { value: string }).value)).catch(() => [] as string[]);
    for (const v of found) if (v) values.add(v);
  }
  return values;
}

/** A textbox line whose value is a password field's: the value replaced. */
export function maskPasswords(snapshot: string, values: ReadonlySet<string>): string {
  if (values.size === 0) return snapshot;
  return snapshot.split("\n").map((line) => {
    const m = /^(\s*- textbox\b.*?): (.*)$/.exec(line);
    return m && values.has(m[2]!.replace(/^"(.*)"$/, "$1")) ? `${m[1]}: (a password, not shown)` : line;
  }).join("\n");
}

/** Takes the tab's snapshot (remembered for the next diff), cut at `maxChars`; password values are not shown. */
export async function takeSnapshot(tab: Tab, maxChars: number, timeoutMs: number): Promise<Snapshot> {
  const full = maskPasswords(await tab.page.ariaSnapshot({ mode: "ai", timeout: timeoutMs }), await passwordValues(tab));
  tab.lastSnapshot = full;
  return cut(full, maxChars);
}

export function cut(full: string, maxChars: number): Snapshot {
  if (full.length <= maxChars) return { text: full, total: full.length, cut: false };
  const end = full.lastIndexOf("\n", maxChars);
  const text = full.slice(0, end > maxChars / 2 ? end : maxChars);
  return { text: `${text}\n[snapshot cut at ${text.length} of ${full.length} characters: use a larger maxChars, or act on what is shown and snapshot again]`, total: full.length, cut: true };
}

/** `- removed` / `+ added` lines between two snapshots (multiset difference, in page order). */
export function changes(before: string, after: string): string {
  const count = (lines: string[]) => lines.reduce((m, l) => m.set(l, (m.get(l) ?? 0) + 1), new Map<string, number>());
  const beforeLines = before.split("\n");
  const afterLines = after.split("\n");
  const left = count(afterLines);
  const removed = beforeLines.filter((l) => {
    const n = left.get(l) ?? 0;
    if (n > 0) left.set(l, n - 1);
    return n === 0;
  });
  const right = count(beforeLines);
  const added = afterLines.filter((l) => {
    const n = right.get(l) ?? 0;
    if (n > 0) right.set(l, n - 1);
    return n === 0;
  });
  return [...removed.map((l) => `- ${l.trim()}`), ...added.map((l) => `+ ${l.trim()}`)].join("\n");
}

/** One line naming a tab: `t2 "Title" https://...`. */
export async function describeTab(tab: Tab): Promise<string> {
  const title = await tab.page.title().catch(() => "");
  return `${tab.id} "${title.slice(0, 200)}" ${tab.page.url()}${tab.crashed ? " (crashed: close it or navigate it)" : ""}`;
}
