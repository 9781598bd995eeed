/**
 * Approvals over a real bus: the approvals and tools actors as processes on a real nats-server,
 * exec with `tools.exec.ask: "always"`. An exec call blocks until a human approves it (CLI or
 * lurk.approvals.decide as the cli user) and then runs; deny and timeout give TOOL_DENIED and
 * the command never runs; forged approvals are all refused (an `approved: true` argument, a
 * token for another call, for other arguments, a replayed one, one signed with another key);
 * a pending approval survives a SIGKILL of the approvals actor; a request with an origin puts
 * an "approval" notice in the OUTBOUND stream.
 */
import assert from "node:assert/strict";
import { createPrivateKey, createPublicKey, generateKeyPairSync } from "node:crypto";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { Svcm } from "@nats-io/services";
import type { NatsConnection } from "@nats-io/transport-node";
import { outboundMessageSchema, STREAMS, subjects, toolCallReply, type OutboundMessage, type ToolCallReply } from "../shared/contract/index.js";
import { argsHash, canonicalJson, publicKeyFromBase64, signApprovalToken, verifyApprovalToken } from "../shared/runtime/approval-token.js";
import { BusClient } from "../shared/runtime/client.js";
import { parseConfig } from "../shared/runtime/config.js";
import { execTool } from "../services/tools/tools/exec.js";
import { readTool } from "../services/tools/tools/read.js";
import { callNeedsApproval, execCommandAllowlisted } from "../services/tools/approval-gate.js";
import { waitFor, type ActorProcess } from "./harness/actors.js";
import { ApprovalRig } from "./harness/approval-rig.js";
import { CLI_MAIN, runCli } from "./harness/cli.js";
import { CliClient, TestSystem } from "./harness/system.js";
import { TestNats } from "./harness/nats.js";
import { pendingApproval, textOf } from "./harness/tools-actor.js";

const APPROVAL_TIMEOUT_MS = 8_000;
const BWRAP = "/usr/bin/bwrap";

