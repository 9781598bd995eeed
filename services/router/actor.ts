/**
 * The router: reads INBOUND (channel messages and system injects), applies DM/group policy and
 * pairing, answers chat commands, picks agent(s) and session, applies the session's queue mode,
 * keeps one active run per session (lanes), and hands runs to agent-runners through RUNS.
 * An inbound message is acked only after its run request is persisted in RUNS (or it was taken
 * by the active run, merged into another message's run, dropped by the queue's policy, or
 * answered as a command); while it waits for a busy session it stays unacked (in-progress acks
 * keep it from redelivery), so a router crash loses nothing. Redeliveries are harmless: the run
 * id is derived from the message id and RUNS deduplicates by it; a run that already finished is
 * not started again; notices are deduplicated by an id derived from the message id.
 */
import { join } from "node:path";
import {
  CONSUMERS, envelope, inboundMessageSchema, LurkError, parseSessionKey, runControlReplySchema, runIdFor, runRequestSchema,
  safeParseJson, STREAMS, systemInjectSchema, type RunInput, type RunRequest, type SystemInject,
} from "../../shared/contract/index.js";
import type { ActorDefinition, ActorRuntime } from "../../shared/runtime/actor.js";
import { defaultAgent } from "../../shared/runtime/config.js";
import { subscribeRunEnds } from "../../shared/runtime/run-ends.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { AUTHENTICATED_API_CHANNELS } from "./access.js";
import { checkRoutingConfig } from "./bindings.js";
import { Intake } from "./intake.js";
import { Lanes } from "./lanes.js";
import { publishNotice } from "./notices.js";
import { PairingStore } from "./pairing.js";
import { SessionQueues, Work, type DeliveryLike } from "./queue.js";
import { SettingsCache } from "./settings.js";
import { z } from "zod";

const inboundOrInject = z.discriminatedUnion("type", [inboundMessageSchema, systemInjectSchema]);
const RECONCILE_EVERY_MS = 5_000;
const IDLE_BEFORE_CHECK_MS = 15_000;
const INJECT_QUEUE = { mode: "queue" as const, debounceMs: 0, cap: 1000, drop: "new" as const };
const isFinished = (status: string) => status === "done" || status === "error" || status === "aborted";

