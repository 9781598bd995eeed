/**
 * signal-cli's received messages: `GET <url>/api/v1/events?account=<number>`, server-sent events
 * (`event: receive`, `data: <the receive params as JSON>`, `id:` on newer signal-cli, `:` keep-alives
 * every 15 s). Events are handed to `onEvent` one at a time, in order. The stream reconnects
 * after an end or error with backoff (0.5 s doubling to 30 s, reset once a connection delivers),
 * sending `Last-Event-ID`: the id of the last event handled, so signal-cli (which keeps its last
 * 1000) sends what came after. An event whose handler throws is not passed: the connection is
 * dropped and re-opened from the last handled id, so the event comes again (a signal-cli without
 * event ids cannot replay: that event is logged as lost). Data that is not JSON is logged and
 * skipped; the stream goes on.
 */
import { sleepUnlessAborted } from "../../shared/runtime/abortable-sleep.js";
import type { Logger } from "../../shared/runtime/logger.js";

export interface SseEvent { id?: string; event: string; data: string }

/** Parses a server-sent event stream incrementally (the WHATWG rules LurkBot needs). */
export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private event = "";
  private id: string | undefined;

  /** Feeds a chunk of text; returns the events it completed. */
  push(chunk: string): SseEvent[] {
    this.buffer += chunk;
    const out: SseEvent[] = [];
    let nl: number;
    while ((nl = this.buffer.search(/\r\n|\r|\n/)) !== -1) {
      const line = this.buffer.slice(0, nl);
      const sepLen = this.buffer.startsWith("\r\n", nl) ? 2 : 1;
      // a lone \r at the end may be the first half of \r\n: wait for more
      if (sepLen === 1 && this.buffer[nl] === "\r" && nl === this.buffer.length - 1) break;
      this.buffer = this.buffer.slice(nl + sepLen);
      if (line === "") {
        if (this.data.length > 0) out.push({ ...(this.id !== undefined ? { id: this.id } : {}), event: this.event || "message", data: this.data.join("\n") });
        this.data = [];
        this.event = "";
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "data") this.data.push(value);
      else if (field === "event") this.event = value;
      else if (field === "id" && !value.includes("\0")) this.id = value;
    }
    return out;
  }
}

export interface EventStreamOptions {
  url: string;
  account: string;
  log: Logger;
  signal: AbortSignal;
  /** handles one `receive` event's parsed data; throwing makes the event come again */
  onEvent(data: unknown, id: string | undefined): Promise<void>;
  /** each (re)connection, with how many times it connected before */
  onConnect?(count: number): void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/** Runs until `signal` aborts; resolves then. */
export async function runEventStream(o: EventStreamOptions): Promise<void> {
  const min = o.minBackoffMs ?? 500;
  const max = o.maxBackoffMs ?? 30_000;
  let backoff = min;
  let lastId: string | undefined;
  let connections = 0;
  const url = new URL("/api/v1/events", o.url);
  url.searchParams.set("account", o.account);
  while (!o.signal.aborted) {
    const conn = new AbortController();
    const onAbort = () => conn.abort();
    o.signal.addEventListener("abort", onAbort, { once: true });
    let delivered = false;
    try {
      const res = await fetch(url, { headers: { accept: "text/event-stream", ...(lastId !== undefined ? { "last-event-id": lastId } : {}) }, signal: conn.signal });
      if (res.status !== 200 || !res.body) {
        await res.body?.cancel().catch(() => undefined);
        throw new Error(`HTTP ${res.status} from ${url.pathname}`);
      }
      o.onConnect?.(connections++);
      o.log.info({ resumeAfter: lastId ?? null }, "signal event stream connected");
      const parser = new SseParser();
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        for (const ev of parser.push(decoder.decode(chunk, { stream: true }))) {
          if (ev.event !== "receive") {
            if (ev.id !== undefined) lastId = ev.id;
            continue;
          }
          let data: unknown;
          try {
            data = JSON.parse(ev.data);
          } catch {
            o.log.warn({ eventId: ev.id ?? null, bytes: ev.data.length }, "malformed signal event (not JSON): skipped");
            if (ev.id !== undefined) lastId = ev.id;
            continue;
          }
          try {
            await o.onEvent(data, ev.id);
          } catch (err) {
            if (ev.id === undefined) o.log.error({ err }, "a signal message could not be stored and signal-cli gives no event ids to ask for it again: it is lost");
            else o.log.warn({ err, eventId: ev.id }, "a signal message could not be stored; reconnecting to receive it again");
            throw err;
          }
          if (ev.id !== undefined) lastId = ev.id;
          delivered = true;
          backoff = min;
        }
      }
      if (!o.signal.aborted) o.log.warn("signal event stream ended; reconnecting");
    } catch (err) {
      if (o.signal.aborted) break;
      o.log.warn({ error: (err as Error)?.message ?? String(err), retryInMs: backoff }, "signal event stream failed; reconnecting");
    } finally {
      conn.abort();
      o.signal.removeEventListener("abort", onAbort);
    }
    if (o.signal.aborted) break;
    await sleepUnlessAborted(backoff, o.signal);
    if (!delivered) backoff = Math.min(max, backoff * 2);
  }
}