describe("approvals: exec gated by a human decision", () => {
  const rig = new ApprovalRig();
  let nats: TestNats;
  let approvals: ActorProcess;
  let runnerBus: BusClient;
  let cli: BusClient;
  let ws: string;
  let n = 0;

  const call = (args: Record<string, unknown>, extra: Record<string, unknown> = {}) => runnerBus.callSubject("lurk.tools.call.exec", "lurk.tools.call.v1", {
    toolCallId: `appr-call-${++n}`,
    runId: "run-appr",
    sessionKey: "agent:main:main",
    agentId: "main",
    tool: "exec",
    args,
    ...extra,
  }, toolCallReply, { timeoutMs: 60_000 });

  const pendingFor = (toolCallId: string) => pendingApproval(cli, toolCallId);

  const lines = () => (existsSync(join(ws, "runs.log")) ? readFileSync(join(ws, "runs.log"), "utf8").split("\n").filter(Boolean) : []);

  before(async () => {
    await rig.start({
      tools: { timeoutMs: 20_000, exec: { ask: "always", ...(existsSync(BWRAP) ? {} : { allowUnsandboxed: true }) } },
      approvals: { timeoutMs: APPROVAL_TIMEOUT_MS },
    });
    ({ nats, approvals, runnerBus, cli, ws } = rig);
  });
  after(() => rig.stop());

  it("keeps its signing key in the data dir with mode 0600 and publishes the public key", async () => {
    const file = join(nats.home, "data", "approvals", "signing-key.pem");
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const admin = await nats.connect("admin");
    try {
      let published: string | undefined;
      for await (const info of await new Svcm(admin).client().info("approvals")) published = info.metadata?.approvalsPublicKey;
      const expected = createPublicKey(createPrivateKey(readFileSync(file, "utf8"))).export({ format: "der", type: "spki" }).toString("base64");
      assert.equal(published, expected);
    } finally {
      await admin.close();
    }
  });

  it("blocks an exec call until `lurkbot approvals approve ID`, then runs it", async () => {
    const pending = call({ command: "echo approved-run >> runs.log" });
    const record = await pendingFor(`appr-call-${n}`);
    assert.equal(record.tool, "exec");
    assert.equal(record.command, "echo approved-run >> runs.log");
    assert.equal(lines().length, 0, "nothing ran before the approval");
    const env = nats.env(nats.passwordEnv("cli"));
    const listed = await runCli(["approvals", "list", "--status", "pending"], env);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(record.approvalId));
    const approved = await runCli(["approvals", "approve", record.approvalId], env);
    assert.equal(approved.code, 0, approved.stderr);
    assert.match(approved.stdout, /approved by cli:/);
    const reply = await pending;
    assert.equal(reply.isError, false, textOf(reply));
    assert.deepEqual(lines(), ["approved-run"]);
    const { approval, token } = await cli.call("approvals", "get", { approvalId: record.approvalId });
    assert.equal(approval.status, "approved");
    assert.match(approval.decidedBy ?? "", /^cli:/);
    assert.ok(token, "an approved record comes with its token");
    // deciding again is refused: only pending approvals can be decided
    const again = await runCli(["approvals", "deny", record.approvalId], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /approved already/);
  });

  it("deny: TOOL_DENIED and the command did not run", async () => {
    const pending = call({ command: "touch denied-marker" });
    const record = await pendingFor(`appr-call-${n}`);
    const decided = await cli.call("approvals", "decide", { approvalId: record.approvalId, decision: "deny", decidedBy: "cli:test" });
    assert.equal(decided.approval.status, "denied");
    assert.equal(decided.token, undefined);
    const reply = await pending;
    assert.equal(reply.isError, true);
    assert.equal(reply.errorCode, "TOOL_DENIED");
    assert.match(textOf(reply), /Tool execution denied/);
    assert.equal(existsSync(join(ws, "denied-marker")), false);
  });

  it("timeout: the approval expires, which is a denial", async () => {
    const started = Date.now();
    const reply = await call({ command: "touch expired-marker" });
    assert.equal(reply.errorCode, "TOOL_DENIED", textOf(reply));
    assert.match(textOf(reply), /Tool execution denied.*in time/);
    assert.ok(Date.now() - started >= APPROVAL_TIMEOUT_MS - 500);
    assert.equal(existsSync(join(ws, "expired-marker")), false);
    const { approvals: expired } = await cli.call("approvals", "list", { status: "expired" });
    const record = expired.find((a) => a.toolCallId === `appr-call-${n}`);
    assert.ok(record);
    assert.equal(record.decidedBy, "timeout");
    await assert.rejects(cli.call("approvals", "decide", { approvalId: record.approvalId, decision: "approve", decidedBy: "cli:late" }), /expired already/);
  });

  it("refuses forged approvals; the command never runs", async () => {
    // a legitimate approval for one call, to steal its token
    const args = { command: "echo forged >> forged.log" };
    const pending = call(args);
    const toolCallId = `appr-call-${n}`;
    const record = await pendingFor(toolCallId);
    const { token } = await cli.call("approvals", "decide", { approvalId: record.approvalId, decision: "approve", decidedBy: "cli:test" });
    assert.equal((await pending).isError, false);
    assert.ok(token);
    const forged = () => (existsSync(join(ws, "forged.log")) ? readFileSync(join(ws, "forged.log"), "utf8").split("\n").filter(Boolean).length : 0);
    assert.equal(forged(), 1);
    const refused = async (reply: ToolCallReply, why: RegExp) => {
      assert.equal(reply.isError, true);
      assert.equal(reply.errorCode, "TOOL_DENIED", textOf(reply));
      assert.match(textOf(reply), why);
    };

    // the token for another tool call id
    await refused(await call(args, { approvalToken: token }), /another tool call/);
    // the same call id and token with changed arguments
    await refused(await call({ command: "echo changed >> forged.log" }, { toolCallId, approvalToken: token }), /other arguments/);
    // the very same call replayed
    await refused(await call(args, { toolCallId, approvalToken: token }), /used already/);
    // a token signed with another key
    const other = generateKeyPairSync("ed25519").privateKey;
    const fakeId = `appr-call-${n + 1}`;
    const fake = signApprovalToken(other, { approvalId: "apr-forged", toolCallId: fakeId, argsHash: argsHash(args), decision: "approve", expiresAt: Date.now() + 60_000 });
    await refused(await call(args, { toolCallId: fakeId, approvalToken: fake }), /bad signature/);
    // a token with its payload edited (signature of the original)
    const [, sig] = token.split(".");
    const edited = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString()), toolCallId: "appr-edited" })).toString("base64url");
    await refused(await call(args, { toolCallId: "appr-edited", approvalToken: `${edited}.${sig}` }), /bad signature/);
    assert.equal(forged(), 1, "none of the forged calls ran");

    // `approved: true` is just an argument: the call still waits for a human, who denies it
    const sneaky = call({ ...args, approved: true });
    const asked = await pendingFor(`appr-call-${n}`);
    await cli.call("approvals", "decide", { approvalId: asked.approvalId, decision: "deny", decidedBy: "cli:test" });
    await refused(await sneaky, /Tool execution denied/);
    assert.equal(forged(), 1);
  });

  it("a pending approval survives a SIGKILL and restart of the approvals actor", async () => {
    const pending = call({ command: "echo after-restart >> runs.log" });
    const record = await pendingFor(`appr-call-${n}`);
    await approvals.kill();
    approvals = await rig.startActor("approvals");
    const { approval } = await cli.call("approvals", "get", { approvalId: record.approvalId });
    assert.equal(approval.status, "pending");
    await cli.call("approvals", "decide", { approvalId: record.approvalId, decision: "approve", decidedBy: "cli:test" });
    const reply = await pending;
    assert.equal(reply.isError, false, textOf(reply));
    assert.deepEqual(lines(), ["approved-run", "after-restart"]);
  });

  it("delivers an approval notice to the origin conversation (OUTBOUND stream, msgID = approval id)", async () => {
    const tb = new BusClient(await nats.connect("tools"));
    try {
      const { approval } = await tb.call("approvals", "request", {
        toolCallId: "notice-call", tool: "exec", argsHash: argsHash({ command: "ls" }), command: "ls",
        sessionKey: "agent:main:main", agentId: "main",
        origin: { channel: "cli", conversation: "approvals-notice", messageIds: ["in-1"] },
      });
      const admin = await nats.connect("admin");
      try {
        const jsm = await jetstreamManager(admin);
        const subject = subjects().outbound("cli", "approvals-notice");
        const msg = await waitFor(() => jsm.streams.getMessage(STREAMS.outbound, { last_by_subj: subject }).catch(() => null), 5_000, "the notice");
        const out = outboundMessageSchema.parse(msg.json());
        assert.equal(out.kind, "approval");
        assert.equal(out.approval?.approvalId, approval.approvalId);
        assert.equal(out.approval?.toolCallId, "notice-call", "the notice names the tool call it is for");
        assert.equal(out.approval?.command, "ls");
        assert.deepEqual(out.replyTo, ["in-1"]);
        assert.match(out.text, new RegExp(`/approve ${approval.approvalId}`));
        assert.equal(msg.header?.get("Nats-Msg-Id"), approval.approvalId);
      } finally {
        await admin.close();
      }
      await cli.call("approvals", "decide", { approvalId: approval.approvalId, decision: "deny", decidedBy: "cli:test" });
    } finally {
      await tb.nc.close();
    }
  });
});