export const definition: ActorDefinition = {
  name: "router",
  version: LURKBOT_VERSION,
  description: "bindings, DM/group policy, commands, queue modes, one run per session, run dispatch",
  async start(rt) {
    checkRoutingConfig(rt.config);
    for (const channel of AUTHENTICATED_API_CHANNELS) {
      if (rt.config.routing.dm.byChannel[channel] || rt.config.routing.groups.byChannel[channel]) rt.log.warn({ channel }, "routing policies for an API channel are ignored: its token or signature is its access control");
    }
    const lanes = new Lanes();
    const pairing = new PairingStore(join(rt.config.dataDir, "router", "pairing"), rt.config.routing.pairing);
    const settings = new SettingsCache(rt);
    let processed = 0;

    // a run's terminal event (`lurk.run.evt.<runId>.done|error`) frees its lane
    const endWaiters = new Map<string, Array<() => void>>();
    const releaseRun = (runId: string) => {
      lanes.release(runId);
      const waiters = endWaiters.get(runId);
      endWaiters.delete(runId);
      waiters?.forEach((w) => w());
    };
    const ended = (runId: string) => new Promise<void>((resolve) => {
      if (!lanes.isActive(runId)) return resolve();
      endWaiters.set(runId, [...(endWaiters.get(runId) ?? []), resolve]);
    });
    const ends = subscribeRunEnds(rt.nc, rt.subjects, rt.limits, rt.log, (runId) => releaseRun(runId));

    const finishedBefore = async (request: RunRequest) => {
      const { status } = await rt.client.call("sessions", "run", { sessionKey: request.sessionKey, runId: request.runId });
      return isFinished(status);
    };

    /**
     * The run holds the session's lane: store its request in RUNS. A failure keeps the lane (the
     * message is redelivered and retried first, so order holds) unless the message is giving
     * up, in which case the lane goes to the next message.
     */
    const dispatch = async (request: RunRequest, delivery: DeliveryLike): Promise<"dispatched" | "duplicate"> => {
      try {
        if (delivery.redelivered && (await finishedBefore(request))) {
          releaseRun(request.runId); // an earlier delivery got as far as a finished run
          return "duplicate";
        }
        const parsed = runRequestSchema.parse(request);
        const ack = await rt.js.publish(rt.subjects.runRequest(parsed.agentId), JSON.stringify(parsed), { msgID: parsed.runId });
        if (ack.duplicate && (await finishedBefore(request))) {
          // RUNS already had this run (an earlier delivery of the message got it there) and it
          // ended while this delivery waited: no terminal event will come for it any more
          releaseRun(request.runId);
          return "duplicate";
        }
        lanes.markDispatched(parsed.runId);
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

    const queues = new SessionQueues({ lanes, log: rt.log, dispatch, control, abort });
    const intake = new Intake({ rt, queues, settings, pairing, ended, commands: { rt, lanes, queues, settings } });

    rt.consume({
      stream: STREAMS.inbound,
      consumer: CONSUMERS.router,
      schema: inboundOrInject,
      concurrency: 1000,
      handler: async (message, delivery) => {
        if (message.type === "lurk.inbound.message.v1") await intake.handle(message, delivery);
        else {
          const request = await fromInject(message, rt);
          if (request) await queues.submit(new Work(request, delivery, INJECT_QUEUE, Date.now()));
        }
        processed++;
      },
    });

    // runs whose terminal event we missed (bus hiccup, router restart): ask the transcript
    const reconcile = setInterval(() => {
      for (const { runId, sessionKey } of lanes.idleRuns(IDLE_BEFORE_CHECK_MS)) {
        rt.client.call("sessions", "run", { sessionKey, runId }).then((r) => {
          if (isFinished(r.status)) releaseRun(runId);
          else lanes.touch(runId);
        }, () => undefined);
      }
    }, RECONCILE_EVERY_MS);

    rt.serve("router", "status", () => {
      const { active, queued } = lanes.counts();
      return { defaultAgentId: defaultAgent(rt.config).id, agents: rt.config.agents.map((a) => a.id), activeRuns: active, queued, processed };
    });
    rt.serve("router", "lanes", (req) => ({
      lanes: lanes.snapshot(req.sessionKey).map((l) => ({
        sessionKey: l.sessionKey, queued: l.queued, queueMode: settings.peek(l.sessionKey)?.queue?.mode ?? rt.config.routing.queue.mode,
        ...(l.activeRunId ? { activeRunId: l.activeRunId, activeSince: l.activeSince } : {}),
      })),
    }));
    rt.serve("router", "pairing", async (req) => {
      let decided;
      let revoked;
      if (req.action === "approve" || req.action === "deny") {
        if (!req.code) throw new LurkError("VALIDATION_FAILED", `pairing ${req.action} needs a code`);
        decided = req.action === "approve" ? await pairing.approve(req.code, req.decidedBy) : await pairing.deny(req.code);
        if (!decided) throw new LurkError("NOT_FOUND", `no pending pairing code ${req.code.toUpperCase()} (it may have expired; the sender gets a new one by writing again)`);
        rt.emit(`pairing_${req.action === "approve" ? "approved" : "denied"}`, { channel: decided.channel, code: decided.code }, "info");
        if (req.action === "approve" && decided.conversation) {
          await publishNotice(rt, { channel: decided.channel, conversation: decided.conversation, peer: { kind: "dm", id: decided.senderId } }, "You are approved: write your message again.", { deliveryId: `pairing-approved:${decided.channel}:${decided.code}` })
            .catch((err) => rt.log.warn({ err }, "could not tell the sender about the approval"));
        }
      } else if (req.action === "revoke") {
        if (!req.channel || !req.senderId) throw new LurkError("VALIDATION_FAILED", "pairing revoke needs channel and senderId");
        revoked = (await pairing.revoke(req.channel, req.senderId)) ?? undefined;
        if (!revoked) throw new LurkError("NOT_FOUND", `${req.channel}:${req.senderId} is not an approved sender`);
      }
      const { pending, approved } = await pairing.list();
      return { pending, approved, ...(decided ? { decided } : {}), ...(revoked ? { revoked } : {}) };
    });

    return {
      async stop() {
        clearInterval(reconcile);
        ends.stop();
        await pairing.close().catch(() => undefined);
      },
    };
  },
};

/** A system event: `wake: now` starts a run; otherwise it is recorded for the next run. */
async function fromInject(msg: SystemInject, rt: ActorRuntime): Promise<RunRequest | null> {
  const parsedKey = parseSessionKey(msg.sessionKey);
  if (!parsedKey || parsedKey.agentId !== msg.agentId) {
    throw new LurkError("VALIDATION_FAILED", `session key ${msg.sessionKey} does not belong to agent ${msg.agentId}`);
  }
  const entry = (await rt.client.call("sessions", "ensure", { sessionKey: msg.sessionKey, agentId: msg.agentId, sessionType: parsedKey.type })).session;
  if (msg.wake !== "now") {
    await rt.client.call("sessions", "append", {
      sessionKey: msg.sessionKey,
      records: [{ id: `inject:${msg.id}`, ts: msg.ts, kind: "system_event", text: msg.text, meta: { source: msg.source } }],
    });
    return null;
  }
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
