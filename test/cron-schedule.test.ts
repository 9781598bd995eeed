/**
 * The cron actor's pure parts with explicit times: next runs of at / every (anchor grid) /
 * cron (time zones, DST gap and repeated hour), the catch-up rule (one fire for any number of
 * missed slots), the validation table, job patches, and the due heap.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LurkError, cronAddRequest, cronEditRequest, type CronJob } from "../shared/contract/index.js";
import { applyPatch, createJob } from "../services/cron/jobs.js";
import { firstRun, fireIdFor, nextRunAfter, planDue } from "../services/cron/schedule.js";
import { parseDuration } from "../shared/runtime/cron-text.js";
import { DueHeap } from "../services/cron/scheduler.js";
import { validateJob, type CronJobSpec } from "../services/cron/validate.js";
import { parseTime } from "../services/cli/cron.js";
import { buildInject, buildPostToMain, buildRunRequest, runIdOfFire } from "../services/cron/fire.js";

const T = (iso: string) => Date.parse(iso);
const MIN = 60_000;

const spec = (over: Partial<CronJobSpec> = {}): CronJobSpec => ({
  name: "j", agentId: "main", enabled: true, deleteAfterRun: false, sessionTarget: "main", wakeMode: "next-heartbeat",
  schedule: { kind: "every", everyMs: 10 * MIN }, payload: { kind: "systemEvent", text: "hi" }, ...over,
});
const agentTurn = (over: Record<string, unknown> = {}) => ({
  kind: "agentTurn" as const, message: "do it", timeoutSeconds: 3600, deliver: true, channel: "last" as const, bestEffortDeliver: false, ...over,
}) as CronJobSpec["payload"];

describe("cron schedules: next run", () => {
  it("at: once at its time, nothing after it", () => {
    const s = { kind: "at" as const, atMs: T("2026-12-01T09:00:00Z") };
    assert.equal(nextRunAfter(s, T("2026-11-30T00:00:00Z"), 0), s.atMs);
    assert.equal(nextRunAfter(s, s.atMs, 0), undefined);
    assert.equal(firstRun(s, s.atMs + 30_000, 0), s.atMs, "an at a moment ago still fires (at once)");
  });

  it("every: a grid from the anchor (default: creation), never shifted by when we look", () => {
    const created = T("2026-01-01T00:00:07Z");
    const s = { kind: "every" as const, everyMs: 10 * MIN };
    assert.equal(nextRunAfter(s, created, created), created + 10 * MIN);
    assert.equal(nextRunAfter(s, created + 10 * MIN - 1, created), created + 10 * MIN);
    assert.equal(nextRunAfter(s, created + 10 * MIN, created), created + 20 * MIN, "strictly after");
    assert.equal(nextRunAfter(s, created + 95 * MIN + 3, created), created + 100 * MIN);
    const anchored = { kind: "every" as const, everyMs: 3600_000, anchorMs: T("2026-01-01T09:30:00Z") };
    assert.equal(nextRunAfter(anchored, T("2026-01-01T00:00:00Z"), created), T("2026-01-01T09:30:00Z"), "before the anchor: the anchor");
    assert.equal(nextRunAfter(anchored, T("2026-01-05T12:31:00Z"), created), T("2026-01-05T13:30:00Z"));
    assert.equal(firstRun(anchored, T("2026-01-01T09:30:00Z"), created), T("2026-01-01T09:30:00Z"), "an anchor exactly now counts");
  });

  it("cron: 09:00 Europe/Berlin is 08:00Z in winter and 07:00Z in summer", () => {
    const s = { kind: "cron" as const, expr: "0 9 * * *", tz: "Europe/Berlin" };
    assert.equal(nextRunAfter(s, T("2026-01-10T12:00:00Z"), 0), T("2026-01-11T08:00:00Z"));
    assert.equal(nextRunAfter(s, T("2026-07-10T12:00:00Z"), 0), T("2026-07-11T07:00:00Z"));
    assert.equal(nextRunAfter(s, T("2026-03-28T12:00:00Z"), 0), T("2026-03-29T07:00:00Z"), "the day DST starts");
    const utc = { kind: "cron" as const, expr: "*/15 * * * *", tz: "UTC" };
    assert.equal(nextRunAfter(utc, T("2026-05-05T10:07:00Z"), 0), T("2026-05-05T10:15:00Z"));
    const ny = { kind: "cron" as const, expr: "0 9 * * 1-5", tz: "America/New_York" };
    assert.equal(nextRunAfter(ny, T("2026-01-09T15:00:00Z"), 0), T("2026-01-12T14:00:00Z"), "Friday after 9 -> Monday 9 EST");
  });

  it("cron DST: a time in the spring gap runs right after it; a repeated autumn time runs once", () => {
    const s = { kind: "cron" as const, expr: "30 2 * * *", tz: "Europe/Berlin" };
    // 2026-03-29 02:00 -> 03:00 CEST: 02:30 does not exist; it runs at 03:00 CEST = 01:00Z
    assert.equal(nextRunAfter(s, T("2026-03-28T12:00:00Z"), 0), T("2026-03-29T01:00:00Z"));
    // 2026-10-25 03:00 CEST -> 02:00 CET: 02:30 happens twice; it runs at the first (00:30Z) only
    const first = nextRunAfter(s, T("2026-10-24T12:00:00Z"), 0)!;
    assert.equal(first, T("2026-10-25T00:30:00Z"));
    assert.equal(nextRunAfter(s, first, 0), T("2026-10-26T01:30:00Z"), "not again at 01:30Z the same night");
  });
});

