/**
 * The approvals and tools actors as processes on their own nats-server, for approval and tool
 * cancellation tests: a temporary workspace (the tools actor's), the test's config.json, and
 * connections as the agent-runner and cli users with their BusClients. `stop` closes every
 * connection the rig opened, stops every actor it started (newest first) and the server, and
 * removes the workspace; it is safe after a `start` that failed part way.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { BusClient } from "../../shared/runtime/client.js";
import { startActorProcess, startModuleActor, type ActorProcess } from "./actors.js";
import { TestNats } from "./nats.js";

export class ApprovalRig {
  nats!: TestNats;
  ws!: string;
  approvals!: ActorProcess;
  tools!: ActorProcess;
  runnerNc!: NatsConnection;
  runnerBus!: BusClient;
  cliNc!: NatsConnection;
  cli!: BusClient;
  private readonly processes: ActorProcess[] = [];
  private readonly conns: NatsConnection[] = [];

  /** `streams: false` starts the server without the JetStream streams */
  async start(config: Record<string, unknown>, opts: { streams?: boolean } = {}): Promise<void> {
    this.ws = realpathSync(mkdtempSync(join(tmpdir(), "lurk-approval-ws-")));
    this.nats = await TestNats.start(opts.streams === false ? { streams: false } : {});
    writeFileSync(join(this.nats.home, "config.json"), JSON.stringify(config));
    this.approvals = await this.startActor("approvals");
    this.tools = await this.startActor("tools");
    this.runnerNc = await this.connect("agent-runner");
    this.cliNc = await this.connect("cli");
    this.runnerBus = new BusClient(this.runnerNc);
    this.cli = new BusClient(this.cliNc);
  }

  /** Another instance of an actor (the tools actor works in the rig's workspace), stopped with the rig. */
  async startActor(name: "approvals" | "tools"): Promise<ActorProcess> {
    const actor = await startActorProcess(name, this.nats, name === "tools" ? { LURKBOT_WORKSPACE: this.ws } : {});
    this.processes.push(actor);
    return actor;
  }

  /** A fixture actor (see startModuleActor), stopped with the rig. */
  async startModule(relativeMain: string, user: string, env: Record<string, string> = {}): Promise<ActorProcess> {
    const actor = await startModuleActor(relativeMain, user, this.nats, env);
    this.processes.push(actor);
    return actor;
  }

  /** A connection as `user`, closed with the rig. */
  async connect(user: string): Promise<NatsConnection> {
    const nc = await this.nats.connect(user);
    this.conns.push(nc);
    return nc;
  }

  async stop(): Promise<void> {
    for (const nc of this.conns) await nc.close().catch(() => undefined);
    for (const actor of [...this.processes].reverse()) await actor.stop();
    await this.nats?.stop();
    if (this.ws) rmSync(this.ws, { recursive: true, force: true });
  }
}
