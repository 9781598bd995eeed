/**
 * The router: reads INBOUND (channel messages and system injects), picks agent and session,
 * keeps one active run per session (lanes), and hands runs to agent-runners through RUNS.
 * An inbound message is acked only after its run request is persisted in RUNS; while it waits
 * for a busy session it stays unacked (in-progress acks keep it from redelivery), so a router
 * crash loses nothing. Redeliveries are harmless: the run id is derived from the message id and
 * RUNS deduplicates by it; a run that already finished is not started again.
 */
import {
  CONSUMERS, envelope, inboundMessageSchema, LurkError, parseSessionKey, runIdFor, runRequestSchema, STREAMS, systemInjectSchema,
  type InboundMessage, type RunRequest, type SystemInject,
} from "../../shared/contract/index.js";
import type { ActorDefinition, ActorRuntime } from "../../shared/runtime/actor.js";
import type { DeliveryInfo } from "../../shared/runtime/consumer.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { Lanes } from "./lanes.js";
import { routeInbound } from "./resolve.js";
import { z } from "zod";

const inboundOrInject = z.discriminatedUnion("type", [inboundMessageSchema, systemInjectSchema]);
const RECONCILE_EVERY_MS = 5_000;
const IDLE_BEFORE_CHECK_MS = 15_000;

export const definition: ActorDefinition = {
  name: "router",
  version: LURKBOT_VERSION,
  description: "agent and session resolution, one run per session, run dispatch",
  async start(rt) {
    const lanes = new Lanes();
    let processed = 0;

    // run lifecycle: any event keeps the lane alive, a terminal one frees it
    // a run's terminal event (`lurk.run.evt.<runId>.done|error`) frees its lane
    const runIdToken = rt.subjects.prefix.split(".").length + 2;
    const events = rt.subjects.runTerminalAll.map((subject) => rt.nc.subscribe(subject, {
      callback: (_err, msg) => {
        const runId = msg.subject.split(".")[runIdToken];
        if (runId) lanes.release(runId);
      },
    }));

    const finishedBefore = async (request: RunRequest) => {
      const { status } = await rt.client.call("sessions", "run", { sessionKey: request.sessionKey, runId: request.runId });
      return status === "done" || status === "error" || status === "aborted";
    };

    /**
     * Holds the session's lane for the run, then stores the run request in RUNS. A failure keeps
     * the lane (the message is redelivered and retried first, so order holds) unless the message
     * is giving up, in which case the lane goes to the next message.
     */
    const dispatch = async (request: RunRequest, delivery: DeliveryInfo) => {
      if (lanes.isDispatched(request.runId)) return; // a redelivery of a message whose run is under way
      await lanes.acquire(request.sessionKey, request.runId);
      try {
        if (delivery.redelivered && (await finishedBefore(request))) {
          lanes.release(request.runId); // an earlier delivery got as far as a finished run
          return;
        }
        const parsed = runRequestSchema.parse(request);
        const ack = await rt.js.publish(rt.subjects.runRequest(parsed.agentId), JSON.stringify(parsed), { msgID: parsed.runId });
        if (ack.duplicate && (await finishedBefore(request))) {
          // RUNS already had this run (an earlier delivery of the message got it there) and it
          // ended while this delivery waited: no terminal event will come for it any more
          lanes.release(request.runId);
          return;
        }
        lanes.markDispatched(parsed.runId);
        rt.emit("dispatched", { runId: parsed.runId, sessionKey: parsed.sessionKey, trigger: parsed.trigger }, "debug");
      } catch (err) {
        const error = LurkError.from(err);
        if (delivery.deliveryCount >= rt.config.bus.maxDeliver || !error.retryable) lanes.release(request.runId);
        throw error;
      }
    };

    rt.consume({
      stream: STREAMS.inbound,
      consumer: CONSUMERS.router,
      schema: inboundOrInject,
      concurrency: 1000,
      handler: async (message, delivery) => {
        const request = message.type === "lurk.inbound.message.v1" ? fromInbound(message, rt) : await fromInject(message, rt);
        if (request) await dispatch(request, delivery);
        processed++;
      },
    });

    // runs whose terminal event we missed (bus hiccup, router restart): ask the transcript
    const reconcile = setInterval(() => {
      for (const runId of lanes.idleRuns(IDLE_BEFORE_CHECK_MS)) {
        const lane = lanes.snapshot().find((l) => l.activeRunId === runId);
        if (!lane) continue;
        rt.client.call("sessions", "run", { sessionKey: lane.sessionKey, runId }).then((r) => {
          if (r.status === "done" || r.status === "error" || r.status === "aborted") lanes.release(runId);
          else lanes.touch(runId);
        }, () => undefined);
      }
    }, RECONCILE_EVERY_MS);

    rt.serve("router", "status", () => {
      const { active, queued } = lanes.counts();
      const defaultAgentId = rt.config.agents.find((a) => a.default)?.id ?? rt.config.agents[0]!.id;
      return { defaultAgentId, agents: rt.config.agents.map((a) => a.id), activeRuns: active, queued, processed };
    });
    rt.serve("router", "lanes", (req) => ({
      lanes: lanes.snapshot(req.sessionKey).map((l) => ({
        sessionKey: l.sessionKey, queued: l.queued, queueMode: "followup" as const,
        ...(l.activeRunId ? { activeRunId: l.activeRunId, activeSince: l.activeSince } : {}),
      })),
    }));

    return {
      async stop() {
        clearInterval(reconcile);
        for (const sub of events) sub.unsubscribe();
      },
    };
  },
};

function fromInbound(msg: InboundMessage, rt: ActorRuntime): RunRequest {
  const route = routeInbound(msg, rt.config);
  return envelope("lurk.run.request.v1", {
    runId: runIdFor(msg.channel, msg.id),
    sessionKey: route.sessionKey,
    agentId: route.agentId,
    sessionType: route.sessionType,
    trigger: "message" as const,
    causationId: msg.id,
    inputs: [{ kind: "user" as const, text: msg.text, attachments: msg.attachments, sourceId: msg.id }],
    origin: {
      channel: msg.channel,
      conversation: msg.conversation,
      peer: msg.peer,
      sender: msg.sender,
      messageIds: [msg.id],
      ...(msg.accountId ? { accountId: msg.accountId } : {}),
    },
    deliver: true,
    options: {},
  });
}

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