describe("cron catch-up: one fire for any number of missed slots", () => {
  const job = (nextRunAtMs: number | undefined, schedule: CronJob["schedule"], enabled = true) => ({ enabled, schedule, createdAtMs: T("2026-01-01T00:00:00Z"), state: nextRunAtMs === undefined ? {} : { nextRunAtMs } });

  it("every 10m, down for 3 hours: the missed slot fires once and the next is after now", () => {
    const s = { kind: "every" as const, everyMs: 10 * MIN };
    const slot = T("2026-01-01T01:00:00Z");
    const now = T("2026-01-01T04:03:00Z");
    const plan = planDue(job(slot, s), now)!;
    assert.deepEqual(plan, { scheduledAtMs: slot, nextRunAtMs: T("2026-01-01T04:10:00Z") });
    // the next look at the same moment finds nothing due: 18 missed slots became one fire
    assert.equal(planDue(job(plan.nextRunAtMs, s), now), null);
    assert.equal(fireIdFor("cron_1", plan.scheduledAtMs), `cron_1:${slot}`);
  });

  it("cron daily, down for a week: one fire; at: fires once then has no next run", () => {
    const s = { kind: "cron" as const, expr: "0 9 * * *", tz: "UTC" };
    const plan = planDue(job(T("2026-02-01T09:00:00Z"), s), T("2026-02-08T10:00:00Z"))!;
    assert.equal(plan.scheduledAtMs, T("2026-02-01T09:00:00Z"));
    assert.equal(plan.nextRunAtMs, T("2026-02-09T09:00:00Z"));
    const at = { kind: "at" as const, atMs: T("2026-02-01T09:00:00Z") };
    assert.deepEqual(planDue(job(at.atMs, at), T("2026-02-03T00:00:00Z")), { scheduledAtMs: at.atMs, nextRunAtMs: undefined });
  });

  it("not due, disabled, or without a next run: no fire", () => {
    const s = { kind: "every" as const, everyMs: MIN };
    assert.equal(planDue(job(T("2026-01-01T00:05:00Z"), s), T("2026-01-01T00:04:59Z")), null);
    assert.equal(planDue(job(T("2026-01-01T00:05:00Z"), s, false), T("2026-01-01T01:00:00Z")), null);
    assert.equal(planDue(job(undefined, s), T("2026-01-01T01:00:00Z")), null);
  });
});

