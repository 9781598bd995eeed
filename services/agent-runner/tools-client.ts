/**
 * The tool catalog and tool execution over the bus.
 * Catalog: scatter-gather on `lurk.tools.list` (every tools actor kind answers with its own
 * tools; the first reply is awaited up to 2 s, then replies are merged until 250 ms pass
 * without one, each validated; a background refresh of a non-empty catalog, which no run waits
 * for, merges until 2 s pass without one, so an actor that answers late on a busy host keeps
 * its tools), cached per agent, session type and model. A run waits for a
 * gather only when there is no catalog yet (first run, or the last gather found nothing: an
 * empty catalog is gathered again after ~1 s, since the tools actor may start after the
 * runner). Otherwise the cached catalog is returned at once and kept fresh in the background:
 * - a tools actor announces `lurk.tools.catalog` when it starts (shared/runtime/tool-catalog.ts):
 *   every cached catalog is gathered again shortly after, and replaced when the gather ends;
 * - a catalog older than the refresh interval (60 s) is still served, and gathered again in the
 *   background (catches actors that stopped, and anything missed);
 * - a background gather that no tools actor answered at all keeps the cached catalog (a busy
 *   host or a restart must not leave runs without tools); it stays due, so the next run
 *   gathers again.
 * One gather at a time per key; concurrent callers share it. `list` never throws.
 * Calls: `lurk.tools.call.<tool>` with the contract's request/reply; bus failures and error
 * replies come back as error tool results, so the model sees them and the run goes on. A call
 * this client gives up on (its timeout) is cancelled with `lurk.tools.cancel`; a call waiting
 * for a human approval whose heartbeats stop (the tools instance died) is sent again (callHeld).
 */
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  envelope, LurkError, parseSessionKey, safeParseJson, toolCallReply, TOOLS_CATALOG_CHANGED_MAX_BYTES, toolProgressSchema, toolsCancelSchema, toolsCatalogChangedSchema, toolsListReply,
  type Origin, type Subjects, type ToolDefinition, type ToolResultMessage,
} from "../../shared/contract/index.js";
import type { BusClient } from "../../shared/runtime/client.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { z } from "zod";
import { gatherReplies } from "../../shared/runtime/gather.js";
import { compareCodeUnits } from "../../shared/runtime/order.js";

/** a gather a run may wait for ends this long after the latest reply (other actor kinds answer within it) */
const GATHER_MS = 250;
/**
 * a background refresh of a non-empty catalog ends this long after the latest reply: runs are
 * served the cached catalog meanwhile, and a missed late reply would drop that actor's tools
 * until the next refresh (a freshly started or busy actor can answer after 250 ms)
 */
export const BACKGROUND_GATHER_MS = 2_000;
/** how long a gather waits for its first reply (a tools actor just started, or a busy host) */
const FIRST_REPLY_MS = 2_000;
/** a call waiting for approval whose heartbeat (every <= 5 s) stops this long is sent again */
export const APPROVAL_STALE_MS = 15_000;
/** a cached catalog older than this is gathered again in the background (and served meanwhile) */
export const REFRESH_MS = 60_000;
/** an empty catalog is gathered again, in the foreground, after this long */
export const EMPTY_CACHE_MS = 1_000;
/** after an announcement, wait this long before gathering (the new actor finishes starting; a burst of announcements makes one refresh) */
export const ANNOUNCE_DELAY_MS = 200;
/** a catalog no run asked for in this long is dropped instead of refreshed */
const IDLE_DROP_MS = 30 * 60_000;

export interface ToolCallContext {
  runId: string;
  sessionKey: string;
  agentId: string;
  sessionType: string;
  /** "provider/model" of the run, for the tool policy's provider and model layers */
  model?: string;
  /** where the run's trigger came from (the `message` tool answers there) */
  origin?: Origin;
}

/** A gather starting or ending (for tests and diagnostics). */
export interface CatalogGatherEvent {
  phase: "start" | "end";
  /** false: a run is waiting for it; true: a refresh while the cached catalog is served */
  background: boolean;
  key: string;
  /** at "end": the merged tool names */
  tools?: string[];
}

export interface ToolsClientOptions {
  /** default REFRESH_MS */
  refreshMs?: number;
  /** default ANNOUNCE_DELAY_MS */
  announceDelayMs?: number;
  onGather?: (event: CatalogGatherEvent) => void;
}

interface CatalogQuery {
  agentId: string;
  sessionKey?: string;
  model?: string;
}

interface CatalogEntry {
  /** when the gather that produced it ended */
  at: number;
  usedAt: number;
  tools: ToolDefinition[];
  query: CatalogQuery;
}

