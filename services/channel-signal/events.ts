/**
 * signal-cli's received messages: `GET <url>/api/v1/events?account=<number>`, server-sent events
 * (`event: receive`, `data: <the receive params as JSON>`, `id:` on newer signal-cli, `:` keep-alives
 * every 15 s). Events are handed to `onEvent` one at a time, in order. The stream reconnects
 * after an end or error with backoff (0.5 s doubling to 30 s, reset once a connection delivers),
 * sending `Last-Event-ID`: the id of the last event handled, so signal-cli (which keeps its last
 * 1000) sends what came after. An event whose handler throws is not passed: the connection is
 * dropped and re-opened from the last handled id, so the event comes again (a signal-cli without
 * event ids cannot replay: that event is logged as lost). Data that is not JSON, and an event or
 * line above SSE_MAX_CHARS (1 Mi characters), are logged and skipped; the stream goes on.
 */
import { sleepUnlessAborted } from "../../shared/runtime/abortable-sleep.js";
import type { Logger } from "../../shared/runtime/logger.js";

/** `dropped`: the event was above the cap and skipped (its size so far, in characters; `data` is empty). */
export interface SseEvent { id?: string; event: string; data: string; dropped?: number }

/** the longest line, and the most data one event may carry (characters): beyond, the event is dropped */
export const SSE_MAX_CHARS = 1024 * 1024;

/**
 * Parses a server-sent event stream incrementally (the WHATWG rules LurkBot needs). Each push
 * scans only the chunk it adds (an unfinished line waits as pieces, joined once it ends), and
 * nothing grows without bound: a line longer than `maxChars`, or an event whose data passes it,
 * is dropped (returned with `dropped`, no data) and parsing resyncs at the next blank line.
 */
export class SseParser {
  /** the unfinished line, in pieces */
  private pieces: string[] = [];
  private piecesChars = 0;
  /** the last chunk ended in \r (a line end): a \n starting the next one belongs to it */
  private afterCr = false;
  private data: string[] = [];
  private dataChars = 0;
  private event = "";
  private id: string | undefined;
  /** the current event is over the cap: skip to the blank line that ends it */
  private dropping = false;
  private droppedChars = 0;
  /** the current line is over the cap: skip to its end */
  private skippingLine = false;

  constructor(private readonly maxChars = SSE_MAX_CHARS) {}

  /** Feeds a chunk of text; returns the events it completed. */
  push(chunk: string): SseEvent[] {
    const out: SseEvent[] = [];
    let start = this.afterCr && chunk.startsWith("\n") ? 1 : 0;
    this.afterCr = false;
    const lineEnd = /\r\n|\r|\n/g;
    lineEnd.lastIndex = start;
    let m: RegExpExecArray | null;
    while ((m = lineEnd.exec(chunk)) !== null) {
      const piece = chunk.slice(start, m.index);
      start = m.index + m[0].length;
      if (m[0] === "\r" && start === chunk.length) this.afterCr = true;
      if (this.skippingLine) {
        this.skippingLine = false;
        this.droppedChars += piece.length;
        continue;
      }
      const line = this.pieces.length ? this.pieces.join("") + piece : piece;
      this.pieces = [];
      this.piecesChars = 0;
      const done = this.line(line);
      if (done) out.push(done);
    }
    const rest = chunk.slice(start);
    if (rest && this.skippingLine) this.droppedChars += rest.length;
    else if (rest) {
      this.pieces.push(rest);
      this.piecesChars += rest.length;
      if (this.piecesChars > this.maxChars) {
        // an over-long line: its text is dropped, and so is its event
        this.droppedChars += this.piecesChars;
        this.pieces = [];
        this.piecesChars = 0;
        this.skippingLine = true;
        this.drop();
      }
    }
    return out;
  }

  private drop(): void {
    this.droppedChars += this.dataChars;
    this.data = [];
    this.dataChars = 0;
    this.dropping = true;
  }

  /** One complete line; returns the event a blank line ends. */
  private line(line: string): SseEvent | undefined {
    if (line === "") {
      let done: SseEvent | undefined;
      if (this.dropping) done = { ...(this.id !== undefined ? { id: this.id } : {}), event: this.event || "message", data: "", dropped: this.droppedChars };
      else if (this.data.length > 0) done = { ...(this.id !== undefined ? { id: this.id } : {}), event: this.event || "message", data: this.data.join("\n") };
      this.data = [];
      this.dataChars = 0;
      this.event = "";
      this.dropping = false;
      this.droppedChars = 0;
      return done;
    }
    if (line.length > this.maxChars) {
      this.droppedChars += line.length;
      this.drop();
      return undefined;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "data") {
      if (this.dropping) {
        this.droppedChars += value.length + 1;
        return undefined;
      }
      this.dataChars += value.length + 1;
      this.data.push(value);
      if (this.dataChars > this.maxChars) this.drop();
    } else if (field === "event") this.event = value;
    else if (field === "id" && !value.includes("\0")) this.id = value;
    return undefined;
  }
}

export interface EventStreamOptions {
  url: string;
  account: string;
  log: Logger;
  signal: AbortSignal;
  /** handles one `receive` event's parsed data; throwing makes the event come again */
  onEvent(data: unknown, id: string | undefined): Promise<void>;
  /** each (re)connection */
  onConnect?(): void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/** Runs until `signal` aborts; resolves then. */
export async function runEventStream(o: EventStreamOptions): Promise<void> {
  const min = o.minBackoffMs ?? 500;
  const max = o.maxBackoffMs ?? 30_000;
  let backoff = min;
  let lastId: string | undefined;
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
      o.onConnect?.();
      o.log.info({ resumeAfter: lastId ?? null }, "signal event stream connected");
      const parser = new SseParser();
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        for (const ev of parser.push(decoder.decode(chunk, { stream: true }))) {
          if (ev.dropped !== undefined) {
            o.log.warn({ eventId: ev.id ?? null, event: ev.event, chars: ev.dropped, max: SSE_MAX_CHARS }, "a signal event above the size cap was dropped; the stream goes on");
            if (ev.id !== undefined) lastId = ev.id;
            continue;
          }
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
