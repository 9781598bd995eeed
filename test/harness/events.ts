/** An actor's lifecycle events (`lurk.evt.<actor>.*`), collected as they arrive, for assertions. */
import type { NatsConnection } from "@nats-io/transport-node";
import { actorEventSchema, safeParseJson, subjects } from "../../shared/contract/index.js";

export interface SeenActorEvent {
  event: string;
  /** the pid of the instance that emitted it */
  pid: number;
  ts: number;
  data: Record<string, unknown>;
}

/** Subscribes on `nc` (flushed before it returns); the array fills while the connection is open. */
export async function collectActorEvents(nc: NatsConnection, actor: string): Promise<SeenActorEvent[]> {
  const events: SeenActorEvent[] = [];
  nc.subscribe(subjects().eventsOf(actor), {
    callback: (_e, m) => {
      const ev = actorEventSchema.parse(safeParseJson(m.data));
      events.push({ event: ev.event, pid: ev.instance.pid, ts: ev.ts, data: ev.data as Record<string, unknown> });
    },
  });
  await nc.flush();
  return events;
}
