/** A WebSocket client of the web channel's page protocol, for tests: the frames it got, in order. */
import { WebSocket } from "ws";
import { waitFor } from "./actors.js";

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
