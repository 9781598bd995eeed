/**
 * Automatic session resets (OpenClaw-style), as pure functions of the clock:
 *   daily: a session last active before the most recent `dailyResetHour`:00 (local time in
 *          `timeZone`, default the host's) starts a fresh transcript on its next run;
 *   idle:  a session inactive for `idleResetMinutes` does too.
 * Both are optional; with both set, the one whose deadline passed first is reported.
 */
export interface ResetPolicy {
  /** 0-23, local hour of the daily reset; unset = no daily reset */
  dailyResetHour?: number | undefined;
  /** minutes without activity before a reset; unset = no idle reset */
  idleResetMinutes?: number | undefined;
  /** IANA time zone of dailyResetHour, e.g. Europe/Berlin; unset = the host's local zone */
  timeZone?: string | undefined;
}

export type ResetReason = "daily" | "idle";

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
function wallClock(t: number, timeZone: string | undefined): number {
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
 * jump maps to the end of the gap; a repeated one to its first occurrence.
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
  return Math.max(t1, t2); // in a gap: the moment the clock jumps past it
}

/** The most recent instant <= now at which the local time was `hour`:00 in the zone. */
export function lastDailyBoundary(now: number, hour: number, timeZone?: string): number {
  const wall = new Date(wallClock(now, timeZone));
  const y = wall.getUTCFullYear();
  const m = wall.getUTCMonth();
  const d = wall.getUTCDate();
  const today = zonedTimeToInstant(Date.UTC(y, m, d, hour), timeZone);
  if (today <= now) return today;
  return zonedTimeToInstant(Date.UTC(y, m, d - 1, hour), timeZone);
}

/** Why a session last active at `updatedAt` is due for a reset at `now`, or null. */
export function resetReason(updatedAt: number, now: number, policy: ResetPolicy | undefined): ResetReason | null {
  if (!policy) return null;
  const due: Array<{ reason: ResetReason; at: number }> = [];
  if (policy.idleResetMinutes !== undefined && policy.idleResetMinutes > 0) {
    const at = updatedAt + policy.idleResetMinutes * 60_000;
    if (now >= at) due.push({ reason: "idle", at });
  }
  if (policy.dailyResetHour !== undefined) {
    const at = lastDailyBoundary(now, policy.dailyResetHour, policy.timeZone);
    if (updatedAt < at) due.push({ reason: "daily", at });
  }
  if (due.length === 0) return null;
  return due.sort((a, b) => a.at - b.at)[0]!.reason;
}
