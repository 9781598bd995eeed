/**
 * Subagents over the whole system (real nats-server, every actor a process, the fake OpenAI
 * server scripted by request content): the parent's agent calls `sessions_spawn`, which answers
 * at once while the child is still working; the child runs with the subagent prompt, only
 * AGENTS.md and TOOLS.md and without the denied tools; its result is announced into the
 * parent session exactly once and the parent's agent tells the user. Limits are refused with
 * LIMIT_EXCEEDED naming the limit; stop (bus and CLI) ends children without an announce; a
 * child past its deadline is announced as timed out; and the announce survives a SIGKILL of
 * the subagents actor (a child that ended while it was down, and one still running).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  LurkError, outboundMessageSchema, safeParseJson, subjects, toolCallReply, type OutboundMessage,
} from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { messageText, type ChatRequestBody, type FakeReply } from "./fakes/openai-server.js";
import { waitFor } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { ANNOUNCE, childTask, Gates, isChild, lastText, systemText } from "./harness/subagents-llm.js";
import { CliClient, TestSystem } from "./harness/system.js";

const PARENT = "agent:main:cli:dm:spawner";

describe("subagents: spawn, announce, limits, stop, durability", () => {
  let system: TestSystem;
  let cli: CliClient;
  let cliNc: NatsConnection;
  let bus: BusClient;
  const gates = new Gates();
  const outbound: OutboundMessage[] = [];
  /** every child LLM call as it arrives (the fake records a request only once it is answered) */
  const childCalls: ChatRequestBody[] = [];

  /** fake LLM requests that announce the child with this task marker */
  const announcesOf = (marker: string) => system.fake.requests.filter((r) => !isChild(r.body) && lastText(r.body).includes(ANNOUNCE) && lastText(r.body).includes(marker));
  const child = async (runId: string) => (await bus.call("subagents", "list", {})).children.find((c) => c.runId === runId);

  before(async () => {
    system = await TestSystem.start({
      ...(process.env.SUBAGENTS_DEBUG ? { env: { LURKBOT_LOG_LEVEL: "debug" } } : {}),
      files: {
        "AGENTS.md": "AGENTS-MARKER: operating instructions\n",
        "TOOLS.md": "TOOLS-MARKER: tool notes\n",
        "SOUL.md": "SOUL-MARKER: persona\n",
        "USER.md": "USER-MARKER: the user\n",
        "MEMORY.md": "MEMORY-MARKER: private memory\n",
      },
    });
    writeFileSync(join(system.nats.home, "config.json"), JSON.stringify({
      // a killed instance's lease lapses in 2 s: the restarted one takes over within the test's waits
      subagents: { maxChildrenPerSession: 2, maxConcurrent: 3, defaultTimeoutSeconds: 60, leaseTtlMs: 2_000, leaseRenewMs: 500 },
    }));
    await system.startActor("subagents");
    system.fake.responder = async (body): Promise<FakeReply | undefined> => {
      if (isChild(body)) {
        childCalls.push(body);
        const task = childTask(body);
        if (task.includes("[hang]")) return { kind: "hang" };
        const hold = /\[hold:(\w+)\]/.exec(task);
        if (hold) await gates.get(hold[1]!).promise;
        return { kind: "text", text: `child result for: ${task}` };
      }
      const last = body.messages.at(-1);
      if (last?.role === "tool") return { kind: "text", text: `spawned: ${messageText(last).split("\n")[0]}` };
      const text = lastText(body);
      const spawn = /please spawn: (.+)$/.exec(text);
      if (last?.role === "user" && spawn) return { kind: "tool_calls", calls: [{ name: "sessions_spawn", arguments: { task: spawn[1]!, label: "stars" } }] };
      if (text.includes(ANNOUNCE)) {
        const findings = /Findings:\n(.*)/.exec(text)?.[1] ?? "?";
        return { kind: "text", text: `ANNOUNCED: ${findings}` };
      }
      return undefined;
    };
    cli = await CliClient.connect(system.nats);
    cliNc = await system.nats.connect("cli");
    bus = new BusClient(cliNc);
    cliNc.subscribe(subjects().outboundChannel("cli"), {
      callback: (_e, msg) => void outbound.push(outboundMessageSchema.parse(safeParseJson(msg.data))),
    });
    await cliNc.flush();
  });

  after(async () => {
    if (process.env.SUBAGENTS_DEBUG) {
      for (const [name, a] of system.actors) process.stderr.write(`--- ${name}\n${a.output().slice(-6000)}\n`);
      for (const r of system.fake.requests) process.stderr.write(`REQ system=${JSON.stringify(systemText(r.body).slice(-300))} last=${JSON.stringify(lastText(r.body).slice(0, 200))}\n`);
    }
    gates.releaseAll();
    await cli?.close();
    await cliNc?.close();
    await system?.actors.get("subagents")?.stop();
    await system?.stop();
  });

  it("sessions_spawn answers at once; the child gets the subagent prompt; the announce lands once and the parent tells the user", async () => {
    const reply = await cli.send("please spawn: [hold:first] count the stars", { sessionName: "spawner" });
    // the parent's turn ended while the child's LLM call is still held
    const toolResult = system.fake.requests.map((r) => r.body.messages.at(-1)).find((m) => m?.role === "tool");
    const spawned = JSON.parse(messageText(toolResult).split("\n")[0]!) as { status: string; childSessionKey: string; runId: string };
    assert.equal(spawned.status, "accepted");
    assert.match(spawned.childSessionKey, /^agent:main:subagent:[0-9a-f]+$/);
    assert.match(reply.text, /^spawned: \{"status":"accepted"/);
    const running = await child(spawned.runId);
    assert.equal(running?.status, "running");
    assert.equal(running?.requesterSessionKey, PARENT);
    assert.equal(running?.label, "stars");
    assert.equal(running?.depth, 1);

    // the child's request: subagent prompt, only AGENTS.md and TOOLS.md, no denied tools
    const childReq = { body: await waitFor(() => childCalls.find((b) => childTask(b).includes("[hold:first]")), 15_000, "the child's LLM call") };
    const prompt = systemText(childReq.body);
    assert.match(prompt, /You were created to handle: \[hold:first\] count the stars/);
    assert.match(prompt, /- Label: stars/);
    assert.ok(prompt.includes(`- Requester session: ${PARENT}`), prompt);
    assert.ok(prompt.includes(`- Your session: ${spawned.childSessionKey}`));
    assert.ok(prompt.includes("AGENTS-MARKER") && prompt.includes("TOOLS-MARKER"), "AGENTS.md and TOOLS.md are injected");
    for (const marker of ["SOUL-MARKER", "USER-MARKER", "MEMORY-MARKER"]) assert.ok(!prompt.includes(marker), `${marker} must not reach a subagent`);
    const childTools = (childReq.body.tools ?? []).map((t) => t.function.name);
    assert.ok(childTools.includes("read"), childTools.join(","));
    for (const denied of ["sessions_spawn", "memory_search", "memory_get"]) assert.ok(!childTools.includes(denied), `${denied} is denied to subagents`);
    const parentTools = (system.fake.requests.find((r) => !isChild(r.body))!.body.tools ?? []).map((t) => t.function.name);
    assert.ok(parentTools.includes("sessions_spawn"), "the parent has sessions_spawn");

    gates.release("first");
    const told = await waitFor(() => outbound.find((m) => m.sessionKey === PARENT && m.text.startsWith("ANNOUNCED:")), 20_000, "the parent's announce reply");
    assert.equal(told.text, "ANNOUNCED: child result for: [hold:first] count the stars");
    const announce = lastText(announcesOf("[hold:first]")[0]!.body);
    assert.match(announce, /A background task "\[hold:first\] count the stars" \(stars\) just completed\./);
    assert.match(announce, /\[Stats: status=completed \| duration=\d+\.\ds \| tokens in=[1-9]\d* out=[1-9]\d*\]/);
    const done = await waitFor(async () => { const c = await child(spawned.runId); return c?.status === "done" ? c : undefined; }, 10_000, "status done");
    assert.equal(done.outcome, "ok");
    assert.ok(done.endedAt! >= done.startedAt);
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(announcesOf("[hold:first]").length, 1, "announced exactly once");
  });

  it("refuses spawns over the limits with LIMIT_EXCEEDED naming the limit; stop ends children without an announce", async () => {
    const spawn = (requesterSessionKey: string, task: string) => bus.call("subagents", "spawn", { requesterSessionKey, task });
    const refused = async (p: Promise<unknown>, limit: string) => {
      const err = await p.then(() => assert.fail("the spawn was accepted"), (e: unknown) => e as LurkError);
      assert.equal(err.code, "LIMIT_EXCEEDED", err.message);
      assert.equal((err.details as { limit: string }).limit, limit);
      return err;
    };
    const x1 = await spawn("agent:main:cli:dm:limits-x", "[hold:limits] x1");
    await spawn("agent:main:cli:dm:limits-x", "[hold:limits] x2");
    const perSession = await refused(spawn("agent:main:cli:dm:limits-x", "[hold:limits] x3"), "maxChildrenPerSession");
    assert.match(perSession.message, /maxChildrenPerSession is 2/);
    const depth = await refused(spawn(x1.childSessionKey, "[hold:limits] grandchild"), "maxDepth");
    assert.match(depth.message, /cannot spawn another subagent/);
    const y1 = await spawn("agent:main:cli:dm:limits-y", "[hold:limits] y1");
    await refused(spawn("agent:main:cli:dm:limits-z", "[hold:limits] z1"), "maxConcurrent");

    const env = { ...system.nats.env(), ...system.nats.passwordEnv("cli") };
    const listed = await runCli(["subagents", "list", "--session", "agent:main:cli:dm:limits-x"], env);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /RUN\s+STATUS\s+LABEL\s+DURATION/);
    assert.equal(listed.stdout.split("\n").filter((l) => l.includes("running")).length, 2, listed.stdout);
    const stopAll = await runCli(["subagents", "stop", "--all", "--session", "agent:main:cli:dm:limits-x"], env);
    assert.equal(stopAll.code, 0, stopAll.stderr);
    assert.match(stopAll.stdout, /stopped 2 subagents/);
    const usage = await runCli(["subagents", "stop", "--all"], env);
    assert.notEqual(usage.code, 0);
    assert.match(usage.stderr, /--all needs --session KEY/);

    assert.deepEqual(await bus.call("subagents", "stop", { runId: y1.runId }), { stopped: 1 });
    assert.deepEqual(await bus.call("subagents", "stop", { runId: y1.runId }), { stopped: 0 }, "stopping twice stops nothing");
    const missing = await bus.call("subagents", "stop", { runId: "sub-nope" }).then(() => null, (e: LurkError) => e);
    assert.equal(missing?.code, "NOT_FOUND");
    const x = (await bus.call("subagents", "list", { requesterSessionKey: "agent:main:cli:dm:limits-x" })).children;
    assert.deepEqual(x.map((c) => c.status), ["stopped", "stopped"]);
    // room again: a new child is accepted
    const again = await spawn("agent:main:cli:dm:limits-z", "[hold:limits-again] z2");
    assert.equal(again.status, "accepted");
    gates.release("limits-again");
    gates.release("limits");
    await waitFor(() => announcesOf("[hold:limits-again] z2").length === 1, 20_000, "z2's announce");
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(announcesOf("[hold:limits]").length, 0, "stopped children are not announced");
  });

  it("a child past its deadline is announced as timed out; cleanup delete removes its session; a retried spawn is the same child", async () => {
    const request = { requesterSessionKey: "agent:main:cli:dm:timeouts", task: "[hang] never ends", timeoutSeconds: 1, cleanup: "delete" as const };
    const spawned = await bus.call("subagents", "spawn", request, { causationId: "run-x:call-1" });
    const retried = await bus.call("subagents", "spawn", request, { causationId: "run-x:call-1" });
    assert.deepEqual(retried, spawned, "the same tool call names the same child");
    const announce = await waitFor(() => announcesOf("[hang] never ends")[0], 20_000, "the timeout announce");
    assert.match(lastText(announce.body), /just timed out\./);
    assert.match(lastText(announce.body), /\[Stats: status=timed out/);
    const record = await waitFor(async () => { const c = await child(spawned.runId); return c?.status === "done" ? c : undefined; }, 10_000, "status done");
    assert.equal(record.outcome, "timeout");
    assert.equal((await bus.call("subagents", "list", { requesterSessionKey: "agent:main:cli:dm:timeouts" })).children.length, 1);
    await waitFor(async () => (await bus.call("sessions", "get", { sessionKey: spawned.childSessionKey })).session === null || undefined, 10_000, "the child's session deleted");
  });

  it("the announce survives a SIGKILL of the subagents actor, exactly once", async () => {
    const spawn = (task: string) => bus.call("subagents", "spawn", { requesterSessionKey: "agent:main:cli:dm:durable", task });
    const ended = await spawn("[hold:down] ends while the actor is down");
    const lives = await spawn("[hold:later] ends after the restart");
    await waitFor(() => childCalls.filter((b) => /\[hold:(down|later)\]/.test(childTask(b))).length === 2 || undefined, 15_000, "both children calling the LLM");
    await system.actors.get("subagents")!.kill();

    // without the actor, sessions_spawn says so clearly
    const toolReply = await bus.callSubject(subjects().toolCall("sessions_spawn"), "lurk.tools.call.v1", {
      toolCallId: "call-offline", runId: "run-offline", sessionKey: PARENT, agentId: "main", sessionType: "dm", tool: "sessions_spawn", args: { task: "anything" },
    }, toolCallReply);
    assert.equal(toolReply.isError, true);
    assert.equal(toolReply.errorCode, "UNAVAILABLE");
    assert.match(toolReply.content.map((c) => (c.type === "text" ? c.text : "")).join(""), /subagents actor is not running/);

    gates.release("down");
    await waitFor(async () => (await bus.call("sessions", "run", { sessionKey: ended.childSessionKey, runId: ended.runId })).status === "done" || undefined, 15_000, "the child to end while the actor is down");
    await system.startActor("subagents");
    await waitFor(() => announcesOf("[hold:down]").length === 1 || undefined, 20_000, "the announce of the child that ended while down");
    assert.equal((await child(lives.runId))?.status, "running", "the live child is watched again");
    gates.release("later");
    await waitFor(() => announcesOf("[hold:later]").length === 1 || undefined, 20_000, "the announce of the child that ended after the restart");
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(announcesOf("[hold:down]").length, 1, "announced once");
    assert.equal(announcesOf("[hold:later]").length, 1, "announced once");
    assert.equal((await child(ended.runId))?.status, "done");
  });
});
