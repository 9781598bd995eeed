/**
 * NATS connection for one actor: its own user and password, its own inbox prefix (so no other
 * user can subscribe to its replies), reconnecting forever, waiting for a server at first start.
 * With a `guard` (a launcher's SSH tunnel, port-owner.ts) the password is sent only after it passed.
 */
import { hostname } from "node:os";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { inboxPrefix } from "../contract/index.js";
import type { Logger } from "./logger.js";
import { guardedAuthenticator } from "./port-owner.js";
import { installRequestCancelFix } from "./nats-request-fix.js";

export interface ConnectOptions {
  url: string;
  user: string;
  password: string;
  log?: Logger;
  /** give up after this long if no server answers at start (default: wait forever) */
  firstConnectTimeoutMs?: number;
  /** run before each CONNECT; throwing closes the connection instead of sending the password */
  guard?: () => void;
}

export async function connectActor(opts: ConnectOptions): Promise<NatsConnection> {
  installRequestCancelFix();
  const servers = opts.url.split(",").map((s) => s.trim()).filter(Boolean);
  const nc = await connect({
    servers,
    ...(opts.guard ? { authenticator: guardedAuthenticator(opts.user, opts.password, opts.guard), ignoreClusterUpdates: true } : { user: opts.user, pass: opts.password }),
    name: `${opts.user}@${hostname()}:${process.pid}`,
    inboxPrefix: inboxPrefix(opts.user),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    reconnectJitter: 100,
    pingInterval: 10_000,
    // no stack capture per request: a measurable cost on every bus call
    noAsyncTraces: true,
    waitOnFirstConnect: opts.firstConnectTimeoutMs === undefined,
    timeout: opts.firstConnectTimeoutMs ?? 2_000,
  });
  if (opts.log) watchStatus(nc, opts.log);
  return nc;
}

function watchStatus(nc: NatsConnection, log: Logger): void {
  void (async () => {
    for await (const s of nc.status()) {
      switch (s.type) {
        case "disconnect": log.warn({ server: s.server }, "nats disconnected"); break;
        case "reconnect": log.info({ server: s.server }, "nats reconnected"); break;
        case "error": log.error({ err: s.error }, "nats error"); break;
        case "slowConsumer": log.warn({ subject: s.sub.getSubject(), pending: s.pending }, "slow consumer"); break;
        default: break;
      }
    }
  })().catch(() => undefined);
}