describe("cron validation", () => {
  const ctx = { nowMs: T("2026-06-01T12:00:00Z"), agentIds: ["main", "work"], checkAtInPast: true };
  const cases: Array<[string, CronJobSpec, RegExp | null]> = [
    ["systemEvent in main", spec(), null],
    ["agentTurn in isolated", spec({ sessionTarget: "isolated", payload: agentTurn() }), null],
    ["agentTurn in main", spec({ payload: agentTurn() }), /sessionTarget "main" takes a systemEvent payload only/],
    ["systemEvent in isolated", spec({ sessionTarget: "isolated" }), /sessionTarget "isolated" takes an agentTurn payload only/],
    ["unknown agent", spec({ agentId: "nobody" }), /no agent "nobody" is configured \(agents: main, work\)/],
    ["bad cron expression", spec({ schedule: { kind: "cron", expr: "0 9 * *", tz: "UTC" } }), /cron expression "0 9 \* \*" is invalid/],
    ["cron out of range", spec({ schedule: { kind: "cron", expr: "61 9 * * *", tz: "UTC" } }), /is invalid/],
    ["unknown time zone", spec({ schedule: { kind: "cron", expr: "0 9 * * *", tz: "Mars/Olympus" } }), /unknown time zone "Mars\/Olympus"/],
    ["cron with tz", spec({ schedule: { kind: "cron", expr: "0 9 * * 1-5", tz: "Europe/Berlin" } }), null],
    ["at in the past", spec({ schedule: { kind: "at", atMs: T("2026-05-01T00:00:00Z") } }), /is in the past; choose a future time/],
    ["at a moment ago", spec({ schedule: { kind: "at", atMs: T("2026-06-01T11:59:30Z") } }), null],
    ["to without channel", spec({ sessionTarget: "isolated", payload: agentTurn({ to: "42" }) }), /payload.to \("42"\) needs payload.channel/],
    ["channel without to", spec({ sessionTarget: "isolated", payload: agentTurn({ channel: "telegram" }) }), /payload.channel "telegram" needs payload.to/],
    ["target but no delivery", spec({ sessionTarget: "isolated", payload: agentTurn({ deliver: false, channel: "telegram", to: "1" }) }), /deliver is false but a delivery target is set/],
    ["channel and to", spec({ sessionTarget: "isolated", payload: agentTurn({ channel: "telegram", to: "123" }) }), null],
  ];
  for (const [name, job, expected] of cases) {
    it(`${name}: ${expected ? "VALIDATION_FAILED" : "ok"}`, () => {
      if (!expected) return validateJob(job, ctx);
      assert.throws(() => validateJob(job, ctx), (err: unknown) => LurkError.is(err) && err.code === "VALIDATION_FAILED" && expected.test(err.message));
    });
  }

  it("the contract refuses a payload that does not match the session target", () => {
    const base = { type: "lurk.cron.add.v1", id: "x", ts: 1, name: "n", schedule: { kind: "every", everyMs: 60_000 } };
    assert.equal(cronAddRequest.safeParse({ ...base, sessionTarget: "main", payload: { kind: "agentTurn", message: "m" } }).success, false);
    assert.equal(cronAddRequest.safeParse({ ...base, sessionTarget: "isolated", payload: { kind: "agentTurn", message: "m" } }).success, true);
    assert.equal(cronAddRequest.safeParse({ ...base, schedule: { kind: "every", everyMs: 10 }, sessionTarget: "main", payload: { kind: "systemEvent", text: "t" } }).success, false, "every below 1 s");
  });

  it("an edit patch carries only the fields it names (no defaults filled in)", () => {
    const parsed = cronEditRequest.parse({ type: "lurk.cron.edit.v1", id: "x", ts: 1, jobId: "cron_1", patch: { enabled: false } });
    assert.deepEqual(parsed.patch, { enabled: false });
  });
});

