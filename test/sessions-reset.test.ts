/** Daily and idle session resets: the pure boundary math, and the store applying it in begin/ensure. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { TranscriptRecord } from "../shared/contract/index.js";
import { parseConfig } from "../shared/runtime/config.js";
import { lastDailyBoundary, resetReason } from "../services/sessions/reset-policy.js";
import { zonedTimeToInstant } from "../shared/runtime/time-zone.js";
import { SessionStore, type AutoReset } from "../services/sessions/store.js";

const t = (iso: string) => Date.parse(iso);
const MIN = 60_000;

describe("reset policy: the daily boundary", () => {
  const cases: Array<[string, string, number, string, string]> = [
    // [what, zone, hour, now, most recent boundary]
    ["UTC, before the hour: yesterday's", "UTC", 4, "2026-03-10T03:00:00Z", "2026-03-09T04:00:00Z"],
    ["UTC, after the hour: today's", "UTC", 4, "2026-03-10T05:00:00Z", "2026-03-10T04:00:00Z"],
    ["UTC, exactly at the hour", "UTC", 4, "2026-03-10T04:00:00Z", "2026-03-10T04:00:00Z"],
    ["Berlin winter, 03:30 local", "Europe/Berlin", 4, "2026-01-15T02:30:00Z", "2026-01-14T03:00:00Z"],
    ["Berlin winter, 04:30 local", "Europe/Berlin", 4, "2026-01-15T03:30:00Z", "2026-01-15T03:00:00Z"],
    ["New York midnight, 23:30 local", "America/New_York", 0, "2026-01-15T04:30:00Z", "2026-01-14T05:00:00Z"],
    ["New York midnight, 00:30 local (across midnight)", "America/New_York", 0, "2026-01-15T05:30:00Z", "2026-01-15T05:00:00Z"],
    ["Tokyo: the local date is ahead of UTC", "Asia/Tokyo", 4, "2026-01-15T20:00:00Z", "2026-01-15T19:00:00Z"],
    ["Tokyo, local 03:00 next day", "Asia/Tokyo", 4, "2026-01-15T18:00:00Z", "2026-01-14T19:00:00Z"],
    ["New York DST start: 02:00 does not exist, the boundary is the jump", "America/New_York", 2, "2026-03-08T12:00:00Z", "2026-03-08T07:00:00Z"],
    ["Berlin DST start day, 04:00 CEST", "Europe/Berlin", 4, "2026-03-29T10:00:00Z", "2026-03-29T02:00:00Z"],
    ["Berlin DST start day, 03:30 CEST: yesterday 04:00 CET", "Europe/Berlin", 4, "2026-03-29T01:30:00Z", "2026-03-28T03:00:00Z"],
    ["Berlin DST end: 02:00 happens twice, the first counts", "Europe/Berlin", 2, "2026-10-25T12:00:00Z", "2026-10-25T00:00:00Z"],
    ["New York DST end, 01:00 twice: the first", "America/New_York", 1, "2026-11-01T12:00:00Z", "2026-11-01T05:00:00Z"],
  ];
  for (const [what, zone, hour, now, expected] of cases) {
    it(what, () => {
      assert.equal(new Date(lastDailyBoundary(t(now), hour, zone)).toISOString(), new Date(t(expected)).toISOString());
    });
  }

  it("wall-clock to instant in a zone", () => {
    assert.equal(zonedTimeToInstant(Date.UTC(2026, 6, 1, 12), "Europe/Berlin"), t("2026-07-01T10:00:00Z"));
    assert.equal(zonedTimeToInstant(Date.UTC(2026, 0, 1, 12), "UTC"), t("2026-01-01T12:00:00Z"));
  });
});

describe("reset policy: which reset is due", () => {
  it("idle: expires at exactly idleResetMinutes of inactivity", () => {
    const policy = { idleResetMinutes: 30 };
    assert.equal(resetReason(0, 30 * MIN - 1, policy), null);
    assert.equal(resetReason(0, 30 * MIN, policy), "idle");
    assert.equal(resetReason(0, 10 * 24 * 60 * MIN, policy), "idle");
  });

  it("daily: due when the last activity is before the most recent boundary", () => {
    const policy = { dailyResetHour: 4, timeZone: "UTC" };
    assert.equal(resetReason(t("2026-01-15T03:59:00Z"), t("2026-01-15T04:01:00Z"), policy), "daily");
    assert.equal(resetReason(t("2026-01-15T04:00:00Z"), t("2026-01-15T23:00:00Z"), policy), null);
    assert.equal(resetReason(t("2026-01-14T05:00:00Z"), t("2026-01-15T03:00:00Z"), policy), null, "same reset day");
    assert.equal(resetReason(t("2026-01-14T03:00:00Z"), t("2026-01-15T03:00:00Z"), policy), "daily");
  });

  it("both: the deadline that passed first names the reset", () => {
    const policy = { dailyResetHour: 4, timeZone: "UTC", idleResetMinutes: 60 };
    assert.equal(resetReason(t("2026-01-15T03:50:00Z"), t("2026-01-15T04:10:00Z"), policy), "daily");
    assert.equal(resetReason(t("2026-01-15T03:50:00Z"), t("2026-01-15T05:10:00Z"), policy), "daily");
    assert.equal(resetReason(t("2026-01-15T02:00:00Z"), t("2026-01-15T04:10:00Z"), policy), "idle");
    assert.equal(resetReason(t("2026-01-15T04:30:00Z"), t("2026-01-15T05:00:00Z"), policy), null);
  });

  it("off by default", () => {
    assert.equal(resetReason(0, Date.now(), undefined), null);
    assert.equal(resetReason(0, Date.now(), {}), null);
    const cfg = parseConfig({}, { LURKBOT_HOME: "/tmp/lurk-x" });
    const { replication, usage, ...resets } = cfg.sessions;
    assert.deepEqual(resets, {});
    assert.equal(replication.enabled, false, "replication is off by default too");
    assert.equal(usage.retentionDays, 400, "the usage ledger keeps 400 days");
  });

  it("config: validates the hour and the time zone", () => {
    const cfg = parseConfig({ sessions: { dailyResetHour: 4, idleResetMinutes: 120, timeZone: "Europe/Berlin" } }, { LURKBOT_HOME: "/tmp/lurk-x" });
    const { replication: _, usage: __, ...resets } = cfg.sessions;
    assert.deepEqual(resets, { dailyResetHour: 4, idleResetMinutes: 120, timeZone: "Europe/Berlin" });
    assert.throws(() => parseConfig({ sessions: { replication: { enabled: true, leaseTtlMs: 2000, leaseRenewMs: 1500 } } }, { LURKBOT_HOME: "/tmp/lurk-x" }), /sessions\.replication\.leaseRenewMs must be at most half/);
    assert.throws(() => parseConfig({ sessions: { dailyResetHour: 24 } }, { LURKBOT_HOME: "/tmp/lurk-x" }), /sessions\.dailyResetHour/);
    assert.throws(() => parseConfig({ sessions: { timeZone: "Mars/Olympus" } }, { LURKBOT_HOME: "/tmp/lurk-x" }), /sessions\.timeZone: unknown time zone/);
  });
});

describe("session store with a reset policy and a controllable clock", () => {
  const note = (id: string, runId: string): TranscriptRecord => ({ id, ts: 1, kind: "context_note", text: id, runId });
  const marker = (runId: string): TranscriptRecord => ({ id: `${runId}:started`, ts: 1, runId, kind: "run_marker", runStatus: "started" });
  const base = { agentId: "main", sessionType: "main" as const, historyLimit: 100 };
  let dir: string;
  let clock = t("2026-01-15T10:00:00Z");
  const resets: AutoReset[] = [];
  let store: SessionStore;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "lurk-sessions-reset-"));
    store = new SessionStore(dir, () => clock, { resetPolicy: { idleResetMinutes: 30, dailyResetHour: 4, timeZone: "Europe/Berlin" }, onReset: (r) => resets.push(r) });
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("begin keeps a fresh session and resets an idle one before appending the new run", async () => {
    const key = "agent:main:idle";
    const first = await store.begin({ ...base, sessionKey: key, runId: "r1", records: [marker("r1"), note("r1:in", "r1")] });
    clock += 10 * MIN;
    const second = await store.begin({ ...base, sessionKey: key, runId: "r2", records: [marker("r2"), note("r2:in", "r2")] });
    assert.equal(second.session.sessionId, first.session.sessionId, "active 10 min ago: kept");
    assert.deepEqual(second.records.map((r) => r.id), ["r1:started", "r1:in", "r2:started", "r2:in"]);
    assert.equal(resets.length, 0);

    clock += 31 * MIN;
    const third = await store.begin({ ...base, sessionKey: key, runId: "r3", records: [marker("r3"), note("r3:in", "r3")] });
    assert.notEqual(third.session.sessionId, first.session.sessionId);
    assert.deepEqual(third.records.map((r) => r.id), ["r3:started", "r3:in"], "only the new run's records");
    assert.equal(third.session.records, 2);
    assert.deepEqual(third.reset && { reason: third.reset.reason, previousSessionId: third.reset.previousSessionId }, { reason: "idle", previousSessionId: first.session.sessionId });
    assert.equal(resets.length, 1);
    assert.deepEqual({ ...resets[0]!, sessionId: "-" }, { sessionKey: key, reason: "idle", previousSessionId: first.session.sessionId, sessionId: "-", lastActivity: clock - 31 * MIN });
    assert.equal(resets[0]!.sessionId, third.session.sessionId);
    assert.deepEqual(store.run("r1").records.map((r) => r.id), ["r1:started", "r1:in"], "the old transcript stays on disk");

    // a redelivered run stays where it began, however long it has been
    clock += 60 * MIN;
    const again = await store.begin({ ...base, sessionKey: key, runId: "r3", records: [marker("r3"), note("r3:in", "r3")] });
    assert.equal(again.prior, "started");
    assert.equal(again.session.sessionId, third.session.sessionId);
    assert.equal(resets.length, 1);
  });

  it("begin resets a session last active before the daily boundary (04:00 Berlin)", async () => {
    const key = "agent:main:daily";
    clock = t("2026-01-16T02:50:00Z"); // 03:50 in Berlin
    const first = await store.begin({ ...base, sessionKey: key, runId: "d1", records: [marker("d1")] });
    clock = t("2026-01-16T03:05:00Z"); // 04:05: 15 minutes later, but across the boundary
    const second = await store.begin({ ...base, sessionKey: key, runId: "d2", records: [marker("d2")] });
    assert.notEqual(second.session.sessionId, first.session.sessionId);
    assert.equal(second.reset?.reason, "daily");
    assert.deepEqual(second.records.map((r) => r.id), ["d2:started"]);
    clock = t("2026-01-16T03:20:00Z");
    const third = await store.begin({ ...base, sessionKey: key, runId: "d3", records: [marker("d3")] });
    assert.equal(third.session.sessionId, second.session.sessionId, "after the boundary: kept");
    assert.equal(third.reset, undefined);
  });

  it("ensure applies the policy too; an empty session is never reset", async () => {
    const key = "agent:main:ensure";
    clock = t("2026-01-17T12:00:00Z");
    const created = (await store.ensure({ sessionKey: key, agentId: "main", sessionType: "main" })).session;
    clock += 2 * 24 * 60 * MIN;
    const before = resets.length;
    const empty = await store.ensure({ sessionKey: key, agentId: "main", sessionType: "main" });
    assert.equal(empty.session.sessionId, created.sessionId, "no records: nothing to reset");
    assert.equal(empty.reset, undefined);
    await store.append(key, [note("e1", "e")]);
    clock += 45 * MIN;
    const { session: after, reset } = await store.ensure({ sessionKey: key, agentId: "main", sessionType: "main" });
    assert.notEqual(after.sessionId, created.sessionId);
    assert.equal(after.records, 0);
    assert.deepEqual(reset, { reason: "idle", previousSessionId: created.sessionId }, "the reply names the reset, for the ended transcript's consolidation");
    assert.deepEqual(store.history(key, 10), []);
    assert.equal(resets.length, before + 1);
    assert.equal(resets.at(-1)!.reason, "idle");
  });
});