export class ToolsClient {
  private readonly cache = new Map<string, CatalogEntry>();
  private readonly inflight = new Map<string, Promise<ToolDefinition[]>>();
  /** keys announced while their gather was running (it may have missed the new actor): gather once more */
  private readonly regather = new Set<string>();
  private readonly refreshMs: number;
  private readonly announceDelayMs: number;
  private readonly onGather: ((event: CatalogGatherEvent) => void) | undefined;
  private announceTimer: NodeJS.Timeout | undefined;
  private announcements: Subscription | undefined;
  private closed = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly client: BusClient,
    private readonly subjects: Subjects,
    private readonly log: Logger,
    private readonly callTimeoutMs: number,
    opts: ToolsClientOptions = {},
  ) {
    this.refreshMs = opts.refreshMs ?? REFRESH_MS;
    this.announceDelayMs = opts.announceDelayMs ?? ANNOUNCE_DELAY_MS;
    this.onGather = opts.onGather;
    this.subscribeAnnouncements();
  }

  /**
   * The merged catalog for an agent in a session (cached per agent, session type and model,
   * since the tool policy depends on them). Returns a cached catalog without waiting whenever
   * there is a non-empty one; never throws (no catalog: no tools).
   */
  async list(agentId: string, sessionKey?: string, model?: string): Promise<ToolDefinition[]> {
    try {
      const sessionType = sessionKey ? parseSessionKey(sessionKey)?.type ?? sessionKey : "";
      const key = `${agentId}\u0000${sessionType}\u0000${model ?? ""}`;
      const now = Date.now();
      const cached = this.cache.get(key);
      if (cached) cached.usedAt = now;
      if (cached && cached.tools.length > 0) {
        if (now - cached.at >= this.refreshMs) this.refresh(key, cached.query);
        return cached.tools;
      }
      if (cached && now - cached.at < EMPTY_CACHE_MS) return cached.tools;
      const query: CatalogQuery = { agentId, ...(sessionKey ? { sessionKey } : {}), ...(model ? { model } : {}) };
      return await this.gatherOnce(key, query, false);
    } catch (err) {
      this.log.warn({ err }, "tool catalog unavailable; running without tools");
      return [];
    }
  }

  /** a gather is running or an announced refresh is about to start (diagnostics, tests) */
  get refreshPending(): boolean {
    return this.announceTimer !== undefined || this.inflight.size > 0;
  }

  /** Stops listening to announcements and refreshing (the connection stays open). */
  close(): void {
    this.closed = true;
    if (this.announceTimer) clearTimeout(this.announceTimer);
    this.announceTimer = undefined;
    this.announcements?.unsubscribe();
    this.announcements = undefined;
  }

  /** The running gather of a key, or a new one; its result replaces the cached catalog. */
  private gatherOnce(key: string, query: CatalogQuery, background: boolean): Promise<ToolDefinition[]> {
    const running = this.inflight.get(key);
    if (running) return running;
    this.notify({ phase: "start", background, key });
    // only a run's list() of an empty or missing catalog waits for a gather
    const servedMeanwhile = background && (this.cache.get(key)?.tools.length ?? 0) > 0;
    const gathering = this.gather(query, servedMeanwhile ? BACKGROUND_GATHER_MS : GATHER_MS)
      .then(({ tools, heard }) => {
        const now = Date.now();
        const previous = this.cache.get(key);
        // a background refresh that heard no tools actor at all (a busy host, an actor restarting)
        // keeps the catalog it had, still due for a refresh: the next list() gathers again
        const keep = background && !heard && previous !== undefined && previous.tools.length > 0;
        const entry = keep ? { ...previous, at: 0 } : { at: now, usedAt: previous?.usedAt ?? now, tools, query };
        this.cache.set(key, entry);
        this.notify({ phase: "end", background, key, tools: entry.tools.map((t) => t.name) });
        return entry.tools;
      })
      .finally(() => {
        this.inflight.delete(key);
        if (this.regather.delete(key)) this.refresh(key, query);
      });
    this.inflight.set(key, gathering);
    return gathering;
  }

  /** A background gather of one key, unless one is running. */
  private refresh(key: string, query: CatalogQuery): void {
    if (this.closed || this.inflight.has(key)) return;
    void this.gatherOnce(key, query, true).catch((err) => this.log.warn({ err }, "background tool catalog refresh failed"));
  }

  private subscribeAnnouncements(): void {
    try {
      this.announcements = this.nc.subscribe(this.subjects.toolsCatalogChanged, {
        callback: (err, msg) => {
          if (err) {
            this.log.warn({ err }, "not receiving tool catalog announcements; catalogs refresh every interval instead");
            return;
          }
          let parsed;
          try {
            parsed = toolsCatalogChangedSchema.safeParse(safeParseJson(msg.data, { maxBytes: TOOLS_CATALOG_CHANGED_MAX_BYTES }));
          } catch (parseErr) {
            // PAYLOAD_TOO_LARGE (checked before anything is decoded), BAD_JSON, UNSAFE_PAYLOAD
            this.log.warn({ err: parseErr }, "ignoring a tool catalog announcement that is oversized or not JSON");
            return;
          }
          if (!parsed.success) {
            this.log.warn("ignoring a tool catalog announcement that does not match the contract");
            return;
          }
          this.log.debug({ actor: parsed.data.actor, instance: parsed.data.instance }, "tool catalog announced; refreshing cached catalogs");
          this.scheduleAnnouncedRefresh();
        },
      });
    } catch (err) {
      this.log.warn({ err }, "not receiving tool catalog announcements; catalogs refresh every interval instead");
    }
  }

  /** Shortly after an announcement: gather every cached catalog again (a burst makes one refresh). */
  private scheduleAnnouncedRefresh(): void {
    if (this.closed || this.announceTimer) return;
    this.announceTimer = setTimeout(() => {
      this.announceTimer = undefined;
      if (this.closed) return;
      const now = Date.now();
      for (const key of this.inflight.keys()) this.regather.add(key);
      for (const [key, entry] of this.cache) {
        if (now - entry.usedAt > IDLE_DROP_MS) this.cache.delete(key);
        else if (!this.inflight.has(key)) this.refresh(key, entry.query);
      }
    }, this.announceDelayMs);
    this.announceTimer.unref();
  }

  private notify(event: CatalogGatherEvent): void {
    try {
      this.onGather?.(event);
    } catch (err) {
      this.log.warn({ err }, "catalog gather observer failed");
    }
  }

  /** The merged catalog of every tools actor that answered within `stallMs` of the latest reply; `heard`: at least one answered. */
  private async gather({ agentId, sessionKey, model }: CatalogQuery, stallMs: number): Promise<{ tools: ToolDefinition[]; heard: boolean }> {
    const request = {
      type: "lurk.tools.list.v1", id: `tools-list-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, ts: Date.now(), agentId,
      ...(sessionKey ? { sessionKey } : {}), ...(model ? { model } : {}),
    };
    const byName = new Map<string, ToolDefinition>();
    let heard = false;
    try {
      const subject = this.subjects.op("tools", "list");
      const { replies, errors, malformed } = await gatherReplies(this.nc, subject, request, toolsListReply, { maxWaitMs: FIRST_REPLY_MS, stallMs });
      if (malformed + errors.length > 0) this.log.warn({ subject, malformed, errors }, "ignoring tools.list replies that are errors or do not match the contract");
      heard = replies.length > 0;
      for (const reply of replies) {
        for (const tool of reply.tools) {
          const existing = byName.get(tool.name);
          if (existing && existing.actor !== tool.actor) this.log.warn({ tool: tool.name, kept: existing.actor, dropped: tool.actor }, "two actors serve the same tool");
          if (!existing) byName.set(tool.name, tool);
        }
      }
    } catch (err) {
      this.log.warn({ err }, "tool catalog unavailable; running without tools");
    }
    return { tools: [...byName.values()].sort((a, b) => compareCodeUnits(a.name, b.name)), heard };
  }

  /**
   * Tells every tools instance to stop the in-flight calls of a run (one of them with
   * `toolCallId`): `lurk.tools.cancel`, core publish. Never throws. (A run's abort and end
   * cancel its calls too: the tools actors follow `lurk.run.ctl` and the terminal run events.)
   */
  cancel(runId: string, toolCallId?: string, reason?: string): void {
    try {
      const message = toolsCancelSchema.parse(envelope("lurk.tools.cancel.v1", { runId, ...(toolCallId ? { toolCallId } : {}), ...(reason ? { reason: reason.slice(0, 500) } : {}) }));
      this.nc.publish(this.subjects.toolsCancel, JSON.stringify(message));
    } catch (err) {
      this.log.warn({ err, runId, toolCallId }, "could not publish a tool cancel");
    }
  }

  /**
   * The request, re-sent when the tools instance holding it vanished while it waited for a
   * human approval: such a call sends `waitingForApproval` heartbeats (<= 5 s apart) on
   * `lurk.tools.progress.<runId>`; none for APPROVAL_STALE_MS means the instance died (its
   * request is lost), so the same call goes out again and gets the same approval (the approvals
   * actor keeps it, decided or not). Throws like callSubject (TIMEOUT at the overall deadline).
   */
  private async callHeld(ctx: ToolCallContext, toolCallId: string, name: string, body: Record<string, unknown>): Promise<z.output<typeof toolCallReply>> {
    const deadline = Date.now() + this.callTimeoutMs;
    let heardAt = 0;
    let onStale = () => {};
    // the staleness check runs only once the attempt heard a heartbeat (most calls never wait)
    let watch: NodeJS.Timeout | undefined;
    const unfollow = this.followApprovalHeartbeats(ctx.runId, toolCallId, () => {
      heardAt = Date.now();
      watch ??= setInterval(() => {
        if (Date.now() - heardAt > APPROVAL_STALE_MS) onStale();
      }, 1_000);
    });
    try {
      for (let attempt = 1; ; attempt++) {
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw new LurkError("TIMEOUT", `no answer within ${this.callTimeoutMs} ms`);
        const request = this.client.callSubject(this.subjects.toolCall(name), "lurk.tools.call.v1", body, toolCallReply, { timeoutMs: remaining, runId: ctx.runId }, "tools");
        request.catch(() => undefined); // a superseded attempt is dropped
        clearInterval(watch);
        watch = undefined;
        heardAt = 0;
        const stale = new Promise<"stale">((resolve) => (onStale = () => resolve("stale")));
        const outcome = await Promise.race([request, stale]);
        if (outcome !== "stale") return outcome;
        this.log.warn({ runId: ctx.runId, toolCallId, tool: name, attempt }, "the tools instance holding a call that waits for approval went silent; sending the call again");
      }
    } finally {
      clearInterval(watch);
      unfollow();
    }
  }

  /** open calls by run id, then tool call id: who to tell about a `waitingForApproval` heartbeat */
  private readonly heartbeatListeners = new Map<string, Map<string, () => void>>();
  private heartbeatSub: Subscription | undefined;

  /**
   * `heard()` on each `waitingForApproval` heartbeat of one call; returns the unfollow function.
   * One wildcard subscription serves every call (no SUB/UNSUB per call); a message of a run
   * with no open call here is dropped by its subject before any parsing.
   */
  private followApprovalHeartbeats(runId: string, toolCallId: string, heard: () => void): () => void {
    if (!this.heartbeatSub) {
      const prefix = this.subjects.toolProgress("x").slice(0, -1);
      try {
        this.heartbeatSub = this.nc.subscribe(this.subjects.toolProgressAll, {
          callback: (_err, msg) => {
            const calls = this.heartbeatListeners.get(msg.subject.slice(prefix.length));
            if (!calls) return;
            try {
              const note = toolProgressSchema.safeParse(safeParseJson(msg.data, { maxBytes: 8192 }));
              if (note.success && note.data.waitingForApproval) calls.get(note.data.toolCallId)?.();
            } catch {
              // not a heartbeat
            }
          },
        });
      } catch (err) {
        this.log.warn({ err }, "not following approval heartbeats; a lost tool call is not re-sent");
      }
    }
    let calls = this.heartbeatListeners.get(runId);
    if (!calls) this.heartbeatListeners.set(runId, (calls = new Map()));
    calls.set(toolCallId, heard);
    return () => {
      calls.delete(toolCallId);
      if (calls.size === 0 && this.heartbeatListeners.get(runId) === calls) this.heartbeatListeners.delete(runId);
    };
  }

  /** Executes one call; never throws (failures are error results). */
  async call(ctx: ToolCallContext, toolCallId: string, name: string, args: Record<string, unknown>): Promise<ToolResultMessage> {
    const result = (text: string, isError: boolean): ToolResultMessage => ({ role: "tool_result", toolCallId, toolName: name, content: [{ type: "text", text }], isError });
    try {
      const reply = await this.callHeld(ctx, toolCallId, name, {
        toolCallId, runId: ctx.runId, sessionKey: ctx.sessionKey, agentId: ctx.agentId, sessionType: ctx.sessionType, tool: name, args,
        ...(ctx.model ? { model: ctx.model } : {}),
        ...(ctx.origin ? { origin: ctx.origin } : {}),
      });
      const content = reply.content.length > 0 ? reply.content : [{ type: "text" as const, text: reply.isError ? "Error: the tool failed without output" : "(no output)" }];
      // a truncated reply already says so in its text (the tools actor writes the paging note)
      return { role: "tool_result", toolCallId, toolName: name, content, isError: reply.isError };
    } catch (err) {
      const e = LurkError.from(err);
      if (e.code === "UNAVAILABLE") return result(`Error: the tool ${name} is unavailable right now (${e.message}).`, true);
      if (e.code === "TIMEOUT") {
        // nobody waits for it any more: the tools instance holding it stops it
        this.cancel(ctx.runId, toolCallId, `no answer within ${this.callTimeoutMs} ms`);
        return result(`Error: the tool ${name} did not answer within ${this.callTimeoutMs} ms.`, true);
      }
      return result(`Error (${e.code}): ${e.message}`, true);
    }
  }
}
