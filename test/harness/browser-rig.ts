/**
 * The browser tests' rig: a nats-server with the browser actor (and, when asked, the tools and
 * approvals actors) on a config of the test's own, and calls made as the agent-runner makes
 * them (`lurk.tools.call.<tool>`, agent "main" in its main session unless `extra` says else).
 * `refOf` finds an element's ref in a snapshot.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { toolCallReply, type ToolCallReply } from "../../shared/contract/index.js";
import { BusClient } from "../../shared/runtime/client.js";
import { startActorProcess, type ActorProcess } from "./actors.js";
import { TestNats } from "./nats.js";
import { textOf } from "./tools-actor.js";

/** A nats-server with the browser actor (and the given others) and its config. */
export class BrowserRig {
  nats!: TestNats;
  browser!: ActorProcess;
  runner!: NatsConnection;
  bus!: BusClient;
  private readonly actors: ActorProcess[] = [];
  private n = 0;

  /** `browserEnv`: extra environment of the browser actor's process (e.g. TMPDIR) */
  async start(config: Record<string, unknown>, others: ("approvals" | "tools")[] = [], browserEnv: Record<string, string> = {}): Promise<this> {
    this.nats = await TestNats.start();
    writeFileSync(join(this.nats.home, "config.json"), JSON.stringify(config));
    for (const name of others) this.actors.push(await startActorProcess(name, this.nats));
    this.browser = await startActorProcess("browser", this.nats, browserEnv);
    this.actors.push(this.browser);
    this.runner = await this.nats.connect("agent-runner");
    this.bus = new BusClient(this.runner);
    return this;
  }

  call(tool: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<ToolCallReply> & { toolCallId: string } {
    const toolCallId = `b-${++this.n}`;
    const reply = this.bus.callSubject(`lurk.tools.call.${tool}`, "lurk.tools.call.v1", {
      toolCallId, runId: "run-browser", sessionKey: "agent:main:main", agentId: "main", tool, args, ...extra,
    }, toolCallReply, { timeoutMs: 90_000 });
    return Object.assign(reply, { toolCallId });
  }

  async ok(args: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<string> {
    const reply = await this.call("browser", args, extra);
    assert.equal(reply.isError, false, textOf(reply));
    return textOf(reply);
  }

  /** Stops the browser actor and starts it again (same home, same config). */
  async restartBrowser(browserEnv: Record<string, string> = {}): Promise<void> {
    await this.browser.stop();
    this.actors.splice(this.actors.indexOf(this.browser), 1);
    this.browser = await startActorProcess("browser", this.nats, browserEnv);
    this.actors.push(this.browser);
  }

  async stop(): Promise<void> {
    await this.runner?.close().catch(() => undefined);
    for (const a of [...this.actors].reverse()) await a.stop();
    await this.nats?.stop();
  }
}

/** The ref on the first line of a snapshot matching `line`. */
export const refOf = (text: string, line: RegExp): string => {
  const found = text.split("\n").find((l) => line.test(l));
  const ref = found && /\[ref=((?:f\d+)?e\d+)\]/.exec(found)?.[1];
  assert.ok(ref, `a ref on a line matching ${line} in:\n${text}`);
  return ref;
};
