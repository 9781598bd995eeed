/**
 * The first real conversation: every actor a separate process on a real nats-server, the LLM a
 * local server speaking OpenAI's wire format through the real `openai` SDK, a tool call that
 * crosses the bus to the piscina worker and back, history that survives an actor restart, and
 * the `lurkbot send` command as a user would type it.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { runEventSchema, safeParseJson, subjects, type RunEvent } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { REPO_ROOT } from "../shared/scripts/paths.js";
import { startActorProcess, waitFor } from "./harness/actors.js";
import { CliClient, TestSystem } from "./harness/system.js";

describe("end to end", () => {
  let system: TestSystem;
  let cli: CliClient;

  before(async () => {
    system = await TestSystem.start({ files: { "notes.txt": "the treasure is under the oak tree\n" } });
    cli = await CliClient.connect(system.nats);
  });
  after(async () => {
    await cli?.close();
    await system?.stop();
  });

  it("answers a message through router, agent-runner and the fake LLM, streaming events", async () => {
    const events: RunEvent[] = [];
    const s = subjects();
    const sub = cli.nc.subscribe(s.runEventAll, { callback: (_e, m) => void events.push(runEventSchema.parse(safeParseJson(m.data))) });
    const reply = await cli.send("hello there");
    assert.equal(reply.kind, "reply");
    assert.equal(reply.text, "echo: hello there");
    const mine = () => events.filter((e) => e.runId === reply.runId);
    await waitFor(() => mine().some((e) => e.event.kind === "run_end"), 5000, "run_end");
    assert.ok(mine().some((e) => e.event.kind === "message_delta"), "deltas were streamed");
    assert.equal(mine().filter((e) => e.event.kind === "done" || e.event.kind === "error").length, 1, "exactly one terminal event");
    const seqs = mine().map((e) => e.seq);
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), "events arrive in order");
    sub.unsubscribe();
  });

  it("holds a conversation with a tool call that runs in the tools actor's worker", async () => {
    const reply = await cli.send("please read notes.txt");
    assert.match(reply.text, /tool said: .*treasure is under the oak tree/);
    const toolRound = system.fake.requests.at(-1)!.body;
    const toolMessage = toolRound.messages.find((m) => m.role === "tool");
    assert.ok(toolMessage, "the tool result went back to the model");
    assert.ok(toolRound.tools?.some((t) => t.function.name === "read"), "the catalog came from the tools actor");
  });

  it("keeps the history in LMDB across a restart of the sessions and agent-runner actors", async () => {
    // the restart comes between conversations: the reply reaches the user while the run's end
    // marker is still being written, and a run cut off there is only resumed after the restart
    const router = new BusClient(cli.nc);
    await waitFor(async () => (await router.call("router", "status", {})).activeRuns === 0, 10_000, "the previous run's end");
    await system.actors.get("sessions")!.kill();
    await system.actors.get("agent-runner")!.stop();
    await system.startActor("sessions");
    await system.startActor("agent-runner");
    const reply = await cli.send("do you remember?");
    assert.equal(reply.text, "echo: do you remember?");
    const sent = system.fake.requests.at(-1)!.body.messages.map((m) => (typeof m.content === "string" ? m.content : ""));
    assert.ok(sent.some((t) => t.includes("hello there")), "the first turn was in the history sent to the model");
    const history = await new BusClient(cli.nc).call("sessions", "history", { sessionKey: "agent:main:main", limit: 100 });
    assert.ok(history.records.length >= 9, `transcript has ${history.records.length} records`);
  });

  it("`lurkbot send --json` prints the reply for scripts", async () => {
    const env = { ...process.env, ...system.nats.env(), ...system.nats.passwordEnv("cli") };
    const child = spawn(process.execPath, ["services/cli/bin.mjs", "send", "from the command line", "--json", "--session", "script"], { cwd: REPO_ROOT, env });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((r) => child.once("exit", r));
    assert.equal(code, 0, err);
    const result = JSON.parse(out) as { reply: string; kind: string; runId: string };
    assert.equal(result.reply, "echo: from the command line");
    assert.equal(result.kind, "reply");
    const sessions = await new BusClient(cli.nc).call("sessions", "list", {});
    assert.ok(sessions.sessions.some((x) => x.sessionKey === "agent:main:cli:dm:script"), "a named session was created");
  });

  it("answers `no model configured` with how to configure one, and keeps serving", async () => {
    await system.actors.get("agent-runner")!.stop();
    const runner = await startActorProcess("agent-runner", system.nats, { ...system.env, LURKBOT_MODEL: "" });
    system.actors.set("agent-runner", runner);
    const reply = await cli.send("anyone home?");
    assert.equal(reply.kind, "error");
    assert.match(reply.text, /LURKBOT_MODEL/);
    const again = await cli.send("still there?");
    assert.equal(again.kind, "error");
  });
});
