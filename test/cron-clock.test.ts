/**
 * The cron actor in-process with a clock the test moves (`cronActor({ clock })`, ManualClock):
 * a slot fires when the clock reaches it; after the actor was down for several slots the missed
 * job fires ONCE (its first missed slot) and the next fire is planned from now. Real nats-server,
 * real LMDB; no sleeping for the schedule.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { actorEventSchema, safeParseJson, STREAMS, subjects } from "../shared/contract/index.js";
import type { ActorRuntime } from "../shared/runtime/actor.js";
import { BusClient } from "../shared/runtime/client.js";
import { cronActor } from "../services/cron/actor.js";
import { startInProcess, waitFor } from "./harness/actors.js";
import { ManualClock } from "./harness/clock.js";
import { TestNats } from "./harness/nats.js";

const s = subjects();
const MINUTE = 60_000;

describe("cron with a controllable clock", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let bus: BusClient;
  let cron: ActorRuntime | undefined;
  const clock = new ManualClock(Date.now());
  const fired: Array<{ fireId: string; scheduledAtMs: number; at: number }> = [];

  const startCron = async () => {
    const config = nats.config({ cron: { leaseTtlMs: 2_000, leaseRenewMs: 400 } });
    cron = await startInProcess(cronActor({ clock }), nats, config);
    await waitFor(async () => (await bus.call("cron", "status", {})).active, 10_000, "the cron actor to take the lease");
  };
  /** moves the clock by `ms` and keeps nudging due timers (the scheduler re-arms after each batch) until `n` fires were seen */
  const advanceUntil = async (ms: number, n: number) => {
    clock.advance(ms);
    return waitFor(() => {
      clock.advance(0);
      return fired.length >= n ? fired.slice() : undefined;
    }, 10_000, `${n} fires`);
  };

  before(async () => {
    nats = await TestNats.start();
    nc = await nats.connect("cli");
    bus = new BusClient(nc);
    nc.subscribe(s.eventsOf("cron"), {
      callback: (_e, m) => {
        const ev = actorEventSchema.parse(safeParseJson(m.data));
        if (ev.event !== "fired") return;
        const fireId = String((ev.data as { fireId: string }).fireId);
        fired.push({ fireId, scheduledAtMs: Number(fireId.split(":")[1]), at: clock.now() });
      },
    });
    await nc.flush();
    await startCron();
  });

  after(async () => {
    await cron?.stop();
    await nc?.close();
    await nats?.stop();
  });

  it("fires at the slot, and after downtime fires the missed job once and plans from now", async () => {
    const t0 = clock.now();
    const { job } = await bus.call("cron", "add", { name: "tick", schedule: { kind: "every", everyMs: MINUTE }, sessionTarget: "main", payload: { kind: "systemEvent", text: "tick" } });
    assert.equal(job.state.nextRunAtMs, t0 + MINUTE);
    clock.advance(MINUTE - 1);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(fired.length, 0, "nothing before the slot");
    const [first] = await advanceUntil(1, 1);
    assert.equal(first!.scheduledAtMs, t0 + MINUTE);

    await cron!.stop();
    cron = undefined;
    clock.advance(5 * MINUTE); // slots t0+2m .. t0+6m pass while the actor is down
    await startCron();
    const after = await advanceUntil(0, 2);
    assert.equal(after.length, 2, "one catch-up fire for five missed slots");
    assert.equal(after[1]!.scheduledAtMs, t0 + 2 * MINUTE, "the catch-up is the first missed slot");
    const { job: planned } = await bus.call("cron", "get", { jobId: job.id });
    assert.equal(planned.state.nextRunAtMs, t0 + 7 * MINUTE, "the next slot after now, on the original grid");
    await new Promise((r) => setTimeout(r, 300));
    clock.advance(0);
    assert.equal(fired.length, 2, "no second catch-up fire");

    const [, , third] = await advanceUntil(MINUTE, 3);
    assert.equal(third!.scheduledAtMs, t0 + 7 * MINUTE);
    const admin = await nats.connect("admin");
    const info = await (await jetstreamManager(admin)).streams.info(STREAMS.inbound, { subjects_filter: s.inject("main") });
    await admin.close();
    assert.equal(info.state.messages, 3, "three injects in INBOUND");
    const { runs } = await bus.call("cron", "runs", { jobId: job.id, limit: 10 });
    assert.deepEqual(runs.map((r) => r.scheduledAtMs).sort(), [t0 + MINUTE, t0 + 2 * MINUTE, t0 + 7 * MINUTE]);
  });
});
