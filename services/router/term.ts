/**
 * One term of the active router instance (actor.ts): its lanes, session queues, intake and the
 * LURK_INBOUND consumer, from taking the lease to losing it. A standby has no term and reads
 * nothing; the next active instance starts a new term with what the replica holds (replica.ts):
 * the runs holding lanes (checked against the sessions actor at once, those that ended freed),
 * the groups' kept context and the messages handled without a run of their own.
 *
 * An inbound message is acked only after its run request is persisted in RUNS (or it was taken
 * by the active run and is in its transcript at its end, merged into another message's run, dropped by the queue's policy, answered
 * as a command, or recorded as a pending system event: pending-events.ts); while it waits for a
 * busy session it stays unacked (in-progress acks keep it from redelivery), so a router crash
 * loses nothing. Redeliveries are harmless: the run id is derived from the message id and RUNS
 * deduplicates by it; a run that already finished is not started again; notices are
 * deduplicated by an id derived from the message id.
 * Runs other actors store in RUNS (a subagent's child run, a cron agentTurn) hold their session's
 * lane from their `run_start` (`runStarted`) to their end, replicated like dispatched runs, so a
 * message or a wake-now inject for that session waits for them (or steers them) and pending events
 * are not recorded inside them. A run's start costs the router one Map lookup when it dispatched it.
 * A wake-now inject into a running session is handed to its run as a follow-up (queued when no
 * runner takes it); like a handed message, it is acked once that run ended with it in its
 * transcript, else it gets a run of its own (queue.ts, `stored`); a run request the agent-runners
 * dead-lettered gets its end recorded and frees its lane (`runGaveUp`, from the term's consumer of
 * those dead letters: also those of runs given up while no router was active).
 * `stop()` ends the consumer: messages still waiting are handed back for the next term.
 */
import {
  CONSUMERS, envelope, inboundMessageSchema, LurkError, parseSessionKey, recordIds, runControlReplySchema, runIdFor, runRequestSchema,
  safeParseJson, STREAMS, systemInjectSchema, type RunInput, type RunRequest, type SystemInject,
} from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { streamConfigs } from "../../shared/runtime/streams.js";
import { z } from "zod";
import { ensureSession } from "./ended-sessions.js";
import { RecentEntries } from "./handled-messages.js";
import { consumeRunsGivenUp } from "./run-gave-up.js";
import { Intake } from "./intake.js";
import { Lanes } from "./lanes.js";
import type { PairingStore } from "./pairing.js";
import { PendingEvents } from "./pending-events.js";
import { SessionQueues, Work, type DeliveryLike } from "./queue.js";
import type { RouterReplica, RouterState } from "./replica.js";
import type { SettingsCache } from "./settings.js";
import type { RunsReader } from "./stored-runs.js";
import { injectEvent } from "./system-events.js";

const inboundOrInject = z.discriminatedUnion("type", [inboundMessageSchema, systemInjectSchema]);
const RECONCILE_EVERY_MS = 5_000;
const PRUNE_EVERY_MS = 60_000;
const IDLE_BEFORE_CHECK_MS = 15_000;
/** RUNS keeps a request at most its max_age (streams.ts), plus an hour for a dispatch's own wait (debounce, pending events) */
const RUNS_MAX_AGE_NS = streamConfigs().find((c) => c.name === STREAMS.runs)?.max_age;
const NEVER_STARTS_AFTER_MS = RUNS_MAX_AGE_NS ? Number(RUNS_MAX_AGE_NS) / 1e6 + 3600_000 : Infinity;
const INJECT_QUEUE = { mode: "queue" as const, debounceMs: 0, cap: 1000, drop: "new" as const };
/**
 * A wake-now inject into a session whose run is going (a `sessions_send`, a child's announce to
 * its parent, a hook's `runAgent`) is handed to that run as a follow-up: the
 * run sees it before it ends (a child session deleted at its end is not recreated by a run of its
 * own). Refused (no runner holds the run, or it stopped taking inputs), it queues as before.
 */
const INJECT_FOLLOWUP = { ...INJECT_QUEUE, mode: "followup" as const };
/**
 * Not a heartbeat's or a cron job's (they follow their inject's own run, `runIdFor("inject", id)`),
 * nor an inject with run options or its own delivery target: those need a run of their own.
 */
