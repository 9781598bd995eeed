/**
 * The `process` tool over the bus: background jobs in the exec sandbox, in a real tools actor
 * process on a real nats-server. start/poll (new output since the last poll, exit codes),
 * write to stdin, log paging, kill (nothing left behind), the deadline, the job cap, session
 * ownership, and two tools instances: a call about a job that reaches the other instance is
 * forwarded to the owner; when the owner stops, its jobs are killed and calls say NOT_FOUND.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { safeParseJson, toolCallReply, toolJobsListReply, type ToolCallReply } from "../shared/contract/index.js";
import { BusClient } from "../shared/runtime/client.js";
import { parseConfig } from "../shared/runtime/config.js";
import { callNeedsApproval } from "../services/tools/approval-gate.js";
import { processTool } from "../services/tools/tools/process.js";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { startToolsActor, textOf, type ToolsActorUnderTest } from "./harness/tools-actor.js";

const BWRAP = "/usr/bin/bwrap";

/** pids of processes whose command line mentions `marker` */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      readlinkSync(`/proc/${entry}/cwd`);
      if (cmdline.includes(marker)) found.push(Number(entry));
    } catch {
      // gone, or a zombie
    }
  }
  return found;
}

describe("process: background jobs", () => {
  let sut: ToolsActorUnderTest;
  let ws: string;
  let n = 0;
  const call = (args: Record<string, unknown>, sessionKey = "agent:main:main", client?: BusClient): Promise<ToolCallReply> =>
    (client ?? sut.client).callSubject("lurk.tools.call.process", "lurk.tools.call.v1", {
      toolCallId: `proc-${++n}`, runId: "run-proc", sessionKey, agentId: "main", tool: "process", args,
    }, toolCallReply, { timeoutMs: 40_000 });
  const ok = async (args: Record<string, unknown>) => {
    const reply = await call(args);
    assert.equal(reply.isError, false, textOf(reply));
    return textOf(reply);
  };
  const start = async (command: string, extra: Record<string, unknown> = {}) => {
    const text = await ok({ action: "start", command, ...extra });
    const jobId = /started background job (job-[a-z0-9]+-\d+)/.exec(text)?.[1];
    assert.ok(jobId, text);
    return jobId;
  };

  before(async () => {
    ws = realpathSync(mkdtempSync(join(tmpdir(), "lurk-proc-ws-")));
    sut = await startToolsActor(ws, {
      tools: { outputCapBytes: 4096, timeoutMs: 20_000, jobs: { maxJobs: 3 }, exec: existsSync(BWRAP) ? {} : { allowUnsandboxed: true } },
    });
  });
  after(async () => {
    await sut?.stop();
    rmSync(ws, { recursive: true, force: true });
  });

  it("start returns a job id at once; poll shows new output since the last poll and the exit code", async () => {
    const began = Date.now();
    const jobId = await start("echo hello; sleep 0.5; echo world; exit 3");
    assert.ok(Date.now() - began < 5_000);
    const first = await call({ action: "poll", jobId, waitSeconds: 10 });
    assert.match(textOf(first), /exited with code 3/);
    assert.match(textOf(first), /hello\nworld/);
    assert.equal(first.isError, true, "a non-zero exit is an error result");
    assert.equal(first.errorCode, "TOOL_FAILED");
    const second = await call({ action: "poll", jobId });
    assert.match(textOf(second), /\(no new output\)/);
    const log = readFileSync(join(ws, ".lurkbot", "jobs", `${jobId}.log`), "utf8");
    assert.equal(log, "hello\nworld\n");
  });

  it("runs in the sandbox's clean environment", async () => {
    const jobId = await start("env; echo done");
    const text = await ok({ action: "poll", jobId, waitSeconds: 10 });
    assert.match(text, /done/);
    assert.doesNotMatch(text, /LURKBOT|NATS/);
    assert.match(text, new RegExp(`HOME=${ws}`));
  });

  it("write sends stdin; eof closes it and the job ends", async () => {
    const jobId = await start('while read -r line; do echo "got:$line"; done; echo bye');
    assert.match(await ok({ action: "write", jobId, data: "abc\n" }), /wrote 4 bytes/);
    const seen = await waitFor(async () => {
      const text = textOf(await call({ action: "poll", jobId }));
      return text.includes("got:abc") ? text : undefined;
    }, 10_000, "the echoed line");
    assert.match(seen, /running/);
    await ok({ action: "write", jobId, data: "xyz\n", eof: true });
    const done = await ok({ action: "poll", jobId, waitSeconds: 10 });
    assert.match(done, /exited with code 0/);
    assert.match(done, /got:xyz\nbye/);
    assert.doesNotMatch(done, /got:abc/, "poll shows only what is new");
    const refused = await call({ action: "write", jobId, data: "late\n" });
    assert.equal(refused.isError, true);
    assert.equal(refused.errorCode, "CONFLICT");
  });

  it("log pages through the whole output by lines", async () => {
    const jobId = await start("seq 1 5000");
    await ok({ action: "poll", jobId, waitSeconds: 10 });
    const page = await ok({ action: "log", jobId, offset: 100, limit: 3 });
    assert.match(page, /^\s+100\t100\n\s+101\t101\n\s+102\t102\n/m);
    assert.match(page, /read on with offset=103/);
    const end = await ok({ action: "log", jobId, offset: 4999 });
    assert.match(end, /4999\t4999\n\s+5000\t5000\n$/);
    // poll output is capped: the rest is announced
    const capped = textOf(await call({ action: "poll", jobId: await start("seq 1 5000"), waitSeconds: 10 }));
    assert.match(capped, /more bytes of output: poll again/);
  });

  it("kill stops the job and everything it started", async () => {
    const jobId = await start("sleep 311 & sleep 312; echo never");
    await waitFor(() => processesWith("sleep 312").length > 0, 10_000, "the job's sleep");
    assert.match(await ok({ action: "kill", jobId }), /was killed/);
    await waitFor(() => processesWith("sleep 311").length === 0 && processesWith("sleep 312").length === 0, 10_000, "no sleep left");
    const polled = await call({ action: "poll", jobId });
    assert.match(textOf(polled), /killed/);
    assert.doesNotMatch(textOf(polled), /never/);
  });

  it("the deadline kills a job (TIMEOUT)", async () => {
    const jobId = await start("sleep 313", { timeoutSeconds: 1 });
    const polled = await call({ action: "poll", jobId, waitSeconds: 10 });
    assert.match(textOf(polled), /killed at its deadline/);
    assert.equal(polled.errorCode, "TIMEOUT");
    await waitFor(() => processesWith("sleep 313").length === 0, 5_000, "no sleep left");
  });

  it("caps the number of jobs; finished ones make room", async () => {
    // the earlier jobs have finished: they are forgotten to make room
    const jobs = [await start("sleep 321"), await start("sleep 322"), await start("sleep 323")];
    const refused = await call({ action: "start", command: "sleep 324" });
    assert.equal(refused.isError, true);
    assert.equal(refused.errorCode, "LIMIT_EXCEEDED");
    const listed = await ok({ action: "list" });
    for (const id of jobs) assert.match(listed, new RegExp(`${id}\\s+running`));
    for (const jobId of jobs) await ok({ action: "kill", jobId });
    const again = await start("true");
    assert.ok(again);
  });

  it("a job belongs to its session: another session gets NOT_FOUND", async () => {
    const jobId = await start("sleep 331");
    const other = await call({ action: "poll", jobId }, "agent:main:dm:someone");
    assert.equal(other.errorCode, "NOT_FOUND");
    assert.doesNotMatch(await (async () => textOf(await call({ action: "list" }, "agent:main:dm:someone")))(), new RegExp(jobId));
    const bogus = await call({ action: "poll", jobId: "job-zzz-1" });
    assert.equal(bogus.errorCode, "NOT_FOUND");
    await ok({ action: "kill", jobId });
  });

  describe("with a second tools instance", () => {
    let second: ActorProcess;
    let toolsNc: NatsConnection;

    let firstId = "";
    before(async () => {
      toolsNc = await sut.nats.connect("tools");
      firstId = await waitFor(async () => [...(await instances()).keys()][0], 10_000, "the first instance's id");
      second = await startActorProcess("tools", sut.nats, { LURKBOT_WORKSPACE: ws });
    });
    after(async () => {
      await toolsNc?.close();
      await second?.stop();
    });

    /** instance id -> that instance's jobs of agent:main:main */
    const instances = async () => {
      const request = { type: "lurk.tools.jobs.list.v1", id: `t-${Date.now()}`, ts: Date.now(), agentId: "main", sessionKey: "agent:main:main" };
      const found = new Map<string, string[]>();
      for await (const msg of await toolsNc.requestMany("lurk.tools.jobs.list", JSON.stringify(request), { strategy: "timer", maxWait: 500 })) {
        const reply = toolJobsListReply.parse(safeParseJson(msg.data));
        found.set(reply.instanceId, reply.jobs.map((j) => j.jobId));
      }
      return found;
    };

    it("a call that reaches the other instance is forwarded to the job's owner", async () => {
      const ids = await waitFor(async () => ((await instances()).size === 2 ? await instances() : undefined), 10_000, "two instances");
      const jobId = await start('while read -r l; do echo "echo:$l"; done');
      const owner = /^job-([a-z0-9]+)-/.exec(jobId)![1]!;
      const other = [...ids.keys()].find((id) => id !== owner)!;
      assert.ok(other, "there is another instance");
      // a process call sent straight to the other instance: it forwards it to the owner
      const viaOther = (args: Record<string, unknown>) => new BusClient(toolsNc).callSubject(`lurk.tools.job.${other}`, "lurk.tools.call.v1", {
        toolCallId: `proc-fwd-${++n}`, runId: "run-proc", sessionKey: "agent:main:main", agentId: "main", tool: "process", args,
      }, toolCallReply, { timeoutMs: 20_000 });
      const wrote = await viaOther({ action: "write", jobId, data: "routed\n" });
      assert.equal(wrote.isError, false, textOf(wrote));
      const seen = await waitFor(async () => {
        const text = textOf(await viaOther({ action: "poll", jobId }));
        return text.includes("echo:routed") ? text : undefined;
      }, 10_000, "the routed line");
      assert.match(seen, /running/);
      // list through either instance shows it once
      for (let i = 0; i < 4; i++) {
        const listed = await ok({ action: "list" });
        assert.equal(listed.split(jobId).length - 1, 1, listed);
      }
      await ok({ action: "kill", jobId });
    });

    it("when the owner stops, its jobs are killed and calls about them are NOT_FOUND", async () => {
      const secondId = await waitFor(async () => [...(await instances()).keys()].find((id) => id !== firstId), 10_000, "the second instance's id");
      // a start sent straight to the second instance runs there
      const started = await new BusClient(toolsNc).callSubject(`lurk.tools.job.${secondId}`, "lurk.tools.call.v1", {
        toolCallId: `proc-direct-${++n}`, runId: "run-proc", sessionKey: "agent:main:main", agentId: "main", tool: "process",
        args: { action: "start", command: "sleep 341 & sleep 342" },
      }, toolCallReply, { timeoutMs: 20_000 });
      const jobId = /started background job (job-[a-z0-9]+-\d+)/.exec(textOf(started))?.[1] ?? "";
      assert.ok(jobId.includes(secondId), textOf(started));
      await waitFor(() => processesWith("sleep 342").length > 0, 10_000, "the job's sleep");
      await second.stop();
      await waitFor(() => processesWith(`sleep 34`).length === 0, 10_000, "the job was killed with its instance").catch((err) => {
        const left = processesWith("sleep 34").map((pid) => `${pid}: ${readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").slice(0, 200)}`);
        throw new Error(`${(err as Error).message}; left: ${left.join(" | ")}\n${second.output().slice(-3000)}`);
      });
      const gone = await call({ action: "poll", jobId });
      assert.equal(gone.errorCode, "NOT_FOUND");
      assert.match(textOf(gone), /no longer running/);
    });
  });
});

describe("process: approvals", () => {
  it("start asks under exec's rule; the other actions never do", () => {
    const cfg = (exec: Record<string, unknown>) => parseConfig({ tools: { exec } }, {}, "/tmp/lurk-proc-home");
    const onMiss = cfg({ ask: "on-miss", allowlist: ["ls"] });
    assert.equal(callNeedsApproval(onMiss, processTool, { action: "start", command: "npm run dev" }), true);
    assert.equal(callNeedsApproval(onMiss, processTool, { action: "start", command: "ls" }), false);
    assert.equal(callNeedsApproval(cfg({ ask: "always" }), processTool, { action: "poll", jobId: "job-t1-1" }), false);
    assert.equal(callNeedsApproval(cfg({}), processTool, { action: "start", command: "rm -rf x" }), false);
  });
});
