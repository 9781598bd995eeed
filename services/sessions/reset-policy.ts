/**
 * Automatic session resets (OpenClaw-style), as pure functions of the clock:
 *   daily: a session last active before the most recent `dailyResetHour`:00 (local time in
 *          `timeZone`, default the host's) starts a fresh transcript on its next run;
 *   idle:  a session inactive for `idleResetMinutes` does too.
 * Both are optional; with both set, the one whose deadline passed first is reported.
 */
import { wallClock, zonedTimeToInstant } from "../../shared/runtime/time-zone.js";

export interface ResetPolicy {
  /** 0-23, local hour of the daily reset; unset = no daily reset */
  dailyResetHour?: number | undefined;
  /** minutes without activity before a reset; unset = no idle reset */
  idleResetMinutes?: number | undefined;
  /** IANA time zone of dailyResetHour, e.g. Europe/Berlin; unset = the host's local zone */
  timeZone?: string | undefined;
}

export type ResetReason = "daily" | "idle";

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
