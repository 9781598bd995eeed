/**
 * The sessions actor: serves `lurk.sessions.<op>` from its LMDB store.
 * Without `sessions.replication` (the default): one instance, this host's LMDB.
 * With it: one active instance through the lease `sessions`; every write is in the SESSIONS
 * stream before it is answered (replication.ts); standbys follow the stream into their own LMDB,
 * relay requests to the active instance, and one takes over (after applying the whole stream)
 * when the lease lapses.
 * Every usage update also goes into the usage ledger (usage-ledger.ts), one bucket per model and
 * purpose, served as `usage_report`; the writing instance prunes days past
 * `sessions.usage.retentionDays` (usage-prune.ts).
 */
import { join } from "node:path";
import type { ActorDefinition, ActorRuntime } from "../../shared/runtime/actor.js";
import { ActiveInstance } from "../../shared/runtime/active-instance.js";
import { deadLocalHolder } from "../../shared/runtime/dead-holder.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { mediaCost, unitsCostUsd } from "../../shared/runtime/media-prices.js";
import { lookupModel, usageCostUsd } from "../../shared/runtime/models.js";
import { jsonBytes, type EndpointOp, type ParsedRequestOf, type ReplyOf } from "../../shared/contract/index.js";
import { checkReportSize, newestWithin, replyBudget } from "./reply-size.js";
import { SessionReplication } from "./replication.js";
import { SessionStore } from "./store.js";
import { startUsagePrune, type UsagePrune } from "./usage-prune.js";

type Op = EndpointOp<"sessions">;
type Serve = <O extends Op>(op: O, handler: (req: ParsedRequestOf<"sessions", O>) => Promise<ReplyOf<"sessions", O>> | ReplyOf<"sessions", O>, writes?: boolean) => void;

export const definition: ActorDefinition = {
  name: "sessions",
  version: LURKBOT_VERSION,
  description: "session entries and append-only transcripts (LMDB)",
  async start(rt) {
    const policy = rt.config.sessions;
    const replicated = policy.replication.enabled;
    let replication: SessionReplication | undefined;
    const store = new SessionStore(join(rt.config.dataDir, "sessions"), Date.now, {
      resetPolicy: policy,
      // daily/idle resets done while a run begins (or a session is ensured)
      onReset: (r) => rt.emit("reset", { ...r, lastActivity: new Date(r.lastActivity).toISOString() }),
      // lurk.evt.sessions.created: the hooks actor's session:start (kept for it in LURK_HOOK_EVENTS)
      onCreate: (e) => rt.emit("created", {
        sessionKey: e.sessionKey, agentId: e.agentId, sessionId: e.sessionId, sessionType: e.sessionType,
        ...(e.channel ? { channel: e.channel } : {}), ...(e.lastOrigin ? { origin: e.lastOrigin } : {}),
        ...(e.parentSessionKey ? { parentSessionKey: e.parentSessionKey } : {}), ...(e.label ? { label: e.label } : {}),
      }),
      onFlushError: (err) => rt.log.error({ err }, "flushing the sessions store to disk failed; the next write retries"),
      replicate: replicated,
      onQueued: () => replication?.queued(),
      // the ledger's cost, priced when the usage arrives: built-in prices with config `models` overrides
      usagePrice: (ref, usage) => usageCostUsd(usage, lookupModel(ref, rt.config)),
      // speech by characters, transcription by audio minutes (shared/runtime/media-prices.ts), same overrides
      unitsPrice: (ref, units) => unitsCostUsd(units, mediaCost(ref, rt.config)),
    });
    let serve: Serve = (op, handler) => rt.serve("sessions", op, handler);
    let instance: ActiveInstance<"sessions"> | undefined;
    // only the writing instance prunes the usage ledger; standbys get the prune as a change set
    const prune: UsagePrune = startUsagePrune(rt, store, () => !instance || instance.isActive());
    if (replicated) {
      const r = new SessionReplication(rt, store, policy.replication.ackTimeoutMs);
      replication = r;
      instance = await openReplicated(rt, store, r, prune);
      const relay = instance.relay;
      // a write is answered once its change set is in the stream
      serve = (op, handler, writes = false) => relay.serve(op, writes ? async (req) => {
        const reply = await handler(req);
        await r.settled(store.changeLog!.lastQueued);
        return reply;
      } : handler);
    }
    serveOps(rt, store, serve);
    if (instance) await instance.start();
    if (instance && !instance.isActive()) {
      replication!.discardQueued("this instance starts as a standby");
      await replication!.startFollowing();
    }
    // replicated: the instance that became active at start pruned then (activated)
    if (!instance) prune.run();
    return {
      stop: async () => {
        prune.stop();
        await instance?.stop();
        await replication?.close();
        await store.close();
      },
    };
  },
};

