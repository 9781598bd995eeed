/**
 * The subagents actor (seed 001 §3.6): spawns child runs, waits for them and announces their
 * results back to the requester's session. Serves `lurk.subagents.spawn|list|stop`; the child
 * registry is LMDB under `<dataDir>/subagents` (store.ts).
 *
 * spawn answers at once with the child's session key (`agent:<agentId>:subagent:<childId>`)
 * and run id, after the child is stored and its run request is in RUNS (`Nats-Msg-Id` = run
 * id). A spawn carrying a causationId (the tool call id of `sessions_spawn`) is idempotent:
 * a retry gets the same child. Limits (limits.ts) refuse with LIMIT_EXCEEDED.
 * The rest of a child's life (terminal event or timeout, announce, cleanup, reconcile after a
 * restart) is lifecycle.ts.
 * Several instances may run (on several hosts); one is active, through the lease `subagents`
 * (`subagents.leaseTtlMs`/`leaseRenewMs`; shared/runtime/active-instance.ts). Only it spawns,
 * follows children and announces; a standby relays the requests it takes to it. The active one
 * writes every record change to the KV bucket lurk_subagents (replica.ts); an instance taking the
 * lease loads it first, then reconciles the children left running or announcing.
 */
import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import {
  buildSessionKey, envelope, LurkError, parseSessionKey, runRequestSchema,
  type ParsedRequestOf, type SubagentRecord,
} from "../../shared/contract/index.js";
import { ActiveInstance } from "../../shared/runtime/active-instance.js";
import type { ActorDefinition, ActorRuntime } from "../../shared/runtime/actor.js";
import type { LurkConfig } from "../../shared/runtime/config.js";
import { subscribeRunEnds } from "../../shared/runtime/run-ends.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { ChildLifecycle } from "./lifecycle.js";
import { childDepth } from "./limits.js";
import { ChildReplica } from "./replica.js";
import { ChildStore, type ChildRecord } from "./store.js";

const SWEEP_EVERY_MS = 10_000;
const PRUNE_EVERY_MS = 3600_000;

export function subagentsDir(config: LurkConfig): string {
  return join(config.dataDir, "subagents");
}

export const definition: ActorDefinition = {
  name: "subagents",
  version: LURKBOT_VERSION,
  description: "child runs: spawn, wait, announce results back to the requester session (LMDB)",
  async start(rt) {
    const store = new ChildStore(join(subagentsDir(rt.config), "store"));
    const replica = await ChildReplica.open(rt.nc, store, rt.log);
    store.onChange = (runId, record) => replica.write(runId, record);
    const life = new ChildLifecycle(rt, store);

    const instance = await ActiveInstance.open(rt, "subagents", {
      ttlMs: rt.config.subagents.leaseTtlMs,
      renewMs: rt.config.subagents.leaseRenewMs,
      takeOver: async () => rt.log.info(await replica.load(), "subagent records loaded from the replica bucket"),
      // the terminal events are followed from start-up, so a child ending while this reconciles is seen either way
      activated: () => {
        const pending = store.inStatus("running", "announcing");
        if (pending.length) rt.log.info({ children: pending.length }, "reconciling children left running or announcing");
        for (const record of pending) void life.reconcile(record).catch((err) => rt.log.warn({ err, runId: record.runId }, "reconcile failed; the sweep retries"));
      },
      standBy: () => life.clearAll(), // timeouts are the next holder's; work already started goes on
    });

    const ends = subscribeRunEnds(rt.nc, rt.subjects, rt.limits, rt.log, (runId, _kind, read) => {
      if (!instance.isActive() || !store.get(runId)) return;
      const event = read();
      if (event) life.onTerminal(runId, event).catch((err) => rt.log.warn({ err, runId }, "could not handle a child's end"));
    });
    await rt.nc.flush();

    const sweeper = setInterval(() => {
      if (instance.isActive()) void life.sweep();
    }, SWEEP_EVERY_MS);
    sweeper.unref();
    const pruner = setInterval(() => {
      if (!instance.isActive()) return;
      store.prune(Date.now() - rt.config.subagents.archiveDays * 86_400_000).catch((err) => rt.log.warn({ err }, "prune failed"));
    }, PRUNE_EVERY_MS);
    pruner.unref();

    const relay = instance.relay;
    relay.serve("spawn", (req) => spawn(rt, store, life, req));
    relay.serve("list", (req) => ({ children: store.list(req.requesterSessionKey).map(publicRecord) }));
    relay.serve("stop", async (req) => {
      const targets = stopTargets(store, req);
      let stopped = 0;
      for (const r of targets) if (await life.stop(r.runId, "stopped on request")) stopped++;
      return { stopped };
    });
    // the first try decides before the actor reports started: active (records loaded) or standby
    await instance.start();

    return {
      async stop() {
        clearInterval(sweeper);
        clearInterval(pruner);
        life.clearAll();
        ends.stop();
        await replica.drain();
        await instance.stop(); // released: a standby takes over at once
        await store.close();
      },
    };
  },
};

