import { readFileSync, readlinkSync } from "node:fs";

/**
 * The host's zone name, found the way ICU finds it (TZ, then the /etc/localtime link, then
 * /etc/timezone) but without Intl: the first Intl date formatter, even `resolvedOptions()`,
 * pages ~8 MB of ICU data into the process. Undefined when none of them names a zone.
 */
export function hostTimeZoneName(env: Record<string, string | undefined> = process.env): string | undefined {
  const tz = env.TZ;
  if (tz !== undefined) {
    const name = tz.startsWith(":") ? tz.slice(1) : tz;
    if (name === "") return "UTC";
    return /^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name) && !name.includes("..") ? name : undefined;
  }
  try {
    const link = readlinkSync("/etc/localtime");
    const at = link.lastIndexOf("zoneinfo/");
    if (at >= 0 && link.length > at + 9) return link.slice(at + 9);
  } catch {
    // not a link (a copied file), or absent
  }
  try {
    return readFileSync("/etc/timezone", "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The wall-clock time of instant `t` in the host's zone, from Date's local fields (ms, whole seconds, as if UTC): wallClock(t) without Intl. */
export function hostWallClock(t: number): number {
  const d = new Date(t);
  return Date.UTC(d.getFullYear(), d.getMonth(), d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds());
}

/** IANA time zone names, checked the way Intl (and croner) will use them. */
export function isValidTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** One formatter per zone (undefined: the host's), reused: building one costs far more than using it. */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string | undefined): Intl.DateTimeFormat {
  const key = timeZone ?? "";
  let f = formatters.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      ...(timeZone ? { timeZone } : {}),
      hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric",
    });
    formatters.set(key, f);
  }
  return f;
}

/** The wall-clock time of instant `t` in the zone, as if it were UTC (ms, whole seconds). */
export function wallClock(t: number, timeZone: string | undefined): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(new Date(t))) if (p.type !== "literal") parts[p.type] = Number(p.value);
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour! % 24, parts.minute!, parts.second!);
}

/** The zone's UTC offset at instant `t`, ms (east positive). */
function offsetAt(t: number, timeZone: string | undefined): number {
  const whole = Math.floor(t / 1000) * 1000;
  return wallClock(whole, timeZone) - whole;
}

/**
 * The instant a wall-clock time (given as if UTC) happens in the zone. A time skipped by a DST
 * jump is moved forward by the jump (02:30 in a 02:00 -> 03:00 gap is 03:30; a whole hour in
 * the gap is its end), as Temporal's "compatible" rule does; a repeated one is its first occurrence.
 */
export function zonedTimeToInstant(wall: number, timeZone: string | undefined): number {
  const o1 = offsetAt(wall, timeZone);
  const t1 = wall - o1;
  const o2 = offsetAt(t1, timeZone);
  if (o2 === o1) {
    // the earlier of two occurrences (fall back), when there are two
    const t0 = wall - offsetAt(t1 - 3 * 3600_000, timeZone);
    return t0 < t1 && offsetAt(t0, timeZone) === wall - t0 ? t0 : t1;
  }
  const t2 = wall - o2;
  if (offsetAt(t2, timeZone) === o2) return t2;
  return Math.max(t1, t2); // in a gap: moved forward by the jump
}
