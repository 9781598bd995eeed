/**
 * A TCP proxy in front of the test nats-server that can lose a client's JetStream acks, as a
 * network would: while `dropAcks` is true, every `PUB`/`HPUB` the client sends to `$JS.ACK.…`
 * is left out; everything else (its other publishes, KV writes, subscriptions) passes
 * unchanged in both directions. For plain-text (no TLS) connections only.
 */
import { createServer, connect as tcpConnect, type Server, type Socket } from "node:net";

const CRLF = Buffer.from("\r\n");

export class AckDroppingProxy {
  dropAcks = false;
  /** acks left out so far */
  dropped = 0;
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server, readonly url: string) {}

  static async start(target: { host: string; port: number }): Promise<AckDroppingProxy> {
    let self!: AckDroppingProxy;
    const server = createServer((client) => self.pipe(client, target));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    self = new AckDroppingProxy(server, `nats://127.0.0.1:${port}`);
    return self;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private pipe(client: Socket, target: { host: string; port: number }): void {
    const upstream = tcpConnect(target.port, target.host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => {
        this.sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.pipe(client);
    let pending: Buffer = Buffer.alloc(0);
    client.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      pending = this.forward(pending, upstream);
    });
  }

  /** Forwards the complete protocol operations in `buf`; returns the incomplete rest. */
  private forward(buf: Buffer, upstream: Socket): Buffer {
    let at = 0;
    for (;;) {
      const eol = buf.indexOf(CRLF, at);
      if (eol < 0) break;
      const line = buf.subarray(at, eol).toString();
      const [op, subject] = line.split(" ");
      let end = eol + 2;
      if (op === "PUB" || op === "HPUB") {
        const size = Number(line.split(" ").at(-1));
        if (buf.length < end + size + 2) break; // the payload is not all here yet
        end += size + 2;
      }
      if ((op === "PUB" || op === "HPUB") && this.dropAcks && subject?.startsWith("$JS.ACK.")) this.dropped++;
      else upstream.write(buf.subarray(at, end));
      at = end;
    }
    return buf.subarray(at);
  }
}
