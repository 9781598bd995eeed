/**
 * A second tool actor joins a running system: the whole system (real nats-server, every actor
 * a process, the fake OpenAI server) runs a turn, then an extra tool actor (the fixture
 * test/fixtures/ext-tools, NATS user "tools-ext") starts and announces itself on
 * `lurk.tools.catalog`; the agent-runner refreshes its cached catalog in the background, so
 * runs soon after (well within the 60 s refresh interval) see its tool next to the built-in
 * ones, the model (scripted) calls it, and its answer reaches the model and the user. When it
 * stops, a call comes back to the model as an error result and the run still ends.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { REFRESH_MS } from "../services/agent-runner/tools-client.js";
import { startModuleActor, waitFor, type ActorProcess } from "./harness/actors.js";
import { CliClient, TestSystem } from "./harness/system.js";

const toolNames = (system: TestSystem, index: number) => (system.fake.requests[index]?.body.tools ?? []).map((t) => t.function.name);

describe("an extra tool actor joining at run time", () => {
  let system: TestSystem;
  let cli: CliClient;
  let ext: ActorProcess | undefined;

  before(async () => {
    system = await TestSystem.start();
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
});