describe("which calls need an approval", () => {
  it("exec by tools.exec.ask and the allowlist; needsApproval tools always", () => {
    const cfg = (exec: Record<string, unknown>) => parseConfig({ tools: { exec } }, {}, "/tmp/lurk-appr-home");
    assert.equal(cfg({}).tools.exec.ask, "off");
    assert.equal(callNeedsApproval(cfg({}), execTool, { command: "rm -rf x" }), false);
    assert.equal(callNeedsApproval(cfg({ ask: "always" }), execTool, { command: "ls" }), true);
    const onMiss = cfg({ ask: "on-miss", allowlist: ["ls", "echo"] });
    assert.equal(callNeedsApproval(onMiss, execTool, { command: "ls -la src" }), false);
    assert.equal(callNeedsApproval(onMiss, execTool, { command: "rm -rf src" }), true);
    for (const sneaky of ["ls; rm -rf x", "ls && rm x", "ls | sh", "echo $(rm x)", "echo `rm x`", "echo x > file", "ls\nrm x", "ls\n\nrm", "ls &"]) {
      assert.equal(execCommandAllowlisted(sneaky, ["ls", "echo"]), false, sneaky);
    }
    assert.equal(callNeedsApproval(onMiss, readTool, { path: "x" }), false);
    assert.equal(callNeedsApproval(cfg({}), { ...readTool, needsApproval: true }, { path: "x" }), true);
  });
});

describe("approval tokens", () => {
  it("canonical JSON sorts keys at every level", () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: null } }), '{"a":{"c":null,"d":[2,{"y":2,"z":1}]},"b":1}');
    assert.equal(argsHash({ a: 1, b: 2 }), argsHash({ b: 2, a: 1 }));
    assert.notEqual(argsHash({ a: 1 }), argsHash({ a: 1, approved: true }));
  });
  it("verifies with the signer's public key only", () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const payload = { approvalId: "a1", toolCallId: "t1", argsHash: argsHash({}), decision: "approve" as const, expiresAt: 1 };
    const token = signApprovalToken(privateKey, payload);
    const b64 = publicKey.export({ format: "der", type: "spki" }).toString("base64");
    assert.deepEqual(verifyApprovalToken(publicKeyFromBase64(b64), token), payload);
    assert.equal(verifyApprovalToken(generateKeyPairSync("ed25519").publicKey, token), null);
    assert.equal(verifyApprovalToken(publicKey, "garbage"), null);
  });
});


