/**
 * A sync gap's catch-up. A room whose /sync timeline is `limited` (more new events than the
 * filter's limit, e.g. after downtime) holds only the newest of them; the older ones are fetched
 * here, paging back from the timeline's `prev_batch` with `GET /rooms/{roomId}/messages?dir=b`
 * (the timeline filter's event types) until the previous sync position: the page reaches `to`
 * (the previous `next_batch`, which Synapse honours) or the room's last event already taken
 * (`stopAt`, for a server that ignores `to`), or the history ends. At most `max` events are taken
 * per room and gap; `skipped` says older ones were left (the caller warns). The events are
 * returned oldest first. A homeserver error throws (the batch is taken again).
 */
import type { MatrixApi } from "./api.js";
import { roomEventSchema, type RoomEvent } from "./wire.js";

/** events asked for per /messages page */
const PAGE = 100;

export interface GapRequest {
  roomId: string;
  /** the limited timeline's `prev_batch` */
  from: string;
  /** the previous sync's `next_batch` */
  to: string | undefined;
  /** the last event of the room taken before this batch */
  stopAt: string | undefined;
  max: number;
  filter: unknown;
  signal?: AbortSignal;
}

export interface Gap {
  /** oldest first */
  events: RoomEvent[];
  /** more events were in the gap than `max`: the oldest were not taken */
  skipped: boolean;
  /** how many /messages pages were read */
  pages: number;
}

export async function fetchGap(api: MatrixApi, req: GapRequest): Promise<Gap> {
  const newestFirst: RoomEvent[] = [];
  let from = req.from;
  let pages = 0;
  // one more than max: whether the gap holds more than max
  while (newestFirst.length <= req.max) {
    const page = await api.messages(req.roomId, { from, to: req.to, limit: Math.min(PAGE, req.max + 1 - newestFirst.length), filter: req.filter, ...(req.signal ? { signal: req.signal } : {}) });
    pages++;
    let reached = false;
    for (const raw of page.chunk) {
      const ev = roomEventSchema.safeParse(raw);
      if (!ev.success) continue;
      if (req.stopAt !== undefined && ev.data.event_id === req.stopAt) {
        reached = true;
        break;
      }
      newestFirst.push(ev.data);
    }
    if (reached || page.chunk.length === 0 || !page.end || page.end === from) break;
    from = page.end;
  }
  const skipped = newestFirst.length > req.max;
  return { events: newestFirst.slice(0, req.max).reverse(), skipped, pages };
}
