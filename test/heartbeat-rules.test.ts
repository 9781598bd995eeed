/**
 * The heartbeat actor's pure rules with explicit times: active hours in IANA time zones (windows
 * across midnight), due times, the "effectively empty" HEARTBEAT.md rule, HEARTBEAT_OK handling
 * with the ack limit, alert hashing, and the `heartbeat` config key with per-agent overrides.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isEffectivelyEmpty, heartbeatPrompt } from "../services/heartbeat/checklist.js";
import { alertHash, classifyReply, stripHeartbeatToken } from "../services/heartbeat/reply.js";
import { followingDueAt, isWithinActiveHours, minuteOfDay, nextDueAt } from "../services/heartbeat/schedule.js";
import { parseConfig } from "../shared/runtime/config.js";
import { DEFAULT_HEARTBEAT_ACK_MAX_CHARS, resolveHeartbeatConfig } from "../shared/runtime/config-heartbeat.js";

/** `HH:MM` on 2024-01-15 (winter: Berlin = UTC+1, New York = UTC-5) as a UTC instant */
const utc = (hhmm: string, day = 15) => Date.parse(`2024-01-${String(day).padStart(2, "0")}T${hhmm}:00Z`);

describe("active hours", () => {
  it("reads the local time of an instant in the window's time zone", () => {
    assert.equal(minuteOfDay(utc("07:30"), "UTC"), 7 * 60 + 30);
    assert.equal(minuteOfDay(utc("07:30"), "Europe/Berlin"), 8 * 60 + 30);
    assert.equal(minuteOfDay(utc("03:00"), "America/New_York"), 22 * 60, "the previous evening in New York");
    assert.equal(minuteOfDay(utc("23:59"), "Asia/Kolkata"), 5 * 60 + 29, "half-hour offsets");
  });

  it("a day window [start, end) and no window at all", () => {
    const day = { start: "08:00", end: "22:00", timeZone: "UTC" };
    const cases: Array<[string, boolean]> = [["07:59", false], ["08:00", true], ["12:00", true], ["21:59", true], ["22:00", false], ["03:00", false]];
    for (const [at, expected] of cases) assert.equal(isWithinActiveHours(day, utc(at)), expected, `08:00-22:00 at ${at}`);
    assert.equal(isWithinActiveHours(undefined, utc("03:00")), true);
    assert.equal(isWithinActiveHours({ start: "00:00", end: "24:00", timeZone: "UTC" }, utc("23:59")), true, "24:00 is the end of the day");
  });

  it("a window across midnight covers the late evening and the early morning", () => {
    const night = { start: "22:00", end: "06:00", timeZone: "UTC" };
    const cases: Array<[string, boolean]> = [["21:59", false], ["22:00", true], ["23:30", true], ["00:00", true], ["05:59", true], ["06:00", false], ["12:00", false]];
    for (const [at, expected] of cases) assert.equal(isWithinActiveHours(night, utc(at)), expected, `22:00-06:00 at ${at}`);
  });

  it("the same instant is inside or outside depending on the time zone", () => {
    const instant = utc("06:30"); // 07:30 Berlin, 01:30 New York
    assert.equal(isWithinActiveHours({ start: "07:00", end: "09:00", timeZone: "Europe/Berlin" }, instant), true);
    assert.equal(isWithinActiveHours({ start: "07:00", end: "09:00", timeZone: "America/New_York" }, instant), false);
    assert.equal(isWithinActiveHours({ start: "23:00", end: "02:00", timeZone: "America/New_York" }, instant), true, "across midnight in New York");
  });
});

describe("due times", () => {
  const every = 30 * 60_000;
  it("keeps a stored due time, replaces a missing or too distant one, never schedules in the past", () => {
    const now = utc("10:00");
    assert.equal(nextDueAt(undefined, now, every), now + every);
    assert.equal(nextDueAt(now + 60_000, now, every), now + 60_000, "a restart keeps the rhythm");
    assert.equal(nextDueAt(now - 5 * 60_000, now, every), now - 5 * 60_000, "overdue: runs at once");
    assert.equal(nextDueAt(now + 3 * every, now, every), now + every, "the interval was shortened");
    assert.equal(followingDueAt(now, now + 1000, every), now + every);
    assert.equal(followingDueAt(now - 10 * every, now, every), now + every, "after a long pause: one interval from now");
  });
});

describe("HEARTBEAT.md", () => {
  it("is effectively empty with only headings, blank lines, comments and empty list items", () => {
    const empties = [
      "", "\n\n", "# HEARTBEAT.md\n", "# Title\n\n## Checks\n",
      "# HEARTBEAT.md\n\n<!-- Keep this file empty to skip heartbeat checks. -->\n",
      "<!--\nmulti-line\ncomment\n-->\n# h",
      "# Todo\n- \n- [ ]\n* [x]\n1.\n2) [ ]\n",
    ];
    for (const text of empties) assert.equal(isEffectivelyEmpty(text), true, JSON.stringify(text));
    const real = ["check the inbox", "# Todo\n- check the inbox", "- [ ] water the plants", "<!-- c --> look at the build", "1. renew the certificate"];
    for (const text of real) assert.equal(isEffectivelyEmpty(text), false, JSON.stringify(text));
  });

  it("the default prompt quotes the checklist and asks for HEARTBEAT_OK; an override replaces it", () => {
    const p = heartbeatPrompt("- [ ] check the build\n");
    assert.match(p, /check the build/);
    assert.match(p, /respond with HEARTBEAT_OK/);
    assert.equal(heartbeatPrompt("- x", "Custom check."), "Custom check.");
  });
});