describe("approvals inside a real run", () => {
  let system: TestSystem;
  let client: CliClient;
  let cli: BusClient;
  let cliNc: NatsConnection;

  before(async () => {
    system = await TestSystem.start({
      // the tool's own deadline (1 s) is far shorter than the time a human takes to decide
      config: { tools: { timeoutMs: 1_000, exec: { ask: "always", ...(existsSync(BWRAP) ? {} : { allowUnsandboxed: true }) } }, approvals: { timeoutMs: 30_000 } },
    });
    client = await CliClient.connect(system.nats, "approvals-run");
    cliNc = await system.nats.connect("cli");
    cli = new BusClient(cliNc);
  });
  after(async () => {
    await client?.close();
    await cliNc?.close();
    await system?.stop();
  });

  it("the run waits for a decision that takes longer than the tool deadline, then gets the command's output", async () => {
    system.fake.enqueue({ kind: "tool_calls", calls: [{ name: "exec", arguments: { command: "echo decided-late" } }] });
    // the approval notice goes to this conversation first; the answer follows it
    const delivered: OutboundMessage[] = [];
    cliNc.subscribe(subjects().outbound("cli", "approvals-run"), { callback: (_e, m) => void delivered.push(outboundMessageSchema.parse(m.json())) });
    await cliNc.flush();
    await client.publish("run it");
    const pending = await waitFor(async () => (await cli.call("approvals", "list", { status: "pending" })).approvals[0], 15_000, "the pending approval");
    // longer than tools.timeoutMs plus the runner's 5 s margin: the old limit of a tool call
    await new Promise((r) => setTimeout(r, 7_000));
    await cli.call("approvals", "decide", { approvalId: pending.approvalId, decision: "approve", decidedBy: "cli:test" });
    const reply = await waitFor(() => delivered.find((m) => m.kind === "reply"), 20_000, "the run's reply");
    assert.match(reply.text, /^tool said: decided-late/);
    assert.ok(delivered.some((m) => m.kind === "approval" && m.text.includes("echo decided-late")), "the notice named the command");
  });

  it("`lurkbot chat`: /approve typed while the run waits goes at once (not queued behind the reply); a lone n / y answers the open request", async () => {
    system.fake.enqueue({ kind: "tool_calls", calls: [{ name: "exec", arguments: { command: "echo approved-in-chat" } }] });
    const env = { ...process.env, ...system.nats.env(), ...system.nats.passwordEnv("cli") } as Record<string, string>;
    const chat = spawn(process.execPath, [CLI_MAIN, "chat", "--session", "chat-approval"], { env, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    chat.stdout.on("data", (d: Buffer) => (out += d.toString()));
    chat.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => chat.once("close", (code) => resolve(code)));
    /** waitFor, failing with the chat's output so far */
    const see = <T>(check: () => T | Promise<T>, timeoutMs: number, what: string) =>
      waitFor(check, timeoutMs, what).catch((e: Error) => assert.fail(`${e.message}; chat output:\n${out}${err}`));
    try {
      chat.stdin.write("run it\n");
      const approvalId = await see(() => /\/approve (\S+) or \/deny/.exec(out)?.[1], 15_000, "the approval request in the chat");
      chat.stdin.write(`/approve ${approvalId}\n`);
      await see(() => out.includes("tool said: approved-in-chat"), 20_000, "the run's reply after /approve");
      const { approval } = await cli.call("approvals", "get", { approvalId });
      assert.equal(approval.status, "approved");

      // a lone n / y answers the open request
      const nth = (k: number) => see(() => [...out.matchAll(/\/approve (\S+) or \/deny/g)][k]?.[1], 15_000, `approval request ${k + 1} in the chat`);
      system.fake.enqueue({ kind: "tool_calls", calls: [{ name: "exec", arguments: { command: "echo denied-in-chat" } }] });
      chat.stdin.write("run it again\n");
      const second = await nth(1);
      assert.match(out, new RegExp(`y approves, n denies \\(${second}\\)`));
      chat.stdin.write("n\n");
      await waitFor(async () => (await cli.call("approvals", "get", { approvalId: second })).approval.status === "denied", 15_000, "the denial");
      await see(() => /tool said: .*denied/i.test(out), 20_000, "the reply after the denial");
      assert.match(out, new RegExp(`/deny ${second}`));

      system.fake.enqueue({ kind: "tool_calls", calls: [{ name: "exec", arguments: { command: "echo yes-in-chat" } }] });
      chat.stdin.write("once more\n");
      const third = await nth(2);
      chat.stdin.write("y\n");
      await see(() => out.includes("tool said: yes-in-chat"), 20_000, "the reply after y");
      assert.equal((await cli.call("approvals", "get", { approvalId: third })).approval.status, "approved");
      // no request is open now: a y is an ordinary message
      chat.stdin.write("y\n");
      await see(() => /lurkbot> .*y\b/.test(out.split("tool said: yes-in-chat")[1] ?? ""), 20_000, "the reply to a plain y");
      chat.stdin.end("/exit\n");
      assert.equal(await exited, 0, err);
    } finally {
      chat.kill("SIGKILL");
    }
  });
});