const handsOff = (msg: SystemInject) =>
  msg.trigger !== "heartbeat" && msg.trigger !== "cron" && Object.keys(msg.options ?? {}).length === 0 && (msg.deliverTo === "last" || msg.deliverTo === "none");
const isFinished = (status: string) => status === "done" || status === "error" || status === "aborted";

/** What a term starts from: the replica's state, and the run ids RUNS held (read whole) at the takeover. */
export type TermState = RouterState & { inRuns?: { ids: ReadonlySet<string>; at: number } };

export interface TermDeps {
  rt: ActorRuntime;
  pairing: PairingStore;
  settings: SettingsCache;
  replica: RouterReplica;
  /** the run requests RUNS holds (stored-runs.ts) */
  runs: RunsReader;
  /** false once this instance lost the lease: nothing more is dispatched */
  isActive(): boolean;
  /** counts the messages handled (router.status) */
  processed(): void;
}

export interface RouterTerm {
  lanes: Lanes;
  /** a run's terminal event: frees its lane */
  releaseRun(runId: string): void;
  /** a run's `run_start`: one this router did not dispatch holds its session's lane */
  runStarted(runId: string, sessionKey: () => string | undefined): void;
  /** a run request another actor stored in RUNS: it holds its session's lane from now (checked at once: it may have ended already) */
  runStored(runId: string, sessionKey: string): void;
  stop(): Promise<void>;
}

