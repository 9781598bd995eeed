/**
 * The `/sessions` chat command through the router, with the whole system (real agent-runner,
 * fake LLM, every actor a process): an owner gets the agent's recent sessions from the sessions
 * actor, newest first, the current one marked; a non-owner gets the router's refusal.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { envelope, inboundMsgId, outboundMessageSchema, safeParseJson, subjects, type OutboundMessage } from "../shared/contract/index.js";
import { COMMAND_HELP } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { parseText } from "../services/router/commands.js";
import { waitFor } from "./harness/actors.js";
import { CliClient, TestSystem } from "./harness/system.js";

const s = subjects();

describe("/sessions (parsing)", () => {
  it("takes no arguments and is in the help table", () => {
    assert.deepEqual(parseText("/sessions"), { kind: "command", command: { name: "sessions" } });
    assert.deepEqual(parseText("/sessions@lurkbot"), { kind: "command", command: { name: "sessions" } });
    assert.equal(parseText("/sessions all").kind, "error");
    assert.ok(COMMAND_HELP.some(([usage, text]) => usage === "/sessions" && /owners/.test(text)));
  });
});

describe("/sessions through the router (real agent-runner, fake LLM)", () => {
  let system: TestSystem;
  let client: CliClient;
  let admin: NatsConnection;
  const outbound: OutboundMessage[] = [];

  before(async () => {
    system = await TestSystem.start({ config: { routing: { dm: { policy: "open" }, commands: { owners: ["web:owner"] } } } });
    client = await CliClient.connect(system.nats, "sessions-cmd");
    admin = await system.nats.connect("admin");
    admin.subscribe(s.outboundAll, { callback: (_e, m) => void outbound.push(outboundMessageSchema.parse(safeParseJson(m.data))) });
    await admin.flush();
  });
  after(async () => {
    await client?.close();
    await admin?.close();
    await system?.stop();
  });

  /** a web DM from `sender`; resolves with the router's answer */
  async function webDm(sender: string, text: string): Promise<OutboundMessage> {
    const id = randomUUID();
    const msg = envelope("lurk.inbound.message.v1", { id, channel: "web", conversation: `c-${sender}`, peer: { kind: "dm" as const, id: sender }, sender: { id: sender }, text, attachments: [], mentioned: false });
    await jetstream(admin).publish(s.inbound("web"), JSON.stringify(msg), { msgID: inboundMsgId("web", id) });
    return waitFor(() => outbound.find((o) => o.replyTo.includes(id)), 20_000, `answer to ${text}`);
  }

  it("an owner sees the agent's sessions, newest first, with last activity and records; the current one marked", async () => {
    assert.equal((await client.send("hello alpha", { sessionName: "alpha" })).text, "echo: hello alpha");
    assert.equal((await client.send("hello beta", { sessionName: "beta" })).text, "echo: hello beta");
    const r = await client.send("/sessions", { sessionName: "beta" });
    assert.equal(r.kind, "notice", r.text);
    const lines = r.text.split("\n");
    assert.equal(lines[0], "Recent sessions of agent main (newest first; * this one):");
    const beta = lines.findIndex((l) => l.includes("agent:main:cli:dm:beta"));
    const alpha = lines.findIndex((l) => l.includes("agent:main:cli:dm:alpha"));
    assert.ok(beta > 0 && alpha > beta, `beta (newer) before alpha: ${r.text}`);
    assert.match(lines[beta]!, /^\* agent:main:cli:dm:beta — \d{4}-\d\d-\d\d \d\d:\d\d UTC \((just now|\d+ min ago)\), \d+ records$/);
    assert.match(lines[alpha]!, /^ {2}agent:main:cli:dm:alpha — .* UTC \(.*\), \d+ records$/);
    const { session } = await new BusClient(client.nc).call("sessions", "get", { sessionKey: "agent:main:cli:dm:alpha" });
    assert.ok(lines[alpha]!.endsWith(`, ${session!.records} records`), "the sessions actor's record count");
  });

  it("an owner on another channel sees the list too, told that this session is not among them yet", async () => {
    const answer = await webDm("owner", "/sessions");
    assert.equal(answer.kind, "notice", answer.text);
    assert.match(answer.text, /^ {2}agent:main:cli:dm:beta — /m);
    assert.match(answer.text, /\n\(this session, agent:main:\S+, is not among them\)$/);
  });

  it("a non-owner gets the router's refusal", async () => {
    const answer = await webDm("stranger", "/sessions");
    assert.equal(answer.kind, "error");
    assert.match(answer.text, /^\/sessions lists this agent's conversations: it is for the owner only \(routing\.commands\.owners\)/);
    assert.doesNotMatch(answer.text, /agent:main:cli:dm:beta/);
  });
});
