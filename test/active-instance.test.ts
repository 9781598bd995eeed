/**
 * ActiveInstance's role changes (shared/runtime/active-instance.ts), driven by hand: a takeover
 * during which the lease is lost again ends in `abandoned`, never in `activated`, so an actor can
 * undo what its takeover started (the router's run-request subscription); a takeover that keeps
 * the lease ends in `activated`. The lease keeper is a stand-in whose `isActive` the test sets.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ActiveInstance, type ActiveInstanceOptions } from "../shared/runtime/active-instance.js";
import { createLogger } from "../shared/runtime/logger.js";

interface Driven {
  onRoleChange(active: boolean, holder: string, opts: ActiveInstanceOptions): void;
  takingOver: Promise<void>;
  isActive(): boolean;
}

function instance(keeper: { isActive: boolean }): Driven {
  const rt = { log: createLogger("test", "silent"), emit: () => undefined, limits: {} };
  const Ctor = ActiveInstance as unknown as new (rt: unknown, actor: string, keeper: unknown, holder: string) => Driven;
  return new Ctor(rt, "router", keeper, "host-a");
}

describe("active instance: takeovers", () => {
  it("a takeover that keeps the lease is activated; one that lost it meanwhile is abandoned", async () => {
    const keeper = { isActive: false };
    const inst = instance(keeper);
    const calls: string[] = [];
    let release!: () => void;
    const opts: ActiveInstanceOptions = {
      ttlMs: 1000, renewMs: 100,
      takeOver: async () => {
        calls.push("takeOver");
        await new Promise<void>((r) => (release = r));
      },
      activated: () => void calls.push("activated"),
      abandoned: () => void calls.push("abandoned"),
      standBy: () => void calls.push("standBy"),
    };
    const role = (active: boolean) => {
      keeper.isActive = active;
      inst.onRoleChange(active, "host-a", opts);
    };
    role(true);
    await new Promise((r) => setImmediate(r));
    release();
    await inst.takingOver;
    assert.deepEqual(calls, ["takeOver", "activated"]);
    assert.equal(inst.isActive(), true);

    role(false);
    role(true);
    await new Promise((r) => setImmediate(r));
    role(false); // lost again while the takeover runs
    release();
    await inst.takingOver;
    assert.deepEqual(calls, ["takeOver", "activated", "standBy", "takeOver", "standBy", "abandoned"]);
    assert.equal(inst.isActive(), false);
  });
});
