/**
 * Whether the holder of a live lease (lease.ts) is a dead process of this host, e.g. the actor
 * crashed and was restarted here: then the restarted instance takes the lease at once instead of
 * waiting for its TTL. Dead means both: no process with the holder's pid on this host, and no
 * answer but "no responders" from its service instance (`$SRV.PING.<actor>.<instance>`). A holder
 * on another host, one whose process lives (also in another pid namespace under the same host
 * name) or one whose connection is merely quiet (a timeout) is never taken for dead.
 */
import { hostname } from "node:os";
import type { NatsConnection } from "@nats-io/transport-node";
import { isNoResponders } from "./client.js";
import type { LeaseHolder } from "./lease.js";

const PING_TIMEOUT_MS = 1_000;

export function deadLocalHolder(nc: NatsConnection, actor: string): (holder: Omit<LeaseHolder, "live">) => Promise<boolean> {
  return async (holder) => {
    if (holder.host !== hostname() || !holder.pid || !holder.instance || processExists(holder.pid)) return false;
    try {
      await nc.request(`$SRV.PING.${actor}.${holder.instance}`, "", { timeout: PING_TIMEOUT_MS });
      return false;
    } catch (err) {
      return isNoResponders(err);
    }
  };
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== "ESRCH"; // EPERM: it exists, as another user
  }
}
