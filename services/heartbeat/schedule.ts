/**
 * Pure schedule functions: active hours in an IANA time zone (windows across midnight included)
 * and the next due time of an agent's heartbeat. Every function takes the time explicitly.
 */
import type { ActiveHours } from "../../shared/runtime/config-heartbeat.js";

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string | undefined): Intl.DateTimeFormat {
  const key = timeZone ?? "";
  let f = formatters.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", { hour: "2-digit", minute: "2-digit", hourCycle: "h23", ...(timeZone ? { timeZone } : {}) });
    formatters.set(key, f);
  }
  return f;
}

/** Minutes since local midnight (0..1439) of `ts` in `timeZone` (default: the host's). */
export function minuteOfDay(ts: number, timeZone?: string): number {
  let hour = 0;
  let minute = 0;
  for (const part of formatter(timeZone).formatToParts(new Date(ts))) {
    if (part.type === "hour") hour = Number(part.value) % 24;
    else if (part.type === "minute") minute = Number(part.value);
  }
  return hour * 60 + minute;
}

/** "HH:MM" (or "24:00") -> minutes since midnight. */
export function parseHhMm(text: string): number {
  const [h, m] = text.split(":").map(Number);
  return (h ?? 0) * 60 + (m ?? 0);
}

/**
 * Whether `ts` falls in the window [start, end) local to the window's time zone. An end before
 * the start is a window across midnight (22:00-06:00: 22:00..23:59 and 00:00..05:59). No window
 * means always. A window whose start equals its end is empty (the config refuses it).
 */
export function isWithinActiveHours(window: ActiveHours | undefined, ts: number): boolean {
  if (!window) return true;
  const start = parseHhMm(window.start);
  const end = parseHhMm(window.end);
  const now = minuteOfDay(ts, window.timeZone);
  if (start === end) return false;
  if (start < end) return now >= start && now < end;
  return now >= start || now < end;
}

/**
 * When an agent's next heartbeat is due. A stored due time is kept while it is consistent with
 * the interval (a restart keeps the rhythm); a missing one or one further away than one interval
 * (the interval was shortened) becomes `now + every`. An overdue one stays: it runs at once.
 */
export function nextDueAt(stored: number | undefined, now: number, everyMs: number): number {
  if (stored === undefined || stored > now + everyMs) return now + everyMs;
  return stored;
}

/** The due time after a heartbeat that was due at `dueAt` ran at `now`: never in the past. */
export function followingDueAt(dueAt: number, now: number, everyMs: number): number {
  const next = dueAt + everyMs;
  return next > now ? next : now + everyMs;
}
