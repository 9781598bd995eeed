/**
 * Cron schedules and durations as text, for the cron actor, the CLI and the cron tool:
 * "every 10m", "cron 0 9 * * * (Europe/Berlin)", "1h30m" <-> 5_400_000.
 */
import type { CronJob } from "../contract/index.js";

type Schedule = CronJob["schedule"];

/** A short human description, e.g. "every 10m", "cron 0 9 * * * (Europe/Berlin)". */
export function describeSchedule(schedule: Schedule): string {
  switch (schedule.kind) {
    case "at": return `at ${new Date(schedule.atMs).toISOString()}`;
    case "every": return `every ${formatDuration(schedule.everyMs)}${schedule.anchorMs !== undefined ? ` from ${new Date(schedule.anchorMs).toISOString()}` : ""}`;
    case "cron": return `cron ${schedule.expr} (${schedule.tz})`;
  }
}

const UNITS: Array<[string, number]> = [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1_000], ["ms", 1]];

export function formatDuration(ms: number): string {
  for (const [unit, size] of UNITS) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** "90s", "10m", "1h30m", "2d", "500ms" -> ms; undefined when it is not a duration. */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim().toLowerCase();
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d))+$/.test(trimmed)) return undefined;
  let total = 0;
  for (const [, num, unit] of trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)) {
    total += Number(num) * UNITS.find(([u]) => u === unit)![1];
  }
  return Math.round(total);
}
