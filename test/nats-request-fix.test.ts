/**
 * shared/runtime/nats-request-fix.ts: a request that got its reply no longer builds an error
 * (with a stack) to cancel itself; requests, timeouts and "no responders" behave as before.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { errors } from "@nats-io/nats-core";
import { RequestOne } from "@nats-io/nats-core/internal";
import type { NatsConnection } from "@nats-io/transport-node";
import { LurkError } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { installRequestCancelFix } from "../shared/runtime/nats-request-fix.js";
import { TestNats } from "./harness/nats.js";

describe("request cancel without a stack capture", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  const cancelledWith: (Error | undefined)[] = [];

  before(async () => {
    // observe what the library's own cancel receives once the fix wraps it
    const original = RequestOne.prototype.cancel;
    RequestOne.prototype.cancel = function observed(this: RequestOne, err?: Error) {
      cancelledWith.push(err);
      original.call(this, err);
    };
    installRequestCancelFix();
    installRequestCancelFix(); // idempotent
    nats = await TestNats.start();
    nc = await nats.connect("admin");
    nc.subscribe("fix.echo", { callback: (_e, m) => void m.respond(m.data) });
    await nc.flush();
  });
  after(async () => {
    await nc?.close();
    await nats?.stop();
  });

  it("answered requests cancel with one prebuilt error, and still get their replies", async () => {
    for (let i = 0; i < 3; i++) {
      const reply = await nc.request("fix.echo", `ping ${i}`, { timeout: 2_000 });
      assert.equal(reply.string(), `ping ${i}`);
    }
    const errs = cancelledWith.filter((e) => e !== undefined);
    assert.ok(errs.length >= 3, `cancel ran for each answered request (${errs.length})`);
    assert.ok(errs.every((e) => e === errs[0]), "the same error object every time: nothing built per request");
    assert.ok(errs[0] instanceof errors.RequestError && errs[0].message === "cancelled");
  });

  it("timeouts and missing responders are reported as before", async () => {
    nc.subscribe("fix.silent", { callback: () => undefined });
    await nc.flush();
    const bus = new BusClient(nc);
    await assert.rejects(bus.callSubject("fix.silent", "x.v1", {}, { parse: (v: unknown) => v }, { timeoutMs: 200 }), (e: unknown) => LurkError.is(e) && e.code === "TIMEOUT");
    await assert.rejects(bus.callSubject("fix.nobody", "x.v1", {}, { parse: (v: unknown) => v }, { timeoutMs: 2_000 }), (e: unknown) => LurkError.is(e) && e.code === "UNAVAILABLE");
  });
});
