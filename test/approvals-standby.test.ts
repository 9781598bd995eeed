/**
 * Approvals on several hosts: two approvals instances in process, each with its own data
 * directory and signing key (two hosts), a third as a process (a host that crashes), and the
 * tools actor as a process, on a real nats-server. One instance holds the lease and decides;
 * a standby relays the requests it takes to it. When the active instance stops (cleanly, or
 * SIGKILLed) another takes over with the replicated records: a decided
 * approval stays decided, a redeemed token is not redeemed again, a token signed by the old
 * instance's key still runs its call through the tools actor, and a pending one can be decided.
 * While a holder that does not answer keeps the lease, requests are UNAVAILABLE until it lapses.
 */
import assert from "node:assert/strict";
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { outboundMessageSchema, safeParseJson, subjects, toolCallReply, type ApprovalRecord, type OutboundMessage } from "../shared/contract/index.js";
import type { ActorRuntime } from "../shared/runtime/actor.js";
import { argsHash, publicKeyFromBase64, signApprovalToken, verifyApprovalToken } from "../shared/runtime/approval-token.js";
import { BusClient } from "../shared/runtime/client.js";
import { loadConfig, type LurkConfig } from "../shared/runtime/config.js";
import { Lease } from "../shared/runtime/lease.js";
import { definition as approvalsActor } from "../services/approvals/actor.js";
import type { StatusReport } from "../services/cli/status.js";
import { startActorProcess, startInProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { TestNats } from "./harness/nats.js";
import { pendingApproval, textOf } from "./harness/tools-actor.js";

const S = subjects();
const BWRAP = "/usr/bin/bwrap";

/** what was decided and used at one active instance, checked at the next */
interface Before {
  denied: ApprovalRecord;
  /** approved and run (redeemed) */
  used: ApprovalRecord;
  /** approved, not run yet: its token was signed by the instance that decided it */
  unused: { approval: ApprovalRecord; token: string; args: { command: string } };
  pending: ApprovalRecord;
}

describe("approvals: one active instance, a standby that relays and takes over", () => {
  let nats: TestNats;
  let config: LurkConfig;
  let ws: string;
  let hostC: string;
  let tools: ActorProcess;
  let first: ActorRuntime | undefined;
  let second: ActorRuntime | undefined;
  let crashing: ActorProcess | undefined;
  let admin: NatsConnection;
  let cliNc: NatsConnection;
  let runnerNc: NatsConnection;
  let cli: BusClient;
  let runner: BusClient;
  /** counts relayed requests; a subscriber there, so it goes before the ghost test */
  let relayWatch: Subscription | undefined;
  const relayed: string[] = [];
  const roles: string[] = [];
  const notices: OutboundMessage[] = [];
  let n = 0;
  let fromFirst: Before;

  /** an instance on "another host": its own data directory and signing key */
  const startInstance = (host: string) => startInProcess(approvalsActor, nats, { ...config, dataDir: join(nats.home, host) });
  const keyOf = (rt: ActorRuntime) => publicKeyFromBase64(rt.service.info().metadata!.approvalsPublicKey!);
  const keyInFile = (dataDir: string) => createPublicKey(createPrivateKey(readFileSync(join(dataDir, "approvals", "signing-key.pem"), "utf8")));
  const activations = () => roles.filter((r) => r === "active").length;

  const exec = (args: { command: string }, extra: Record<string, unknown> = {}) => runner.callSubject("lurk.tools.call.exec", "lurk.tools.call.v1", {
    toolCallId: `sb-call-${++n}`, runId: "run-standby", sessionKey: "agent:main:main", agentId: "main", tool: "exec", args, ...extra,
  }, toolCallReply, { timeoutMs: 60_000 });
  const ask = (toolCallId: string, args: { command: string }, origin?: { channel: string; conversation: string; messageIds: string[] }) => cli.call("approvals", "request", {
    toolCallId, tool: "exec", argsHash: argsHash(args), command: args.command, sessionKey: "agent:main:main", agentId: "main", ...(origin ? { origin } : {}),
  });
  const decide = (approvalId: string, decision: "approve" | "deny") => cli.call("approvals", "decide", { approvalId, decision, decidedBy: "cli:test" });
  const get = async (approvalId: string) => (await cli.call("approvals", "get", { approvalId })).approval;
  const lines = () => (existsSync(join(ws, "runs.log")) ? readFileSync(join(ws, "runs.log"), "utf8").split("\n").filter(Boolean) : []);

  /** An exec call through the tools actor, approved by a human; its approved record and token. */
  const runApproved = async (line: string) => {
    const pending = exec({ command: `echo ${line} >> runs.log` });
    const { approvalId } = await pendingApproval(cli, `sb-call-${n}`);
    const { approval, token } = await decide(approvalId, "approve");
    const reply = await pending;
    assert.equal(reply.isError, false, textOf(reply));
    assert.ok(token);
    return { approval, token };
  };

  /** Records in every state, made at the active instance (`tag` keeps the call ids apart). */
  const makeRecords = async (tag: string): Promise<Before> => {
    const denied = (await decide((await ask(`${tag}-denied`, { command: "rm -rf data" })).approval.approvalId, "deny")).approval;
    const used = (await runApproved(`${tag}-ran`)).approval;
    const args = { command: `echo ${tag}-old-key >> runs.log` };
    const unused = await decide((await ask(`${tag}-unused`, args)).approval.approvalId, "approve");
    const pending = (await ask(`${tag}-pending`, { command: "ls -a" })).approval;
    return { denied, used, unused: { approval: unused.approval, token: unused.token!, args }, pending };
  };

  /** After a takeover: the records as the old instance left them, and its token still works. */
  const recordsSurvived = async (was: Before, oldKey: KeyObject, newKey: KeyObject) => {
    assert.equal((await get(was.denied.approvalId)).status, "denied");
    await assert.rejects(decide(was.denied.approvalId, "approve"), /denied already/, "decided before the switch: stays decided");
    await assert.rejects(cli.call("approvals", "redeem", { approvalId: was.used.approvalId, toolCallId: was.used.toolCallId, argsHash: was.used.argsHash }),
      /used already/, "redeemed before the switch: not again");
    const { token, approval, args } = was.unused;
    assert.ok(verifyApprovalToken(oldKey, token) && !verifyApprovalToken(newKey, token), "the token is the old instance's");
    // a token no instance signed: refused, and the tools actor gathers the keys again (the old instance no longer answers)
    const forged = signApprovalToken(generateKeyPairSync("ed25519").privateKey, { ...verifyApprovalToken(oldKey, token)!, toolCallId: `${approval.toolCallId}-forged` });
    const refused = await exec(args, { toolCallId: `${approval.toolCallId}-forged`, approvalToken: forged });
    assert.equal(refused.errorCode, "TOOL_DENIED");
    assert.match(textOf(refused), /bad signature/);
    const reply = await exec(args, { toolCallId: approval.toolCallId, approvalToken: token });
    assert.equal(reply.isError, false, textOf(reply));
    assert.equal(lines().at(-1), args.command.split(" ")[1], "the call ran with the old instance's token");
    await assert.rejects(cli.call("approvals", "redeem", { approvalId: approval.approvalId, toolCallId: approval.toolCallId, argsHash: approval.argsHash }), /used already/);
    const decided = await decide(was.pending.approvalId, "approve");
    assert.ok(decided.token && verifyApprovalToken(newKey, decided.token), "a pending one is decided and signed by the new instance");
  };

  /** The approvals rows of `lurkbot status --json` (user cli): service id -> role. */
  const statusRoles = async () => {
    const run = await runCli(["status", "--json"], nats.env(nats.passwordEnv("cli")));
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout) as StatusReport;
    return new Map(report.instances.filter((i) => i.name === "approvals").map((i) => [i.id, i.role]));
  };

  before(async () => {
    nats = await TestNats.start();
    ws = realpathSync(mkdtempSync(join(tmpdir(), "lurk-approval-standby-ws-")));
    const file = {
      tools: { timeoutMs: 20_000, exec: { ask: "always", ...(existsSync(BWRAP) ? {} : { allowUnsandboxed: true }) } },
      approvals: { timeoutMs: 60_000, leaseTtlMs: 2_000, leaseRenewMs: 500 },
    };
    writeFileSync(join(nats.home, "config.json"), JSON.stringify(file));
    // host C's own home (config, data dir and key), for the instance that runs as a process
    hostC = realpathSync(mkdtempSync(join(tmpdir(), "lurk-approval-host-c-")));
    writeFileSync(join(hostC, "config.json"), JSON.stringify(file));
    config = loadConfig(nats.env());
    admin = await nats.connect("admin");
    admin.subscribe(S.eventsOf("approvals"), { callback: (_e, msg) => void (/\.(active|standby)$/.test(msg.subject) && roles.push(msg.subject.split(".").pop()!)) });
    admin.subscribe(S.outbound("cli", "standby-notice"), { callback: (_e, msg) => void notices.push(outboundMessageSchema.parse(safeParseJson(msg.data))) });
    relayWatch = admin.subscribe(S.activeOpAll("approvals"), { callback: (_e, msg) => void relayed.push(msg.subject) });
    await admin.flush();
    first = await startInstance("host-a");
    second = await startInstance("host-b");
    tools = await startActorProcess("tools", nats, { LURKBOT_WORKSPACE: ws });
    cliNc = await nats.connect("cli");
    runnerNc = await nats.connect("agent-runner");
    cli = new BusClient(cliNc);
    runner = new BusClient(runnerNc);
  });

  after(async () => {
    await first?.stop();
    await second?.stop();
    await crashing?.kill();
    await tools?.stop();
    for (const nc of [cliNc, runnerNc, admin]) await nc?.close().catch(() => undefined);
    await nats?.stop();
    for (const dir of [ws, hostC]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("one instance is active; the standby relays requests, long polls included, to it", async () => {
    assert.deepEqual(roles, ["active"], "the second instance found the lease held");
    assert.deepEqual(await statusRoles(), new Map([[first!.service.info().id, "active"], [second!.service.info().id, "standby"]]), "lurkbot status tells them apart");
    const { approval, token } = await runApproved("first");
    assert.ok(verifyApprovalToken(keyOf(first!), token), "signed by the active instance");
    // the services framework spreads requests over both instances: the standby relays its share
    const answers = await Promise.all(Array.from({ length: 20 }, () => get(approval.approvalId)));
    assert.ok(answers.every((a) => a.usedAt !== undefined), "every answer is the active instance's record");
    assert.ok(relayed.length > 0, "some requests went through the standby's relay");
    assert.ok(relayed.every((s) => s.startsWith(`${S.prefix}.approvals.active.`)));
    // waits held at the active instance end when the approval is decided, wherever they came in
    const asked = (await ask("sb-wait", { command: "ls" })).approval;
    const started = Date.now();
    const waits = Array.from({ length: 8 }, () => cli.call("approvals", "wait", { approvalId: asked.approvalId, waitMs: 20_000 }, { timeoutMs: 25_000 }));
    await new Promise((r) => setTimeout(r, 300));
    await decide(asked.approvalId, "approve");
    const woken = await Promise.all(waits);
    assert.ok(woken.every((w) => w.approval.status === "approved" && w.token), JSON.stringify(woken.map((w) => w.approval.status)));
    assert.ok(Date.now() - started < 5_000, "woken by the decision, not by their timeout");
    // one notice per request, sent by the active instance
    for (let i = 0; i < 4; i++) await ask(`sb-notice-${i}`, { command: `ls ${i}` }, { channel: "cli", conversation: "standby-notice", messageIds: [`in-${i}`] });
    await waitFor(() => notices.length >= 4, 5_000, "the notices");
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(new Set(notices.map((m) => m.approval?.approvalId)).size, 4);
    assert.equal(notices.length, 4);
  });

  it("a clean stop: the standby takes over at once with the records", async () => {
    fromFirst = await makeRecords("a");
    const oldKey = keyOf(first!);
    await first!.stop(); // gives the lease up
    first = undefined;
    await waitFor(() => activations() === 2, 5_000, "the standby to take the lease");
    assert.deepEqual(await statusRoles(), new Map([[second!.service.info().id, "active"]]));
    await recordsSurvived(fromFirst, oldKey, keyOf(second!));
  });

  it("a crash: a standby takes over with the records", async () => {
    // host C (a process, to be killed) takes over from B; A comes back as a standby with its older copy
    crashing = await startActorProcess("approvals", nats, { LURKBOT_HOME: hostC });
    await second!.stop();
    second = undefined;
    await waitFor(() => activations() === 3, 5_000, "host C to take the lease");
    first = await startInstance("host-a");
    const rows = await statusRoles();
    assert.deepEqual([...rows.values()].sort(), ["active", "standby"]);
    assert.equal(rows.get(first.service.info().id), "standby");
    const keyC = keyInFile(join(hostC, "data"));
    // the tools actor learns host C's key (started after it gathered the keys) from its first token
    const atC = await makeRecords("c");
    // C's process is gone (same host here: A sees its pid and service instance gone and takes the lease at once)
    await crashing!.kill();
    crashing = undefined;
    await waitFor(() => activations() === 4, 10_000, "host A to take the lease");
    assert.equal((await get(fromFirst.pending.approvalId)).status, "approved", "decided at B while A was away: A's older copy was replaced");
    await recordsSurvived(atC, keyC, keyOf(first));
  });

  it("a standby with no active instance answers UNAVAILABLE and what to do; it takes over once the lease lapses", async () => {
    relayWatch?.unsubscribe();
    await first!.stop();
    first = undefined;
    // a holder cut off without giving the lease up (another host, or a process that lives): its TTL counts
    const ghost = await Lease.open(admin, { key: "approvals", holder: "ghost", ttlMs: 3_000 });
    assert.equal(await ghost.acquire(), true);
    const takenAt = Date.now();
    second = await startInstance("host-b");
    await assert.rejects(get(fromFirst.denied.approvalId), (err: { code?: string; message?: string }) =>
      err.code === "UNAVAILABLE" && /no approvals instance is active right now .*retry in a few seconds/.test(err.message ?? ""));
    const back = await waitFor(() => get(fromFirst.used.approvalId).catch(() => undefined), 10_000, "the instance to take the lapsed lease");
    assert.ok(Date.now() - takenAt >= 2_500, "not before the lease lapsed");
    assert.ok(back.usedAt !== undefined);
  });
});
