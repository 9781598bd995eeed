/**
 * Two subagents instances, in process, each with its own data directory (two hosts), against the
 * real system (sessions, router, agent-runner as processes, fake LLM): one holds the lease and
 * spawns, follows and announces children; the other relays the requests it takes to it. When
 * the active instance stops while a child runs, the standby takes over with the replicated
 * records, sees the child end and announces it exactly once.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { subjects } from "../shared/contract/index.js";
import type { ActorRuntime } from "../shared/runtime/actor.js";
import { BusClient } from "../shared/runtime/client.js";
import { loadConfig, type LurkConfig } from "../shared/runtime/config.js";
import { definition as subagentsActor } from "../services/subagents/actor.js";
import { messageText, type FakeReply } from "./fakes/openai-server.js";
import { startInProcess, waitFor } from "./harness/actors.js";
import { ANNOUNCE, childTask, Gates, isChild, lastText } from "./harness/subagents-llm.js";
import { TestSystem } from "./harness/system.js";

const S = subjects();
const PARENT = "agent:main:main";

describe("subagents: one active instance, a standby that relays and takes over", () => {
  let system: TestSystem;
  let config: LurkConfig;
  let first: ActorRuntime | undefined;
  let second: ActorRuntime | undefined;
  let admin: NatsConnection;
  let bus: BusClient;
  /** counts relayed requests; a subscriber there, so it goes before the takeover test */
  let relayWatch: Subscription | undefined;
  const gates = new Gates();
  const relayed: string[] = [];
  const roles: string[] = [];
  /** the findings each announce run was given, in order */
  const announced: string[] = [];
  /** gates a child's LLM call waits at */
  const held = new Set<string>();

  const startInstance = (dir: string) => startInProcess(subagentsActor, system.nats, { ...config, dataDir: join(system.nats.home, dir) });
  const spawn = (task: string) => bus.call("subagents", "spawn", { requesterSessionKey: PARENT, task });
  const list = async () => (await bus.call("subagents", "list", { requesterSessionKey: PARENT })).children;

  before(async () => {
    system = await TestSystem.start({ config: { subagents: { leaseTtlMs: 2_000, leaseRenewMs: 500 } } });
    config = loadConfig(system.nats.env(system.env));
    system.fake.responder = async (body): Promise<FakeReply | undefined> => {
      if (isChild(body)) {
        const hold = /\[hold:(\w+)\]/.exec(childTask(body));
        if (hold) {
          held.add(hold[1]!);
          await gates.get(hold[1]!).promise;
        }
        return { kind: "text", text: `child result for: ${childTask(body)}` };
      }
      const text = lastText(body);
      if (text.includes(ANNOUNCE)) {
        // announces that came while the parent's run went on are handed to it: one turn may show several
        const since = body.messages.slice(body.messages.findLastIndex((m) => m.role === "assistant") + 1);
        for (const m of since) {
          const found = /child result for: (.*)/.exec(messageText(m))?.[1];
          if (messageText(m).includes(ANNOUNCE)) announced.push(found ?? "?");
        }
        return { kind: "text", text: "noted" };
      }
      return undefined;
    };
    admin = await system.nats.connect("admin");
    admin.subscribe(S.eventsOf("subagents"), { callback: (_e, msg) => { if (/\.(active|standby)$/.test(msg.subject)) roles.push(msg.subject.split(".").pop()!); } });
    relayWatch = admin.subscribe(S.activeOpAll("subagents"), { callback: (_e, msg) => void relayed.push(msg.subject) });
    await admin.flush();
    bus = new BusClient(admin);
    first = await startInstance("host-a");
    second = await startInstance("host-b");
  });

  after(async () => {
    gates.releaseAll();
    await first?.stop();
    await second?.stop();
    await admin?.close();
    await system?.stop();
  });

  it("only the first instance spawns and announces; requests to either are answered by it", async () => {
    assert.deepEqual(roles, ["active"], "the second instance found the lease held");
    const runIds: string[] = [];
    for (const task of ["count the apples", "count the pears", "count the plums"]) runIds.push((await spawn(task)).runId);
    await waitFor(async () => (await list()).filter((c) => c.status === "done").length === 3, 20_000, "three announced children");
    const lists = await Promise.all(Array.from({ length: 10 }, () => list()));
    assert.ok(lists.every((l) => l.length === 3 && runIds.every((id) => l.some((c) => c.runId === id))), "every answer is the active instance's registry");
    assert.ok(relayed.length > 0, "some requests went through the standby's relay");
    // the parent's model sees each announce (those handed to its running run a little later)
    await waitFor(() => announced.length >= 3 || undefined, 20_000, "three announces seen by the parent's model");
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual([...announced].sort(), ["count the apples", "count the pears", "count the plums"], "each child announced once");
  });

  it("the standby takes over with the replicated records and announces the child that ends after the switch, once", async () => {
    relayWatch?.unsubscribe(); // it would look like an active instance that never answers
    const { runId } = await spawn("[hold:switch] weigh the melons");
    await waitFor(() => held.has("switch"), 10_000, "the child's run to reach the model");
    await first!.stop(); // gives the lease up; the child's run goes on
    first = undefined;
    await waitFor(() => roles.filter((r) => r === "active").length === 2, 5_000, "the standby to take the lease");
    const running = (await list()).find((c) => c.runId === runId);
    assert.equal(running?.status, "running", "the new active instance has the record spawned by the other host");
    assert.equal((await list()).filter((c) => c.status === "done").length, 3, "and the finished ones");
    gates.release("switch");
    await waitFor(async () => (await list()).find((c) => c.runId === runId)?.status === "done", 20_000, "the child announced by the new active instance");
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(announced.filter((f) => f === "[hold:switch] weigh the melons").length, 1, JSON.stringify(announced));
  });

  it("the first host, started again, stands by and then takes over with the other host's changes, not its own old copy", async () => {
    first = await startInstance("host-a"); // its LMDB still has the melon child as running
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(roles.filter((r) => r === "active").length, 2, "it stands by while the second instance holds the lease");
    await second!.stop();
    second = undefined;
    await waitFor(() => roles.filter((r) => r === "active").length === 3, 5_000, "the first instance to take the lease");
    const children = await list();
    assert.equal(children.length, 4);
    assert.ok(children.every((c) => c.status === "done"), JSON.stringify(children.map((c) => [c.task, c.status])));
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(announced.filter((f) => f === "[hold:switch] weigh the melons").length, 1, "its stale copy did not announce the child again");
  });
});