async function spawn(rt: ActorRuntime, store: ChildStore, life: ChildLifecycle, req: ParsedRequestOf<"subagents", "spawn">) {
  const requester = parseSessionKey(req.requesterSessionKey);
  if (!requester) throw new LurkError("VALIDATION_FAILED", `requesterSessionKey "${req.requesterSessionKey}" is not a session key of an agent (agent:<agentId>:...)`);
  const agentId = req.agentId ?? requester.agentId;
  if (!rt.config.agents.some((a) => a.id === agentId)) throw new LurkError("NOT_FOUND", `no agent "${agentId}" is configured (agents: ${rt.config.agents.map((a) => a.id).join(", ")})`);
  const cfg = rt.config.subagents;
  // a retried spawn of the same tool call names the same child
  const childId = req.causationId
    ? createHash("sha256").update(`${req.requesterSessionKey}\u0000${req.causationId}`).digest("hex").slice(0, 16)
    : randomBytes(8).toString("hex");
  const runId = `sub-${childId}`;
  const existing = store.get(runId);
  if (existing) return { status: "accepted" as const, childSessionKey: existing.childSessionKey, runId };

  const childSessionKey = buildSessionKey({ type: "subagent", agentId, childId });
  const timeoutSeconds = req.timeoutSeconds ?? cfg.defaultTimeoutSeconds;
  const record: ChildRecord = {
    childSessionKey, runId, requesterSessionKey: req.requesterSessionKey, agentId, task: req.task,
    ...(req.label ? { label: req.label } : {}),
    depth: childDepth(req.requesterSessionKey, store.byChildSessionKey(req.requesterSessionKey)),
    cleanup: req.cleanup ?? cfg.cleanup, status: "running", startedAt: Date.now(), timeoutSeconds,
  };
  await store.create(record, cfg);

  const run = runRequestSchema.parse(envelope("lurk.run.request.v1", {
    runId, sessionKey: childSessionKey, agentId, sessionType: "subagent" as const, trigger: "subagent" as const, causationId: req.id,
    inputs: [{ kind: "user" as const, text: req.task, attachments: [] }],
    deliver: false,
    options: { ...(req.model ? { model: req.model } : {}), ...(req.thinking ? { thinking: req.thinking } : {}), timeoutMs: timeoutSeconds * 1000 },
    subagent: { parentSessionKey: req.requesterSessionKey, task: req.task, ...(req.label ? { label: req.label } : {}), depth: record.depth },
  }));
  try {
    await rt.js.publish(rt.subjects.runRequest(agentId), JSON.stringify(run), { msgID: runId });
  } catch (err) {
    await store.remove(runId);
    throw new LurkError("UNAVAILABLE", `could not queue the child run: ${LurkError.from(err).message}`, { cause: err });
  }
  life.watch(record);
  rt.emit("spawned", { runId, sessionKey: childSessionKey, requesterSessionKey: req.requesterSessionKey, depth: record.depth, label: req.label });
  rt.log.info({ runId, sessionKey: childSessionKey, requesterSessionKey: req.requesterSessionKey, depth: record.depth }, "child spawned");
  return { status: "accepted" as const, childSessionKey, runId };
}

function stopTargets(store: ChildStore, req: ParsedRequestOf<"subagents", "stop">): ChildRecord[] {
  if (req.runId || req.childSessionKey) {
    const record = req.runId ? store.get(req.runId) : store.byChildSessionKey(req.childSessionKey!);
    if (!record) throw new LurkError("NOT_FOUND", `no subagent ${req.runId ?? req.childSessionKey} (see \`lurkbot subagents list\`)`);
    if (req.requesterSessionKey && record.requesterSessionKey !== req.requesterSessionKey) {
      throw new LurkError("NOT_FOUND", `no subagent ${req.runId ?? req.childSessionKey} of session ${req.requesterSessionKey}`);
    }
    return [record];
  }
  if (!req.all) throw new LurkError("VALIDATION_FAILED", "name the child to stop (runId or childSessionKey), or set all (with requesterSessionKey: that session's children)");
  return store.list(req.requesterSessionKey).filter((r) => r.status === "running" || r.status === "announcing");
}

/** The contract's record: the internal fields (pending reply, timeout) stay in the store. */
function publicRecord(r: ChildRecord): SubagentRecord {
  const { reply: _reply, timeoutSeconds: _timeout, announcedAt: _announced, ...rest } = r;
  return rest;
}
