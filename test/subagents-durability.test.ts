/**
 * Subagents over the whole system (every actor a process, fake LLM scripted by content):
 * `/subagents list` and `/subagents stop <label|all>` sent through chat answer from the subagents
 * actor and really abort the child runs; an announce survives a SIGKILL of the router (the
 * announce waits in INBOUND) and of the requester's agent-runner (the announce run is under way)
 * and reaches the parent exactly once.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { outboundMessageSchema, safeParseJson, subjects, type OutboundMessage } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { messageText, type FakeReply } from "./fakes/openai-server.js";
import { waitFor } from "./harness/actors.js";
import { ANNOUNCE, childTask, Gates, isChild, lastText } from "./harness/subagents-llm.js";
import { CliClient, TestSystem } from "./harness/system.js";

describe("subagents: chat commands and announce durability across router and runner kills", () => {
  let system: TestSystem;
  let cli: CliClient;
  let cliNc: NatsConnection;
  let bus: BusClient;
  const gates = new Gates();
  const outbound: OutboundMessage[] = [];
  /** announce LLM calls held ("hang") while this is true */
  let holdAnnounce = false;
  let announceCalls = 0;
  const say = (text: string, sessionName: string) => cli.send(text, { sessionName, timeoutMs: 20_000 });
  const childOf = async (label: string) => (await bus.call("subagents", "list", {})).children.find((c) => c.label === label);

  before(async () => {
    // a redelivery of an unacknowledged run request within seconds, not the default 30 s
    system = await TestSystem.start({ env: { LURKBOT_ACK_WAIT_MS: "3000" } });
    await system.startActor("subagents");
    system.fake.responder = async (body): Promise<FakeReply | undefined> => {
      if (isChild(body)) {
        const hold = /\[hold:(\w+)\]/.exec(childTask(body));
        if (hold) await gates.get(hold[1]!).promise;
        return { kind: "text", text: `child result for: ${childTask(body)}` };
      }
      const last = body.messages.at(-1);
      if (last?.role === "tool") return { kind: "text", text: `spawned: ${messageText(last).split("\n")[0]}` };
      const text = lastText(body);
      const spawn = /please spawn (\w+): (.+)$/.exec(text);
      if (last?.role === "user" && spawn) return { kind: "tool_calls", calls: [{ name: "sessions_spawn", arguments: { task: spawn[2]!, label: spawn[1]! } }] };
      if (text.includes(ANNOUNCE)) {
        announceCalls++;
        if (holdAnnounce) return { kind: "hang", text: "thinking about the announce" };
        return { kind: "text", text: `ANNOUNCED: ${/Findings:\n(.*)/.exec(text)?.[1] ?? "?"}` };
      }
      return undefined;
    };
    cli = await CliClient.connect(system.nats);
    cliNc = await system.nats.connect("cli");
    bus = new BusClient(cliNc);
    cliNc.subscribe(subjects().outboundChannel("cli"), { callback: (err, msg) => void (err ? undefined : outbound.push(outboundMessageSchema.parse(safeParseJson(msg.data)))) });
    await cliNc.flush();
  });

  after(async () => {
    gates.releaseAll();
    await cli?.close();
    await cliNc?.close();
    await system?.stop();
  });

  it("/subagents list and /subagents stop <label|all> through chat; the stopped child runs are aborted", async () => {
    await say("please spawn alpha: [hold:alpha] scan the disk", "chat");
    await say("please spawn beta: [hold:beta] scan the network", "chat");
    const alpha = await waitFor(() => childOf("alpha"), 10_000, "child alpha");
    const beta = await waitFor(() => childOf("beta"), 10_000, "child beta");

    const list = await say("/subagents list", "chat");
    assert.match(list.text, /^Subagents:/);
    assert.match(list.text, new RegExp(`alpha — running, run ${alpha.runId}: \\[hold:alpha\\] scan the disk`));
    assert.match(list.text, new RegExp(`beta — running, run ${beta.runId}`));
    const elsewhere = await say("/subagents list", "other");
    assert.equal(elsewhere.text, "No subagents for this session.", "another session has no children");

    const stopOne = await say("/subagents stop alpha", "chat");
    assert.equal(stopOne.text, "Stopped 1 subagent.");
    const aborted = (runId: string, childSessionKey: string) => waitFor(async () => {
      const { status } = await bus.call("sessions", "run", { sessionKey: childSessionKey, runId });
      return status === "aborted" || status === "error" ? status : undefined;
    }, 15_000, `child run ${runId} to be aborted`);
    assert.equal(await aborted(alpha.runId, alpha.childSessionKey), "aborted");
    assert.notEqual((await childOf("alpha"))?.status, "running");
    assert.equal((await childOf("beta"))?.status, "running", "beta still runs");

    const stopAll = await say("/subagents stop all", "chat");
    assert.equal(stopAll.text, "Stopped 1 subagent.");
    assert.equal(await aborted(beta.runId, beta.childSessionKey), "aborted");
    const none = await say("/subagents stop all", "chat");
    assert.equal(none.text, "No running subagents to stop.");
    const unknown = await say("/subagents stop gamma", "chat");
    assert.match(unknown.text, /No subagent "gamma" in this session/);
  });

  it("an announce survives a SIGKILL of the router (announce queued) and of the runner (announce run under way), once", async () => {
    const spawned = await say("please spawn delta: [hold:delta] read the logs", "spawner");
    assert.match(spawned.text, /^spawned: \{"status":"accepted"/);
    const delta = await waitFor(() => childOf("delta"), 10_000, "child delta");
    const parentKey = delta.requesterSessionKey;

    // the router dies; the child ends; its announce waits in INBOUND
    await system.actors.get("router")!.kill();
    holdAnnounce = true;
    gates.release("delta");
    await waitFor(async () => (await childOf("delta"))?.status !== "running", 15_000, "the child to end");
    await system.startActor("router");
    // the announce run reaches the model and hangs there; the runner dies mid-run
    await waitFor(() => announceCalls > 0, 20_000, "the announce run to reach the model");
    await system.actors.get("agent-runner")!.kill();
    holdAnnounce = false;
    await system.startActor("agent-runner");

    const told = await waitFor(() => outbound.find((m) => m.sessionKey === parentKey && m.text.startsWith("ANNOUNCED:")), 30_000, "the parent's announce reply");
    assert.equal(told.text, "ANNOUNCED: child result for: [hold:delta] read the logs");
    await new Promise((r) => setTimeout(r, 4_000)); // past another ack wait: no second delivery
    // this core subscription also sees a reply published again by a redelivered run, which the
    // OUTBOUND stream (what channels read) drops by its id: the user is told once per id
    const toldIds = new Set(outbound.filter((m) => m.sessionKey === parentKey && m.text.startsWith("ANNOUNCED:")).map((m) => m.id));
    assert.equal(toldIds.size, 1, "told once");
    const records = (await bus.call("sessions", "history", { sessionKey: parentKey, limit: 200 })).records;
    const announces = records.filter((r) => (r.kind === "system_event" && (r.text ?? "").includes("A background task")) || (r.kind === "message" && r.message?.role === "user" && JSON.stringify(r.message).includes("A background task")));
    assert.equal(announces.length, 1, `one announce in the parent's transcript: ${JSON.stringify(announces.map((r) => r.id))}`);
    const replies = records.filter((r) => r.kind === "message" && r.message?.role === "assistant" && JSON.stringify(r.message.content).includes("ANNOUNCED:"));
    assert.equal(replies.length, 1, "one announce reply in the transcript");
  });
});
