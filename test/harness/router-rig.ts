/**
 * The router on a real bus with a scripted runner, for router scenario tests: a nats-server
 * with the given config, the named actors as processes, an "admin" connection that records
 * every outbound message, and an "agent-runner" connection that records run controls and
 * answers them (accepting steering while `acceptControls` is true). Run requests are read from
 * the RUNS stream; `finish` publishes a run's terminal event as the runner would.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  envelope, inboundMsgId, outboundMessageSchema, runControlSchema, runIdFor, safeParseJson, subjects,
  type OutboundMessage, type RunControl, type RunRequest,
} from "../../shared/contract/index.js";
import { BusClient } from "../../shared/runtime/client.js";
import { startActorProcess, waitFor, type ActorProcess } from "./actors.js";
import { TestNats } from "./nats.js";
import { removeRunRequest, storedRunRequests } from "./streams.js";

const s = subjects();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type Peer = { kind: "dm" | "group"; id: string };

export class RouterRig {
  nats!: TestNats;
  admin!: NatsConnection;
  runner!: NatsConnection;
  bus!: BusClient;
  readonly outbound: OutboundMessage[] = [];
  readonly controls: RunControl[] = [];
  /** while true, the scripted runner accepts steer and follow-up controls */
  acceptControls = false;
  private readonly actors: ActorProcess[] = [];

  async start(config: Record<string, unknown>, actorNames: readonly string[]): Promise<void> {
    this.nats = await TestNats.start();
    writeFileSync(join(this.nats.home, "config.json"), JSON.stringify(config));
    for (const name of actorNames) this.actors.push(await startActorProcess(name, this.nats));
    this.admin = await this.nats.connect("admin");
    this.runner = await this.nats.connect("agent-runner");
    this.bus = new BusClient(this.admin);
    this.admin.subscribe(s.outboundAll, { callback: (_e, m) => void this.outbound.push(outboundMessageSchema.parse(safeParseJson(m.data))) });
    this.runner.subscribe(s.runControlAll, {
      callback: (_e, m) => {
        const ctl = runControlSchema.parse(safeParseJson(m.data));
        this.controls.push(ctl);
        if (m.reply && ctl.action !== "abort" && this.acceptControls) m.respond(JSON.stringify({ runId: ctl.runId, action: ctl.action, accepted: true }));
      },
    });
    await Promise.all([this.admin.flush(), this.runner.flush()]);
  }

  /** The actor process started as `name` (the latest, after `restart`). */
  actor(name: string): ActorProcess {
    const found = [...this.actors].reverse().find((a) => a.name === name);
    if (!found) throw new Error(`no actor ${name} in this rig`);
    return found;
  }

  /** Starts actor `name` again as a process (after a stop or a kill). */
  async restart(name: string): Promise<ActorProcess> {
    const actor = await startActorProcess(name, this.nats);
    this.actors.push(actor);
    return actor;
  }

  async stop(): Promise<void> {
    await Promise.all([this.admin?.close(), this.runner?.close()]);
    for (const a of this.actors.reverse()) await a.stop();
    await this.nats?.stop();
  }

  /** Publishes an inbound message as a channel would; the run id is the router's. */
  readonly send = async (channel: string, peer: Peer, text: string, opts: { sender?: string; mentioned?: boolean; awaitsAnswer?: boolean } = {}) => {
    const id = randomUUID();
    const msg = envelope("lurk.inbound.message.v1", {
      id, channel, conversation: `c-${peer.id}`, peer, sender: { id: opts.sender ?? "owner" }, text, attachments: [], mentioned: opts.mentioned ?? false,
      ...(opts.awaitsAnswer !== undefined ? { awaitsAnswer: opts.awaitsAnswer } : {}),
    });
    await jetstream(this.admin).publish(s.inbound(channel), JSON.stringify(msg), { msgID: inboundMsgId(channel, id) });
    return { id, runId: runIdFor(channel, id) };
  };

  readonly web = (group: string, text: string, sender = "owner") => this.send("web", { kind: "group", id: group }, text, { sender });
  readonly runRequests = () => storedRunRequests(this.admin);
  readonly runOf = (runId: string, what = "run request") => waitFor(async () => (await this.runRequests()).find((r) => r.runId === runId), 10_000, what);
  readonly noRun = async (runId: string, ms = 800) => {
    await sleep(ms);
    assert.equal((await this.runRequests()).some((r) => r.runId === runId), false, `no run for ${runId}`);
  };
  readonly noticeFor = (messageId: string) => waitFor(() => this.outbound.find((o) => o.replyTo.includes(messageId)), 10_000, "notice");
  /**
   * The run's end as a runner ends it: its request acked (gone from RUNS, a work queue: a router
   * taking over reads the requests still there as runs going on), then its terminal event.
   */
  readonly finish = (req: RunRequest, kind: "done" | "error" = "done"): Promise<void> =>
    // a test may end without waiting for it: once the rig stopped there is nothing to end
    this.end(req, kind).catch((err) => {
      if (!this.admin.isClosed()) throw err;
    });

  private async end(req: RunRequest, kind: "done" | "error"): Promise<void> {
    await removeRunRequest(this.admin, req.runId);
    const event = kind === "done"
      ? { kind: "done" as const, text: "ok", turns: 1, usage: {}, silent: false }
      : { kind: "error" as const, code: "ABORTED", message: "aborted", retryable: false };
    this.runner.publish(s.runEvent(req.runId, kind), JSON.stringify(envelope("lurk.run.event.v1", { runId: req.runId, sessionKey: req.sessionKey, seq: 9, event })));
  }
}
