/**
 * A second tool actor joins a running system: the whole system (real nats-server, every actor
 * a process, the fake OpenAI server) runs a turn, then an extra tool actor (the fixture
 * test/fixtures/ext-tools, NATS user "tools-ext") starts and announces itself on
 * `lurk.tools.catalog`; the agent-runner refreshes its cached catalog in the background, so
 * runs soon after (well within the 60 s refresh interval) see its tool next to the built-in
 * ones, the model (scripted) calls it, and its answer reaches the model and the user. When it
 * stops, a call comes back to the model as an error result and the run still ends.
 * Cancellation (shared/runtime/tool-serve.ts): a long-running call of the extra actor's tool
 * (`slow: true`, held until cancelled) ends when the user sends /stop (the run's abort) and when
 * the caller publishes `lurk.tools.cancel` for it; the handler sees the abort (its signal) and
 * the caller gets ABORTED.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { REFRESH_MS } from "../services/agent-runner/tools-client.js";
import { startModuleActor, waitFor, type ActorProcess } from "./harness/actors.js";
import { CliClient, TestSystem } from "./harness/system.js";
import { textOf } from "./harness/tools-actor.js";
import { envelope, subjects, toolCallReply } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";

const toolNames = (system: TestSystem, index: number) => (system.fake.requests[index]?.body.tools ?? []).map((t) => t.function.name);

describe("an extra tool actor joining at run time", () => {
  let system: TestSystem;
  let cli: CliClient;
  let ext: ActorProcess | undefined;

  before(async () => {
    // no memory consolidation: its model call, after a session passes the memory window (the
    // ping loops below add dozens of messages), would take a reply scripted for a run
    system = await TestSystem.start({ config: { memory: { enabled: false } } });
    cli = await CliClient.connect(system.nats, "ext");
  });
  after(async () => {
    await cli?.close();
    await ext?.stop();
    await system?.stop();
  });

  it("its tool is in the catalog of later runs and the model uses it", async () => {
    const before = await cli.send("hello before");
    assert.equal(before.text, "echo: hello before");
    const first = toolNames(system, 0);
    assert.ok(first.includes("read"), first.join(","));
    assert.ok(!first.includes("weather_lookup"));

    ext = await startModuleActor("test/fixtures/ext-tools/main.js", "tools-ext", system.nats);
    // the announcement makes the runner gather again in the background: plain turns (the fake
    // echoes) until the model is offered the new tool, long before the refresh interval
    let pings = 0;
    await waitFor(async () => {
      system.fake.reset();
      const echo = await cli.send(`ping ${++pings}`);
      assert.equal(echo.text, `echo: ping ${pings}`);
      return toolNames(system, 0).includes("weather_lookup");
    }, Math.min(15_000, REFRESH_MS / 2), "the new tool in the catalog the model is offered");
    system.fake.reset();
    system.fake.enqueue({ kind: "tool_calls", calls: [{ name: "weather_lookup", arguments: { city: "Lisbon" } }] });
    const reply = await cli.send("what is the weather in Lisbon?", { timeoutMs: 30_000 });
    assert.match(reply.text, /^tool said: weather in Lisbon: sunny, 21 C \(from tools-ext pid \d+\)/);
    const names = toolNames(system, 0);
    assert.ok(names.includes("weather_lookup") && names.includes("read") && names.includes("exec"), names.join(","));
    const toolMessage = system.fake.requests[1]?.body.messages.find((m) => m.role === "tool");
    assert.ok(toolMessage, "the tool result went back to the model");
    assert.ok(reply.text.includes(`pid ${ext.child.pid}`), "the extra actor's process answered");
  });

  it("when it stops, a call to its tool is an error result and the run still ends", async () => {
    await ext!.stop();
    ext = undefined;
    system.fake.reset();
    system.fake.enqueue({ kind: "tool_calls", calls: [{ name: "weather_lookup", arguments: { city: "Oslo" } }] });
    const reply = await cli.send("and in Oslo?", { timeoutMs: 30_000 });
    assert.match(reply.text, /^tool said: Error/);
    assert.match(reply.text, /unavailable|not|no /i);
  });

  it("a long-running call is cancelled by the run's abort (/stop) and by lurk.tools.cancel; the handler sees it", async () => {
    const events = join(system.nats.dir, "ext-events.log");
    const eventLines = () => (existsSync(events) ? readFileSync(events, "utf8").split("\n").filter(Boolean) : []);
    const saw = (prefix: string) => waitFor(() => eventLines().find((l) => l.startsWith(prefix)), 15_000, `"${prefix}" in the fixture's events`);
    ext = await startModuleActor("test/fixtures/ext-tools/main.js", "tools-ext", system.nats, { EXT_TOOL_EVENTS_FILE: events });
    let pings = 0;
    await waitFor(async () => {
      system.fake.reset();
      await cli.send(`ping again ${++pings}`);
      return toolNames(system, 0).includes("weather_lookup");
    }, 15_000, "the restarted tool in the catalog");

    // the run's abort: /stop from the chat (the router publishes lurk.run.ctl.<runId> abort)
    system.fake.reset();
    system.fake.enqueue({ kind: "tool_calls", calls: [{ id: "ext-slow-1", name: "weather_lookup", arguments: { city: "Slowtown", slow: true } }] });
    await cli.publish("a slow weather lookup");
    await saw("started ext-slow-1");
    assert.equal(eventLines().length, 1, "still running before /stop");
    await cli.publish("/stop");
    const cancelled = await saw("cancelled ext-slow-1");
    assert.match(cancelled, /the run (was aborted|ended)/);

    // the caller gives up on one call: lurk.tools.cancel naming it
    const runnerNc = await system.nats.connect("agent-runner");
    try {
      const bus = new BusClient(runnerNc);
      const started = Date.now();
      const reply = bus.callSubject(subjects().toolCall("weather_lookup"), "lurk.tools.call.v1", {
        toolCallId: "ext-slow-2", runId: "run-ext-cancel", sessionKey: "agent:main:main", agentId: "main", tool: "weather_lookup", args: { city: "Slowtown", slow: true },
      }, toolCallReply, { timeoutMs: 30_000 });
      await saw("started ext-slow-2");
      runnerNc.publish(subjects().toolsCancel, JSON.stringify(envelope("lurk.tools.cancel.v1", { runId: "run-ext-cancel", toolCallId: "ext-slow-2", reason: "test gave up" })));
      const answer = await reply;
      assert.equal(answer.isError, true);
      assert.equal(answer.errorCode, "ABORTED", textOf(answer));
      assert.match(textOf(answer), /cancelled.*test gave up/);
      assert.ok(Date.now() - started < 30_000);
      assert.match(await saw("cancelled ext-slow-2"), /the caller cancelled it: test gave up/);
    } finally {
      await runnerNc.close();
    }
  });
});
