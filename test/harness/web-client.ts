/** A WebSocket client of the web channel's page protocol, for tests: the frames it got, in order. */
import { jetstreamManager } from "@nats-io/jetstream";
import { WebSocket } from "ws";
import { inboundMessageSchema, STREAMS, subjects, type InboundMessage } from "../../shared/contract/index.js";
import { waitFor } from "./actors.js";
import type { TestSystem } from "./system.js";

export type Frame = Record<string, any> & { type: string };

export class WebClient {
  readonly frames: Frame[] = [];
  closed: { code: number; reason: string } | undefined;

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (d) => this.frames.push(JSON.parse(String(d)) as Frame));
    ws.on("close", (code, reason) => (this.closed = { code, reason: String(reason) }));
  }

  /** Connected and, unless `token` is null, said hello with it. */
  static async connect(port: number, token: string | null): Promise<WebClient> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
    await new Promise<void>((resolve, reject) => { ws.once("open", () => resolve()); ws.once("error", reject); });
    const client = new WebClient(ws);
    if (token !== null) client.send({ type: "hello", token });
    return client;
  }

  /** Connected, ready, with `chat` open and its canvas frame received. */
  static async open(port: number, token: string, chat: string): Promise<WebClient> {
    const c = await WebClient.connect(port, token);
    await c.next((f) => f.type === "ready", "ready");
    c.send({ type: "open", chat, since: 0 });
    await c.next((f) => f.type === "canvas" && f.chat === chat, "the chat's canvas after open");
    return c;
  }

  send(frame: object): void {
    this.ws.send(JSON.stringify(frame));
  }

  next(pred: (f: Frame) => boolean, what: string, timeoutMs = 20_000): Promise<Frame> {
    return waitFor(() => this.frames.find(pred), timeoutMs, what);
  }

  /** the newest canvas frame after the first `count` frames */
  canvasAfter(count: number, what: string): Promise<Frame> {
    return waitFor(() => this.frames.slice(count).reverse().find((f) => f.type === "canvas"), 20_000, what);
  }

  close(): void {
    this.ws.close();
  }
}

/** The newest inbound message the web channel stored in LURK_INBOUND (undefined when there is none). */
export async function lastWebInbound(system: TestSystem): Promise<InboundMessage | undefined> {
  const admin = await system.nats.connect("admin");
  try {
    const m = await (await jetstreamManager(admin)).streams.getMessage(STREAMS.inbound, { last_by_subj: subjects().inbound("web") });
    return inboundMessageSchema.parse(m!.json());
  } catch {
    return undefined;
  } finally {
    await admin.close();
  }
}