export function startTerm(deps: TermDeps, state: TermState): RouterTerm {
  const { rt, replica } = deps;
  const held = state.runs;
  const lanes = new Lanes();
  for (const run of held) lanes.hold(run.sessionKey, run.runId, run.since);

  // a run's terminal event (`lurk.run.evt.<runId>.done|error`) frees its lane
  const endWaiters = new Map<string, Array<() => void>>();
  const releaseRun = (runId: string) => {
    if (lanes.isDispatched(runId) || (lanes.isHeld(runId) && !lanes.isActive(runId))) replica.runEnded(runId);
    lanes.release(runId);
    const waiters = endWaiters.get(runId);
    endWaiters.delete(runId);
    waiters?.forEach((w) => w());
  };
  const ended = (runId: string) => new Promise<void>((resolve) => {
    if (!lanes.isActive(runId)) return resolve();
    const waiters = endWaiters.get(runId);
    if (waiters) waiters.push(resolve);
    else endWaiters.set(runId, [resolve]);
  });

  // non-waking injects and users' reactions: recorded never while a run holds the session's lane
  const pending = new PendingEvents({ rt, lanes, ended });

  // the status alone: a long run's records could exceed one bus message
  const runStatus = async (sessionKey: string, runId: string) => (await rt.client.call("sessions", "run", { sessionKey, runId, statusOnly: true })).status;

  /**
   * The run holds the session's lane: store its request in RUNS (after the session's pending
   * system events queued by then are recorded, pending-events.ts). A failure keeps the lane (the
   * message is redelivered and retried first, so order holds) unless the message is giving
   * up, in which case the lane goes to the next message.
   */
  const dispatch = async (request: RunRequest, delivery: DeliveryLike): Promise<"dispatched" | "duplicate"> => {
    try {
      const events = pending.beforeRun(request.sessionKey, request.runId);
      if (events) await events;
      if (!deps.isActive()) throw new LurkError("UNAVAILABLE", "this router instance is no longer the active one; the message goes to the next");
      if (delivery.redelivered && isFinished(await runStatus(request.sessionKey, request.runId))) {
        releaseRun(request.runId); // an earlier delivery got as far as a finished run
        return "duplicate";
      }
      const parsed = runRequestSchema.parse(request);
      const ack = await rt.js.publish(rt.subjects.runRequest(parsed.agentId), JSON.stringify(parsed), { msgID: parsed.runId });
      if (ack.duplicate && isFinished(await runStatus(request.sessionKey, request.runId))) {
        // RUNS already had this run (an earlier delivery of the message got it there) and it
        // ended while this delivery waited: no terminal event will come for it any more
        releaseRun(request.runId);
        return "duplicate";
      }
      lanes.markDispatched(parsed.runId);
      replica.runHeld(parsed.runId, parsed.sessionKey, Date.now());
      rt.emit("dispatched", { runId: parsed.runId, sessionKey: parsed.sessionKey, trigger: parsed.trigger }, "debug");
      return "dispatched";
    } catch (err) {
      const error = LurkError.from(err);
      if (delivery.deliveryCount >= rt.config.bus.maxDeliver || !error.retryable) releaseRun(request.runId);
      throw error;
    }
  };

  /** Hands an input to the active run; only the runner holding it answers (accepted). */
  const control = async (runId: string, action: "steer" | "followup", input: RunInput, controlId: string): Promise<boolean> => {
    const message = envelope("lurk.run.control.v1", { id: controlId, runId, action, input });
    try {
      const reply = await rt.nc.request(rt.subjects.runControl(runId), JSON.stringify(message), { timeout: rt.config.routing.queue.controlTimeoutMs });
      const parsed = runControlReplySchema.safeParse(safeParseJson(reply.data, rt.limits));
      const accepted = parsed.success && parsed.data.accepted;
      rt.emit(accepted ? "handed" : "hand_refused", { runId, action }, "debug");
      return accepted;
    } catch {
      return false; // no runner holds the run (or none answered in time): the message gets a run of its own
    }
  };
  const abort = (runId: string, reason: string) => {
    rt.nc.publish(rt.subjects.runControl(runId), JSON.stringify(envelope("lurk.run.control.v1", { runId, action: "abort" as const, reason })));
    rt.emit("abort_requested", { runId, reason }, "info");
  };

  /**
   * Whether the run an input was handed to stored it, asked at the run's end (queue.ts): a runner
   * keeps an accepted input in memory until its loop takes it (the record `recordIds.mailboxInput`),
   * so a run that ends otherwise (an error, an abort, its iteration limit, a `/compact` run, which
   * has no loop, a runner restart that resumes it) accepted it and never took it. One index look-up
   * (`statusOnly` with the record id). A failed look-up counts as not stored (a run of its own: at
   * least once rather than lost).
   */
  const stored = async (sessionKey: string, handed: { runId: string; controlId: string }): Promise<boolean> => {
    await ended(handed.runId);
    try {
      const recordId = recordIds.mailboxInput(handed.runId, handed.controlId);
      return (await rt.client.call("sessions", "run", { sessionKey, runId: handed.runId, statusOnly: true, recordId })).records.length > 0;
    } catch (err) {
      rt.log.warn({ err, runId: handed.runId }, "could not check that a run took the input handed to it; it gets a run of its own");
      return false;
    }
  };

  // the run each hand-off went to, replicated before it is asked (queue.ts), for the next instance
  const handOffs = new RecentEntries<string>({ onRemember: (runId, at, handedTo) => replica.handOff(runId, handedTo, at), onForget: (runId) => replica.handOffForgotten(runId) });
  for (const entry of [...state.handOffs].sort((a, b) => a.at - b.at)) handOffs.restore(entry.runId, entry.at, entry.handedTo);
  const queues = new SessionQueues({
    lanes, log: rt.log, dispatch, control, abort, stored, release: releaseRun,
    handOffs: { noted: (runId, handedTo) => handOffs.remember(runId, handedTo), handedTo: (runId) => handOffs.get(runId) },
  });
  const intake = new Intake({
    rt, queues, settings: deps.settings, pairing: deps.pairing, ended, replica, restored: state, events: pending,
    commands: { rt, lanes, queues, settings: deps.settings, pairing: deps.pairing },
  });
  const consumer = rt.consume({
    stream: STREAMS.inbound,
    consumer: CONSUMERS.router,
    schema: inboundOrInject,
    concurrency: 1000,
    handler: async (message, delivery) => {
      if (message.type === "lurk.inbound.message.v1") await intake.handle(message, delivery);
      else {
        const key = `inject:${message.id}`;
        if (delivery.redelivered && intake.injectHandled(key)) return; // a run took it already; its ack was lost
        const request = await fromInject(message, rt, pending);
        if (!request) return;
        // "handed": the run it was handed to ended with it in its transcript (else it got a run of its own)
        const work = new Work(request, delivery, handsOff(message) ? INJECT_FOLLOWUP : INJECT_QUEUE, Date.now());
        if ((await queues.submit(work)) === "handed") await intake.rememberInject(key);
      }
      deps.processed();
    },
  });

  /**
   * The run ids RUNS holds (undefined: it could not be read whole), for a run whose request was in
   * RUNS by `storedAt`: a read begun after that sees the request if RUNS still holds it. One read
   * serves the checks of a reconcile round, unless one needs a newer read (the term's first is the
   * takeover's).
   */
  let lastRead: { at: number; ids: Promise<ReadonlySet<string> | undefined> } | undefined = state.inRuns ? { at: state.inRuns.at, ids: Promise.resolve(state.inRuns.ids) } : undefined;
  const inRuns = (storedAt: number) => {
    if (!lastRead || lastRead.at <= storedAt || Date.now() - lastRead.at >= RECONCILE_EVERY_MS) {
      const at = Date.now();
      lastRead = { at, ids: deps.runs.read(false).then((read) => (read.complete ? read.runIds : undefined)) };
    }
    return lastRead.ids;
  };

  /**
   * A held run that no runner will end: its transcript gets the run's end if it still says
   * `started` (an error marker with the id the runner's own would have, so it is stored once), so a
   * later status check and the run's followers agree; then its lane is freed. `recorded` runs
   * once the end was found still missing (read after the run's request left RUNS).
   */
  const endForRunner = async (runId: string, sessionKey: string, text: string, meta: Record<string, unknown>, recorded?: () => void) => {
    try {
      await recordEnd(runId, sessionKey, text, meta, recorded);
    } catch (err) {
      rt.log.warn({ err, runId }, "could not record the end of a run no runner will end; its lane is freed all the same");
    }
    releaseRun(runId);
  };
  /** The run's error end, when its transcript still says `started` (`recorded` is called then); throws when it could not be read or stored. */
  const recordEnd = async (runId: string, sessionKey: string, text: string, meta: Record<string, unknown>, recorded?: () => void) => {
    if ((await runStatus(sessionKey, runId)) !== "started") return;
    recorded?.();
    await rt.client.call("sessions", "append", {
      sessionKey,
      records: [{ id: recordIds.marker(runId, "error"), ts: Date.now(), runId, kind: "run_marker", runStatus: "error", text, meta: { replyKind: "error", silent: false, turns: 0, errorCode: "INTERNAL", ...meta } }],
    });
  };

  /**
   * Runs whose terminal event was missed (bus hiccup, restart, the previous instance's runs): ask
   * the transcript, then RUNS, a work queue that keeps a request until a runner recorded its run's
   * end and acked it. For a run whose request is in RUNS since `storedAt` unless it left (dispatched
   * here, or held as stored or started by another actor; not the router's own work that waits to
   * be dispatched, which has none):
   * - the sessions actor never heard of it, RUNS holds no request, and it was held longer than the
   *   idle time: it was never stored (a failed publish, a duplicate message id): freed;
   * - its transcript says started and RUNS no longer holds its request: it ended without its end
   *   recorded (given up while no router was active, or its end marker could not be stored): the
   *   end is recorded (`run_end_lost`) and the lane freed.
   * When RUNS cannot be read, a run nobody began is freed once older than RUNS keeps a request.
   * One check per run at a time.
   */
  const checking = new Set<string>();
  const check = async (runId: string, sessionKey: string, since: number, storedAt?: number) => {
    if (checking.has(runId)) return;
    checking.add(runId);
    try {
      const status = await runStatus(sessionKey, runId);
      if (isFinished(status)) return releaseRun(runId);
      const age = Date.now() - since;
      if (status === "unknown" && age > NEVER_STARTS_AFTER_MS) return releaseRun(runId);
      if (storedAt !== undefined && (status === "started" || (status === "unknown" && age >= IDLE_BEFORE_CHECK_MS))) {
        const queued = await inRuns(storedAt);
        if (queued && !queued.has(runId)) {
          if (status === "unknown") return releaseRun(runId);
          const text = "The run ended without its end being recorded: its request left the run queue (given up while no router was active, or its end could not be stored).";
          return await endForRunner(runId, sessionKey, text, { endLost: true }, () => rt.emit("run_end_lost", { runId, sessionKey }, "warn"));
        }
      }
      lanes.touch(runId);
    } catch {
      // the status could not be read: asked again at the next round
    } finally {
      checking.delete(runId);
    }
  };
  // each was stored before the takeover's read of RUNS began (run.since may be the server's clock)
  for (const run of held) void check(run.runId, run.sessionKey, run.since, state.inRuns ? Math.min(run.since, state.inRuns.at - 1) : run.since);
  const reconcile = setInterval(() => {
    for (const { runId, sessionKey, since, storedAt } of lanes.idleRuns(IDLE_BEFORE_CHECK_MS)) void check(runId, sessionKey, since, storedAt);
  }, RECONCILE_EVERY_MS);
  const prune = setInterval(() => {
    intake.prune();
    handOffs.prune((runId) => queues.isOpen(runId)); // a hand-off still waiting for its run keeps its entry
  }, PRUNE_EVERY_MS);

  /**
   * A run started: one this router dispatched (or holds already) is only marked alive; another
   * actor's run holds its session's lane from now on (or waits at its head, running beside the
   * run that holds it), until its terminal event or the status check frees it.
   */
  const runStarted = (runId: string, sessionKeyOf: () => string | undefined) => {
    if (lanes.isHeld(runId)) return lanes.touch(runId);
    const sessionKey = sessionKeyOf();
    if (!sessionKey) return;
    const since = Date.now();
    const held = lanes.hold(sessionKey, runId, since);
    if (held === "known") return;
    replica.runHeld(runId, sessionKey, since);
    rt.emit("external_run_held", { runId, sessionKey, queued: held === "queued" }, "debug");
  };

  /**
   * A run request another actor stored (run-requests.ts): held like a started one; its status is
   * asked at once, so a request stored again for a run that ended (no events will come) frees it.
   */
  const runStored = (runId: string, sessionKey: string) => {
    if (lanes.isHeld(runId)) return;
    runStarted(runId, () => sessionKey); // held now (or queued at the lane's head)
    const now = Date.now();
    void check(runId, sessionKey, now, now);
  };

  /**
   * A run request the agent-runners gave up on (dead-lettered: run-gave-up.ts): no runner takes it
   * again, so its end is recorded if its transcript still says `started` (`run_gave_up` then, or
   * whenever the router holds it) and its lane freed. Also for a run no router holds (given up
   * while none was active: its dead letter waited for this term). Throws when the end could not
   * be recorded, so the dead letter is read again (a held run's lane is freed all the same).
   */
  const runGaveUp = async (runId: string, sessionKey: string, error: string) => {
    const text = `The run gave up: its last delivery failed (${error.slice(0, 300) || "no reason given"}).`;
    const held = lanes.isHeld(runId);
    const gaveUp = () => rt.emit("run_gave_up", { runId, sessionKey, held }, "warn");
    if (held) gaveUp();
    try {
      await recordEnd(runId, sessionKey, text, { gaveUp: true }, held ? undefined : gaveUp);
    } finally {
      releaseRun(runId);
    }
  };
  const givenUp = consumeRunsGivenUp(rt, runGaveUp);

  return {
    lanes,
    releaseRun,
    runStarted,
    runStored,
    async stop() {
      clearInterval(reconcile);
      clearInterval(prune);
      await Promise.all([consumer.stop(), givenUp.stop()]);
      pending.close(); // events still waiting were handed back with their messages
    },
  };
}