describe("cron jobs: create and patch", () => {
  const now = T("2026-06-01T12:00:00Z");
  it("a new job gets its first run; a disabled one none", () => {
    const job = createJob(spec(), "cron_a", now, ["main"]);
    assert.equal(job.state.nextRunAtMs, now + 10 * MIN);
    assert.equal(createJob(spec({ enabled: false }), "cron_b", now, ["main"]).state.nextRunAtMs, undefined);
  });

  it("disable drops the next run, enable plans it from now, a new schedule replans, a spent at stays done", () => {
    const job = createJob(spec(), "cron_a", now, ["main"]);
    const off = applyPatch(job, { enabled: false }, now + MIN, ["main"]);
    assert.equal(off.state.nextRunAtMs, undefined);
    const on = applyPatch(off, { enabled: true }, now + 25 * MIN, ["main"]);
    assert.equal(on.state.nextRunAtMs, now + 30 * MIN, "the grid from the creation time");
    const cron = applyPatch(on, { schedule: { kind: "cron", expr: "0 13 * * *", tz: "UTC" } }, now, ["main"]);
    assert.equal(cron.state.nextRunAtMs, T("2026-06-01T13:00:00Z"));
    assert.throws(() => applyPatch(on, { payload: agentTurn() }, now, ["main"]), /takes a systemEvent payload only/);
    const at = createJob(spec({ schedule: { kind: "at", atMs: now + MIN } }), "cron_c", now, ["main"]);
    const spent = { ...at, enabled: false, state: { lastRunAtMs: now + MIN } };
    assert.equal(applyPatch(spent, { enabled: true }, now + 2 * MIN, ["main"]).state.nextRunAtMs, undefined);
  });
});

describe("cron fire messages", () => {
  const now = T("2026-06-01T12:00:00Z");
  it("systemEvent: an inject for the main session whose id is the fire id", () => {
    const job = createJob(spec({ wakeMode: "now" }), "cron_s", now, ["main"]);
    const inject = buildInject(job, "cron_s:1", now);
    assert.equal(inject.id, "cron_s:1");
    assert.equal(inject.sessionKey, "agent:main:main");
    assert.equal(inject.wake, "now");
    assert.equal(inject.source, "cron");
    assert.ok(runIdOfFire(job, "cron_s:1"));
    assert.equal(runIdOfFire({ ...job, wakeMode: "next-heartbeat" }, "cron_s:1"), undefined);
  });

  it("agentTurn: a run request in the job's cron session with model, thinking, timeout and origin", () => {
    const job = createJob(spec({ sessionTarget: "isolated", payload: agentTurn({ model: "openai/x", thinking: "high", timeoutSeconds: 60, channel: "telegram", to: "77" }) }), "cron_t", now, ["main"]);
    const req = buildRunRequest(job, "cron_t:5", now, { channel: "telegram", conversation: "77", messageIds: [] });
    assert.equal(req.sessionKey, "agent:main:cron:cron_t");
    assert.equal(req.sessionType, "cron");
    assert.equal(req.trigger, "cron");
    assert.equal(req.runId, runIdOfFire(job, "cron_t:5"));
    assert.deepEqual(req.options, { model: "openai/x", thinking: "high", timeoutMs: 60_000 });
    assert.equal(req.deliver, true);
    assert.equal(req.origin?.conversation, "77");
    assert.equal(buildRunRequest(job, "cron_t:5", now, undefined).deliver, false);
  });

  it("isolation: the reply's first paragraph (summary) or all of it (full), cut at the limit, for the main session", () => {
    const reply = "First paragraph\nstill first.\n\nSecond paragraph.";
    const iso = (over: Record<string, unknown> = {}) => createJob(spec({
      sessionTarget: "isolated", payload: agentTurn(),
      isolation: { postToMainPrefix: "Cron", postToMainMode: "summary", postToMainMaxChars: 8000, ...over } as CronJobSpec["isolation"],
    }), "cron_i", now, ["main"]);
    const summary = buildPostToMain(iso(), "cron_i:9", reply, now)!;
    assert.equal(summary.text, "Cron: j: First paragraph\nstill first.");
    assert.deepEqual([summary.sessionKey, summary.wake, summary.deliverTo, summary.id], ["agent:main:main", "next-heartbeat", "none", "post:cron_i:9"]);
    assert.equal(buildPostToMain(iso({ postToMainMode: "full", postToMainPrefix: "Daily" }), "f", reply, now)!.text, `Daily: j: ${reply}`);
    assert.equal(buildPostToMain(iso({ postToMainMode: "full", postToMainMaxChars: 100 }), "f", "x".repeat(300), now)!.text, `Cron: j: ${"x".repeat(99)}…`);
    assert.equal(buildPostToMain(iso(), "f", "   ", now), undefined, "an empty reply posts nothing");
    const plain = createJob(spec({ sessionTarget: "isolated", payload: agentTurn() }), "cron_p", now, ["main"]);
    assert.equal(buildPostToMain(plain, "f", reply, now), undefined, "no isolation, no post");
    assert.throws(() => validateJob({ ...spec(), isolation: { postToMainPrefix: "C", postToMainMode: "full", postToMainMaxChars: 500 } }, { nowMs: now, agentIds: ["main"], checkAtInPast: false }), /is for sessionTarget "isolated"/);
  });
});

