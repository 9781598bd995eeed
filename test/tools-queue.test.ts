/**
 * Two tools actors (two processes on one real nats-server, one workspace) share the calls
 * through the queue group "tools": 24 concurrent exec calls each append their own number to a
 * file; every number is there exactly once (no call ran twice, none was lost), and the
 * services framework's $SRV.STATS shows that both instances answered some of them.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Svcm } from "@nats-io/services";
import type { NatsConnection } from "@nats-io/transport-node";
import { toolCallReply } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { startActorProcess, type ActorProcess } from "./harness/actors.js";
import { TestNats } from "./harness/nats.js";
import { textOf } from "./harness/tools-actor.js";

const CALLS = 24;

describe("two tools actors in the queue group", () => {
  let nats: TestNats;
  const instances: ActorProcess[] = [];
  let runner: NatsConnection;
  let admin: NatsConnection;
  let ws: string;

  before(async () => {
    ws = realpathSync(mkdtempSync(join(tmpdir(), "lurk-queue-ws-")));
    nats = await TestNats.start({ streams: false });
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({ tools: { exec: existsSync("/usr/bin/bwrap") ? {} : { allowUnsandboxed: true } } }));
    instances.push(await startActorProcess("tools", nats, { LURKBOT_WORKSPACE: ws }));
    instances.push(await startActorProcess("tools", nats, { LURKBOT_WORKSPACE: ws }));
    runner = await nats.connect("agent-runner");
    admin = await nats.connect("admin");
  });
  after(async () => {
    await runner?.close();
    await admin?.close();
    for (const p of instances) await p.stop();
    await nats?.stop();
    rmSync(ws, { recursive: true, force: true });
  });

  it("runs each call exactly once, and both instances serve calls", async () => {
    const bus = new BusClient(runner);
    const replies = await Promise.all(Array.from({ length: CALLS }, (_, i) => bus.callSubject("lurk.tools.call.exec", "lurk.tools.call.v1", {
      toolCallId: `q-${i}`, runId: "run-queue", sessionKey: "agent:main:main", agentId: "main", tool: "exec", args: { command: `echo ${i} >> calls.log` },
    }, toolCallReply, { timeoutMs: 60_000 })));
    for (const reply of replies) assert.equal(reply.isError, false, textOf(reply));
    const lines = readFileSync(join(ws, "calls.log"), "utf8").split("\n").filter(Boolean).map(Number).sort((a, b) => a - b);
    assert.deepEqual(lines, Array.from({ length: CALLS }, (_, i) => i), "every call ran exactly once");

    const served: number[] = [];
    for await (const stats of await new Svcm(admin).client().stats("tools")) {
      served.push(stats.endpoints?.find((e) => e.name === "call-exec")?.num_requests ?? 0);
    }
    assert.equal(served.length, 2, "two tools instances answer $SRV.STATS");
    assert.equal(served.reduce((a, b) => a + b, 0), CALLS, `calls per instance: ${served.join(", ")}`);
    assert.ok(served.every((n) => n > 0), `both instances served calls: ${served.join(", ")}`);
  });
});