describe("HEARTBEAT_OK handling", () => {
  it("strips the token at the start or the end, also wrapped in markup", () => {
    assert.deepEqual(stripHeartbeatToken("HEARTBEAT_OK"), { hadToken: true, text: "" });
    assert.deepEqual(stripHeartbeatToken("  **HEARTBEAT_OK**  "), { hadToken: true, text: "" });
    assert.deepEqual(stripHeartbeatToken("`HEARTBEAT_OK`."), { hadToken: true, text: "" });
    assert.deepEqual(stripHeartbeatToken("HEARTBEAT_OK all quiet"), { hadToken: true, text: "all quiet" });
    assert.deepEqual(stripHeartbeatToken("all quiet. HEARTBEAT_OK"), { hadToken: true, text: "all quiet." });
    assert.deepEqual(stripHeartbeatToken("I said HEARTBEAT_OK earlier, but the disk is full"), { hadToken: false, text: "I said HEARTBEAT_OK earlier, but the disk is full" });
  });

  it("classifies replies: empty or silent, acknowledgement within the ack limit, alert", () => {
    const limit = DEFAULT_HEARTBEAT_ACK_MAX_CHARS;
    assert.equal(limit, 100, "the seeds' DEFAULT_HEARTBEAT_ACK_MAX_CHARS");
    assert.deepEqual(classifyReply("", false, limit), { status: "ok-empty" });
    assert.deepEqual(classifyReply("NO_REPLY", false, limit), { status: "ok-empty" });
    assert.deepEqual(classifyReply("anything", true, limit), { status: "ok-empty" });
    assert.deepEqual(classifyReply("HEARTBEAT_OK", false, limit), { status: "ok-token", rest: "" });
    assert.deepEqual(classifyReply("HEARTBEAT_OK nothing due today", false, limit), { status: "ok-token", rest: "nothing due today" });
    const long = "x".repeat(limit + 1);
    assert.deepEqual(classifyReply(`HEARTBEAT_OK ${long}`, false, limit), { status: "alert", text: long }, "over the ack limit: delivered, token stripped");
    assert.deepEqual(classifyReply(`HEARTBEAT_OK ${"x".repeat(limit)}`, false, limit).status, "ok-token", "exactly at the limit");
    assert.deepEqual(classifyReply("The build is red.", false, limit), { status: "alert", text: "The build is red." }, "no token: always an alert");
    assert.deepEqual(classifyReply("HEARTBEAT_OK short", false, 0), { status: "alert", text: "short" }, "ack limit 0");
  });

  it("hashes alerts ignoring whitespace and case", () => {
    assert.equal(alertHash("The build is red."), alertHash("  the  build is\nred. "));
    assert.notEqual(alertHash("The build is red."), alertHash("The build is green."));
  });
});

describe("heartbeat config", () => {
  const parse = (heartbeat: unknown) => parseConfig({ heartbeat }, { LURKBOT_HOME: "/tmp/lurk-hb-cfg" }, "/tmp/lurk-hb-cfg");
  it("defaults: enabled, 30 minutes, main target, ack limit 100, no active hours", () => {
    const cfg = parseConfig({}, { LURKBOT_HOME: "/tmp/lurk-hb-cfg" }, "/tmp/lurk-hb-cfg");
    const main = resolveHeartbeatConfig(cfg.heartbeat, "main");
    assert.equal(main.enabled, true);
    assert.equal(main.everyMs, 30 * 60_000);
    assert.equal(main.target, "main");
    assert.equal(main.ackMaxChars, 100);
    assert.equal(main.activeHours, undefined);
    assert.deepEqual([cfg.heartbeat.leaseTtlMs, cfg.heartbeat.leaseRenewMs], [15_000, 5_000]);
    assert.ok(!("leaseTtlMs" in main), "the lease is the actor's, not an agent's");
  });

  it("per-agent overrides win over the global settings", () => {
    const cfg = parse({ intervalMinutes: 10, activeHours: { start: "09:00", end: "17:00", timeZone: "Europe/Berlin" }, agents: { ops: { intervalMinutes: 1, target: "last", enabled: false } } });
    const ops = resolveHeartbeatConfig(cfg.heartbeat, "ops");
    assert.equal(ops.everyMs, 60_000);
    assert.equal(ops.target, "last");
    assert.equal(ops.enabled, false);
    assert.equal(ops.activeHours?.timeZone, "Europe/Berlin", "inherited");
    assert.equal(resolveHeartbeatConfig(cfg.heartbeat, "main").everyMs, 10 * 60_000);
  });

  it("refuses bad values with the field and the fix", () => {
    assert.throws(() => parse({ activeHours: { start: "8am", end: "22:00" } }), /activeHours\.start.*HH:MM/);
    assert.throws(() => parse({ activeHours: { start: "08:00", end: "22:00", timeZone: "Mars/Olympus" } }), /unknown time zone/);
    assert.throws(() => parse({ activeHours: { start: "08:00", end: "08:00" } }), /empty window/);
    assert.throws(() => parse({ intervalMinutes: 0 }), /heartbeat\.intervalMinutes/);
    assert.throws(() => parse({ target: "everywhere" }), /heartbeat\.target/);
    assert.throws(() => parse({ agents: { "Bad.Id": {} } }), /heartbeat\.agents\.Bad\.Id/);
    assert.throws(() => parse({ leaseTtlMs: 2_000, leaseRenewMs: 1_500 }), /heartbeat\.leaseRenewMs must be at most half of heartbeat\.leaseTtlMs/);
  });
});