/** The lease: a takeover applies the whole stream and a new instance writes once active; a standby follows. */
async function openReplicated(rt: ActorRuntime, store: SessionStore, replication: SessionReplication, prune: UsagePrune): Promise<ActiveInstance<"sessions">> {
  return ActiveInstance.open(rt, "sessions", {
    ttlMs: rt.config.sessions.replication.leaseTtlMs,
    renewMs: rt.config.sessions.replication.leaseRenewMs,
    takeOver: async () => {
      const log = store.changeLog!;
      const before = log.appliedSeq;
      const stream = await replication.catchUp(rt.signal);
      // change sets left queued by this host's last term go out only if nobody wrote since
      if (log.appliedSeq !== before) replication.discardQueued("another instance wrote after this host's last term");
      if (!log.seeded) {
        // the first active instance publishes the data it had before replication was on
        if (stream.messages === 0) rt.log.info({ sessions: store.seedChangeLog() }, "sessions: this store's sessions go to the SESSIONS stream");
        else store.logTxn((l) => l.markSeededInTxn());
      }
      rt.log.info({ appliedSeq: log.appliedSeq }, "sessions: the whole stream is applied");
    },
    // also after a takeover that failed in part (ActiveInstance logs it): an active instance always publishes its writes
    activated: () => {
      replication.startWriting();
      prune.run();
    },
    standBy: async () => {
      await replication.stopWriting();
      await replication.startFollowing();
    },
    // a restart after a crash on this host takes the lease at once, not after leaseTtlMs
    holderGone: deadLocalHolder(rt.nc, "sessions"),
  });
}

function serveOps(rt: ActorRuntime, store: SessionStore, serve: Serve): void {
  // replies with transcript records keep the newest that fit the bus's message size (reply-size.ts)
  const budget = () => replyBudget(rt.nc.info?.max_payload);
  serve("begin", async (req) => {
    const begun = await store.begin({ ...req, ...(req.origin ? { lastOrigin: req.origin } : {}) });
    const fitted = newestWithin(begun.records, budget() - jsonBytes({ ...begun, records: [] }));
    if (!fitted.truncated) return begun;
    rt.log.info({ sessionKey: req.sessionKey, kept: fitted.records.length, of: begun.records.length }, "a run's history is larger than one reply: the runner pages back for the rest");
    return { ...begun, records: fitted.records, incremental: false, truncated: true };
  }, true);
  serve("ensure", (req) => store.ensure({ ...req, ...(req.origin ? { lastOrigin: req.origin } : {}) }), true);
  serve("get", (req) => ({ session: store.get(req.sessionKey) }));
  serve("list", (req) => ({ sessions: store.list(req) }));
  serve("history", (req) => {
    const session = store.get(req.sessionKey);
    const fitted = newestWithin(store.history(req.sessionKey, req.limit, req.sessionId, req.beforeSeq), budget() - jsonBytes({ session, records: [] }));
    return { session, records: fitted.records, ...(fitted.truncated ? { truncated: true } : {}) };
  });
  serve("transcripts", (req) => ({ session: store.get(req.sessionKey), transcripts: store.transcripts(req.sessionKey) }));
  serve("append", (req) => store.append(req.sessionKey, req.records, req.usage), true);
  // statusOnly: the runs table alone, no records read (a reply of constant size); with recordId, that one record if the run stored it
  serve("run", (req) => {
    if (!req.statusOnly) {
      // the newest records that fit one reply (a long run's can exceed it; callers read its end)
      const run = store.run(req.runId);
      const fitted = newestWithin(run.records, budget() - jsonBytes({ ...run, records: [] }));
      return { records: fitted.records, status: run.status, ...(fitted.truncated ? { truncated: true } : {}) };
    }
    const record = req.recordId === undefined ? undefined : store.runRecord(req.runId, req.recordId);
    return { records: record ? [record] : [], status: store.runStatus(req.runId) };
  });
  // a retried request with the same idempotency key is counted once (usage-seen.ts)
  serve("usage", (req) => store.recordUsage(req), true);
  serve("patch", async (req) => ({ session: await store.patch(req.sessionKey, req.patch) }), true);
  serve("reset", async (req) => {
    const result = await store.reset(req.sessionKey);
    rt.emit("reset", { sessionKey: req.sessionKey, reason: req.reason });
    return result;
  }, true);
  // lurk.evt.sessions.delete: the web channel forgets the session's canvas (services/channel-web)
  serve("delete", async (req) => {
    const deleted = await store.delete(req.sessionKey);
    if (deleted) rt.emit("delete", { sessionKey: req.sessionKey });
    return { deleted };
  }, true);
  // the usage ledger's sums; a report larger than one reply is refused (narrow the range or grouping)
  serve("usage_report", (req) => checkReportSize(store.usageReport(req), budget()));
}
