/**
 * A local webhook callback receiver (node:http): records every POST (headers, raw body, parsed
 * JSON) and answers by a scriptable rule per request: a status, or "hang" (never answer until
 * `releaseHung()`). Used by the channel kit and webhook tests.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import { closeLoopback, listenLoopback, readBody, sendJson } from "./http.js";

export interface ReceivedCallback {
  headers: IncomingHttpHeaders;
  raw: string;
  body: any;
  status: number | "hang";
}

/** a status, "hang", or a status with response headers (e.g. Retry-After) */
export type Answer = number | "hang" | { status: number; headers: Record<string, string> };

export class WebhookReceiver {
  readonly received: ReceivedCallback[] = [];
  private readonly hung: ServerResponse[] = [];
  /** decides the answer of each request (default 200) */
  answer: (body: any, nth: number) => Answer = () => 200;

  private constructor(private readonly server: Server, readonly url: string) {}

  static async start(): Promise<WebhookReceiver> {
    let receiver!: WebhookReceiver;
    const server = createServer((req, res) => {
      void readBody(req).then((raw) => {
        let body: any = null;
        try { body = JSON.parse(raw); } catch { /* recorded raw */ }
        const answer = receiver.answer(body, receiver.received.length);
        const status = typeof answer === "object" ? answer.status : answer;
        receiver.received.push({ headers: req.headers, raw, body, status });
        if (status === "hang") receiver.hung.push(res);
        else sendJson(res, status, { ok: status < 300 }, typeof answer === "object" ? answer.headers : {});
      }, () => undefined);
    });
    receiver = new WebhookReceiver(server, `${await listenLoopback(server)}/callback`);
    return receiver;
  }

  /** callbacks whose body matches */
  matching(pred: (body: any) => boolean): ReceivedCallback[] {
    return this.received.filter((r) => pred(r.body));
  }

  releaseHung(): void {
    for (const res of this.hung.splice(0)) res.destroy();
  }

  async close(): Promise<void> {
    this.releaseHung();
    await closeLoopback(this.server);
  }
}
