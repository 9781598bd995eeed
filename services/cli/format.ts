/** Text helpers of the CLI's human output: one-line previews and aligned tables. */

/** `text` on one line (runs of whitespace become one space), cut to `max` characters with "…". */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** `YYYY-MM-DD HH:MM:SS` (UTC) */
export function formatTime(ms: number): string {
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19);
}

/** `YYYY-MM-DD HH:MM:SS UTC` */
export const utcTime = (ms: number): string => `${formatTime(ms)} UTC`;

/** Columns two spaces apart, padded to the widest cell; `rightAligned` column indexes pad on the left. */
export function table(head: string[], rows: string[][], rightAligned: number[] = []): string {
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const line = (cells: string[]) => cells.map((cell, c) => (rightAligned.includes(c) ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join("  ").trimEnd();
  return [line(head), ...rows.map(line)].join("\n") + "\n";
}
