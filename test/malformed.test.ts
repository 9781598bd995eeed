/**
 * Malformed payloads against a real actor process over a real nats-server: every bad request
 * gets a typed error reply, the service's error count grows, and the next valid request is served.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Svcm } from "@nats-io/services";
import type { NatsConnection } from "@nats-io/transport-node";
import { errorReplySchema } from "../shared/contract/index.js";
import { BusClient, SERVICE_ERROR_HEADER } from "../shared/runtime/client.js";
import { startActorProcess, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";

describe("malformed payloads", () => {
  let nats: TestNats;
  let sessions: ActorProcess;
  let nc: NatsConnection;

  before(async () => {
    nats = await TestNats.start();
    sessions = await startActorProcess("sessions", nats);
    nc = await nats.connect("cli");
  });
  after(async () => {
    await nc?.close();
    await sessions?.stop();
    await nats?.stop();
  });

  const errorCount = async () => {
    const stats = await new Svcm(nc).client().stats("sessions");
    let total = 0;
    for await (const s of stats) total += s.endpoints?.reduce((n, e) => n + e.num_errors, 0) ?? 0;
    return total;
  };

  const cases: Array<[string, string | Uint8Array, string]> = [
    ["not JSON", "hello", "BAD_JSON"],
    ["empty", "", "BAD_JSON"],
    ["wrong type", JSON.stringify({ type: "lurk.sessions.get.v1", id: "1", ts: 1, sessionKey: 42 }), "VALIDATION_FAILED"],
    ["wrong message type", JSON.stringify({ type: "lurk.sessions.list.v1", id: "1", ts: 1, sessionKey: "agent:main:main" }), "VALIDATION_FAILED"],
    ["__proto__", '{"type":"lurk.sessions.get.v1","id":"1","ts":1,"sessionKey":"agent:main:main","__proto__":{"polluted":true}}', "UNSAFE_PAYLOAD"],
    ["constructor.prototype", '{"type":"lurk.sessions.get.v1","id":"1","ts":1,"sessionKey":"agent:main:main","constructor":{"prototype":{"x":1}}}', "UNSAFE_PAYLOAD"],
    ["deep nesting", `{"a":${"[".repeat(5000)}${"]".repeat(5000)}}`, "UNSAFE_PAYLOAD"],
    ["oversize", JSON.stringify({ type: "lurk.sessions.get.v1", id: "1", ts: 1, sessionKey: "agent:main:main", pad: "x".repeat(600 * 1024) }), "PAYLOAD_TOO_LARGE"],
  ];

  for (const [name, payload, code] of cases) {
    it(`${name}: typed error ${code}, counted, and the actor keeps serving`, async () => {
      const before = await errorCount();
      const reply = await nc.request("lurk.sessions.get", payload, { timeout: 5000 });
      assert.ok(reply.headers?.get(SERVICE_ERROR_HEADER), "error headers are set");
      const body = errorReplySchema.parse(reply.json());
      assert.equal(body.code, code);
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.equal(await errorCount(), before + 1);
      const ok = await new BusClient(nc).call("sessions", "get", { sessionKey: "agent:main:main" });
      assert.equal(ok.session, null);
    });
  }

  it("a request over the server's max_payload is refused by the client and the actor is unharmed", async () => {
    await assert.rejects(nc.request("lurk.sessions.get", new Uint8Array(2 * 1024 * 1024), { timeout: 2000 }));
    const ok = await new BusClient(nc).call("sessions", "list", {});
    assert.deepEqual(ok.sessions, []);
  });

  it("lists the actor on $SRV.PING with host and pid metadata", async () => {
    const infos = await new Svcm(nc).client().info("sessions");
    const all = [];
    for await (const i of infos) all.push(i);
    assert.equal(all.length, 1);
    assert.equal(all[0]!.metadata?.pid, String(sessions.child.pid));
    assert.ok(all[0]!.endpoints.some((e) => e.subject === "lurk.sessions.history"));
  });
});
