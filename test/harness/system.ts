/**
 * The whole system for end-to-end tests and the benchmark: a real nats-server, a fake OpenAI
 * server, and every actor as its own process; plus a terminal-channel client on the bus.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  envelope, inboundMsgId, type Attachment, outboundMessageSchema, runIdFor, safeParseJson, subjects, type OutboundMessage,
} from "../../shared/contract/index.js";
import { FakeOpenAIServer, type FakeOpenAIOptions } from "../fakes/openai-server.js";
import { startActorProcess, type ActorProcess } from "./actors.js";
import { TestNats } from "./nats.js";

export const ACTOR_ORDER = ["sessions", "approvals", "tools", "router", "agent-runner"] as const;

export interface SystemOptions {
  fake?: FakeOpenAIOptions;
  env?: Record<string, string>;
  /** files to create in the workspace */
  files?: Record<string, string>;
  /** written to $LURKBOT_HOME/config.json before any actor starts */
  config?: Record<string, unknown>;
}

export class TestSystem {
  readonly actors = new Map<string, ActorProcess>();
  private constructor(readonly nats: TestNats, readonly fake: FakeOpenAIServer, readonly workspace: string, readonly env: Record<string, string>) {}

  static async start(opts: SystemOptions = {}): Promise<TestSystem> {
    const nats = await TestNats.start();
    const fake = await FakeOpenAIServer.start(opts.fake);
    const workspace = join(nats.dir, "workspace");
    mkdirSync(workspace, { recursive: true });
    for (const [name, content] of Object.entries(opts.files ?? {})) writeFileSync(join(workspace, name), content);
    if (opts.config) writeFileSync(join(nats.home, "config.json"), JSON.stringify(opts.config));
    const env = {
      LURKBOT_WORKSPACE: workspace,
      LURKBOT_MODEL: "openai/test-model",
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_API_KEY: "sk-test-0123456789abcdef",
      ...opts.env,
    };
    const system = new TestSystem(nats, fake, workspace, env);
    try {
      for (const name of ACTOR_ORDER) await system.startActor(name);
    } catch (err) {
      // leave no actor or nats-server behind when one actor cannot start
      await system.stop().catch(() => undefined);
      throw err;
    }
    return system;
  }

  async startActor(name: string): Promise<ActorProcess> {
    const actor = await startActorProcess(name, this.nats, this.env);
    this.actors.set(name, actor);
    return actor;
  }

  /** Stops every actor started through this system (last started first), the fake LLM and nats-server. */
  async stop(): Promise<void> {
    for (const actor of [...this.actors.values()].reverse()) await actor.stop();
    await this.fake.close();
    await this.nats.stop();
  }
}

/** A terminal-channel client speaking the contract directly (as the `cli` user). */
export class CliClient {
  private readonly replies = new Map<string, OutboundMessage[]>();
  private readonly waiters = new Map<string, (m: OutboundMessage) => void>();
  private readonly s = subjects();

  private constructor(readonly nc: NatsConnection, readonly conversation: string) {}

  static async connect(nats: TestNats, conversation = "main"): Promise<CliClient> {
    const nc = await nats.connect("cli");
    const client = new CliClient(nc, conversation);
    nc.subscribe(client.s.outbound("cli", conversation), {
      callback: (_e, msg) => {
        const out = outboundMessageSchema.parse(safeParseJson(msg.data));
        for (const id of out.replyTo) {
          client.replies.set(id, [...(client.replies.get(id) ?? []), out]);
          client.waiters.get(id)?.(out);
        }
      },
    });
    await nc.flush();
    return client;
  }

  /** Publishes one message (JetStream, deduplicated by id); resolves with its run id once stored. */
  async publish(text: string, opts: { id?: string; sessionName?: string; timeoutMs?: number; attachments?: Attachment[] } = {}): Promise<{ id: string; runId: string }> {
    const id = opts.id ?? randomUUID();
    const msg = envelope("lurk.inbound.message.v1", {
      id, channel: "cli", conversation: this.conversation, peer: { kind: "dm" as const, id: "tester" }, sender: { id: "tester" },
      text, attachments: opts.attachments ?? [], mentioned: false, ...(opts.sessionName ? { sessionName: opts.sessionName } : {}),
    });
    await jetstream(this.nc).publish(this.s.inbound("cli"), JSON.stringify(msg), { msgID: inboundMsgId("cli", id), timeout: opts.timeoutMs ?? 5000 });
    return { id, runId: runIdFor("cli", id) };
  }

  /** Sends and waits for the reply delivered for this message. */
  async send(text: string, opts: { sessionName?: string; timeoutMs?: number; attachments?: Attachment[] } = {}): Promise<OutboundMessage & { runId: string }> {
    const id = randomUUID();
    const reply = new Promise<OutboundMessage>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply to "${text}" within ${opts.timeoutMs ?? 20_000} ms`)), opts.timeoutMs ?? 20_000);
      this.waiters.set(id, (m) => {
        clearTimeout(timer);
        this.waiters.delete(id);
        resolve(m);
      });
    });
    const { runId } = await this.publish(text, { id, ...(opts.sessionName ? { sessionName: opts.sessionName } : {}), ...(opts.attachments ? { attachments: opts.attachments } : {}) });
    return { ...(await reply), runId };
  }

  async close(): Promise<void> {
    await this.nc.close();
  }
}