describe("cron due heap and durations", () => {
  it("pops due jobs earliest first; a moved job surfaces at its new time only", () => {
    const heap = new DueHeap();
    heap.rebuild([["a", 30], ["b", 10], ["c", 20], ["d", undefined]]);
    heap.set("b", 50);
    assert.equal(heap.peek(), 20);
    assert.deepEqual(heap.popDue(35), ["c", "a"]);
    heap.set("e", 40);
    heap.set("b", undefined);
    assert.deepEqual(heap.popDue(100), ["e"]);
    assert.equal(heap.size, 0);
    for (let i = 0; i < 5000; i++) heap.set(`j${i % 100}`, 1000 - i);
    assert.equal(heap.size, 100);
    const order = heap.popDue(Infinity);
    assert.equal(order.length, 100);
    assert.equal(order[0], "j99", "the last set time of j99 (1000-4999) is the smallest");
  });

  it("parses friendly durations", () => {
    assert.equal(parseDuration("10m"), 600_000);
    assert.equal(parseDuration("1h30m"), 5_400_000);
    assert.equal(parseDuration("90s"), 90_000);
    assert.equal(parseDuration("2d"), 172_800_000);
    assert.equal(parseDuration("ten"), undefined);
    assert.equal(parseDuration("10"), undefined);
  });
});

describe("lurkbot cron --at with --tz", () => {
  const t = (iso: string) => Date.parse(iso);
  it("reads a wall time in the zone, across DST; a skipped time moves forward by the jump, a repeated one is the first", () => {
    assert.equal(parseTime("2026-07-01T12:00", "Europe/Berlin", 0), t("2026-07-01T10:00:00Z")); // CEST, +2
    assert.equal(parseTime("2026-01-15 09:30", "Europe/Berlin", 0), t("2026-01-15T08:30:00Z")); // CET, +1
    // 2026-03-29 02:30 does not exist in Berlin (02:00 -> 03:00): 03:30 CEST
    assert.equal(parseTime("2026-03-29T02:30", "Europe/Berlin", 0), t("2026-03-29T01:30:00Z"));
    // 2026-10-25 02:30 happens twice: the first time (still CEST)
    assert.equal(parseTime("2026-10-25T02:30", "Europe/Berlin", 0), t("2026-10-25T00:30:00Z"));
    assert.equal(parseTime("2026-12-01T09:00:00Z", "Europe/Berlin", 0), t("2026-12-01T09:00:00Z"), "an explicit offset wins");
    assert.equal(parseTime("+10m", "Europe/Berlin", 1_000), 1_000 + 600_000);
  });
  it("refuses an unknown zone with a message that says what to use", () => {
    assert.throws(() => parseTime("2026-07-01T12:00", "Mars/Olympus", 0), /unknown time zone "Mars\/Olympus": use an IANA name/);
  });
});