/**
 * A system event: `wake: now` starts a run; otherwise it is recorded for the next run as a pending
 * event, once no run holds the session's lane (pending-events.ts; system-events.ts: a repeat of
 * the last pending one is dropped, at most 20 reach the prompt). Resolves (and the message is
 * acked) only when it is recorded or its run request is queued.
 */
async function fromInject(msg: SystemInject, rt: ActorRuntime, pending: PendingEvents): Promise<RunRequest | null> {
  const parsedKey = parseSessionKey(msg.sessionKey);
  if (!parsedKey || parsedKey.agentId !== msg.agentId) {
    throw new LurkError("VALIDATION_FAILED", `session key ${msg.sessionKey} does not belong to agent ${msg.agentId}`);
  }
  const session = { sessionKey: msg.sessionKey, agentId: msg.agentId, sessionType: parsedKey.type };
  if (msg.wake !== "now") {
    await pending.record(session, injectEvent(msg));
    return null;
  }
  const entry = await ensureSession(rt, session);
  const origin = msg.deliverTo === "last" ? entry.lastOrigin : msg.deliverTo === "none" ? undefined : msg.deliverTo;
  return envelope("lurk.run.request.v1", {
    runId: runIdFor("inject", msg.id),
    sessionKey: msg.sessionKey,
    agentId: msg.agentId,
    sessionType: entry.sessionType,
    trigger: msg.trigger,
    causationId: msg.id,
    inputs: [{ kind: "system_event" as const, text: msg.text, attachments: [], sourceId: msg.id }],
    ...(origin ? { origin: { ...origin, messageIds: [] } } : {}),
    deliver: origin !== undefined,
    options: msg.options ?? {},
  });
}
