/**
 * A wake-now system inject into a session whose run is going reaches that run. End to end
 * (nats-server, sessions, router and agent-runner processes, a fake OpenAI server, a tools
 * stand-in whose tool takes a while): a child run (stored in RUNS as the subagents actor does)
 * is in a slow tool call when a `sessions_send`-style inject for the child's session arrives; the
 * router hands it to the run as a follow-up, so the run's next model call after its answer shows
 * it, the run answers it, and no run of its own is started for it.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { buildSessionKey, envelope, runIdFor, subjects, type ToolDefinition } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { FakeOpenAIServer, messageText } from "./fakes/openai-server.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { collectActorEvents, type SeenActorEvent } from "./harness/events.js";
import { TestNats } from "./harness/nats.js";
import { startToolResponder, textResult } from "./harness/tool-responder.js";

const s = subjects();

const LOOK: ToolDefinition = {
  name: "look", description: "Look something up (takes a moment).", parameters: { type: "object", properties: { what: { type: "string" } } },
  actor: "tools", sideEffects: true, parallelSafe: false, groups: [], needsApproval: false,
};

describe("a wake-now inject into a running session is handed to its run", () => {
  let nats: TestNats;
  let fake: FakeOpenAIServer;
  const actors: ActorProcess[] = [];
  let tools: NatsConnection;
  let admin: NatsConnection;
  let routerEvents: SeenActorEvent[];
  let whileLooking: () => Promise<void> = async () => undefined;
  const ws = mkdtempSync(join(tmpdir(), "lurk-inject-followup-ws-"));

  before(async () => {
    nats = await TestNats.start();
    fake = await FakeOpenAIServer.start();
    tools = await startToolResponder(nats, [{
      definition: LOOK,
      run: async (req) => {
        await whileLooking();
        return textResult(req, "looked: nothing unusual", 300);
      },
    }]);
    admin = await nats.connect("admin");
    routerEvents = await collectActorEvents(admin, "router");
    actors.push(await startActorProcess("sessions", nats), await startActorProcess("router", nats), await startActorProcess("agent-runner", nats, {
      LURKBOT_MODEL: "openai/test-model", OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-test-followup-0123456789", LURKBOT_WORKSPACE: ws,
    }));
  });
  after(async () => {
    await Promise.all([admin?.close(), tools?.close()]);
    for (const a of actors.reverse()) await a.stop();
    await fake?.close();
    await nats?.stop();
    rmSync(ws, { recursive: true, force: true });
  });

  it("a sessions_send into a child during its slow tool call reaches that run's next model call; no second run", { timeout: 60_000 }, async () => {
    const bus = new BusClient(admin);
    const sessionKey = buildSessionKey({ type: "subagent", agentId: "main", childId: "f011ow01" });
    const runId = "sub-f011ow01";
    const send = envelope("lurk.inject.v1", {
      agentId: "main", sessionKey, source: "system" as const, text: "Message from session agent:main:main:\nalso check the error log", wake: "now" as const, deliverTo: "last" as const,
    });
    whileLooking = async () => {
      // the parent's sessions_send arrives while the tool runs; the tool answers once the router handed it over
      await jetstream(admin).publish(s.inject("main"), JSON.stringify(send), { msgID: send.id });
      await waitFor(() => routerEvents.find((e) => e.event === "handed" && e.data.runId === runId && e.data.action === "followup"), 20_000, "the inject handed to the run");
    };
    fake.enqueue(
      { kind: "tool_calls", calls: [{ id: "look_1", name: "look", arguments: { what: "the logs" } }] },
      { kind: "text", text: "nothing unusual [a1]" },
      { kind: "text", text: "the error log is clean too [a2]" },
    );
    const request = envelope("lurk.run.request.v1", {
      runId, sessionKey, agentId: "main", sessionType: "subagent" as const, trigger: "subagent" as const,
      inputs: [{ kind: "user" as const, text: "look into the logs [task]", attachments: [] }], deliver: false, options: {},
      subagent: { parentSessionKey: "agent:main:main", task: "look into the logs", depth: 1 },
    });
    await jetstream(admin).publish(s.runRequest("main"), JSON.stringify(request), { msgID: runId });

    await waitFor(async () => (await bus.call("sessions", "run", { sessionKey, runId, statusOnly: true })).status === "done" || undefined, 30_000, "the child's run ends");
    const bodies = fake.requests.map((r) => r.body).filter((b) => b.messages.some((m) => messageText(m).includes("[task]")));
    assert.equal(bodies.length, 3, "the run made three model calls: the tool call, its answer, the follow-up");
    const last = bodies[2]!;
    const seen = last.messages.map((m) => messageText(m));
    assert.ok(seen.some((t) => t.includes("[system event] Message from session agent:main:main:") && t.includes("also check the error log")), "the run's next call shows the message");
    assert.ok(seen.findIndex((t) => t.includes("[a1]")) < seen.findIndex((t) => t.includes("also check the error log")), "after the run's answer");
    assert.equal(bodies.slice(0, 2).some((b) => b.messages.some((m) => messageText(m).includes("also check the error log"))), false, "not before the tool call ended");

    const { records } = await bus.call("sessions", "run", { sessionKey, runId });
    assert.match(records.findLast((r) => r.kind === "run_marker")?.text ?? "", /\[a1\][\s\S]*the error log is clean too \[a2\]$/, "the run's reply answers it too");
    assert.equal((await bus.call("sessions", "run", { sessionKey, runId: runIdFor("inject", send.id), statusOnly: true })).status, "unknown", "no run of its own");
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(fake.requests.length, 3, "no further model call");
    await waitFor(async () => (await bus.call("router", "lanes", { sessionKey })).lanes.length === 0 || undefined, 10_000, "the lane is free");
  });
});
