/**
 * The router: reads INBOUND (channel messages and system injects), applies DM/group policy and
 * pairing, answers chat commands, picks agent(s) and session, applies the session's queue mode,
 * keeps one active run per session (lanes), and hands runs to agent-runners through RUNS
 * (term.ts: the delivery rules).
 * Several instances may run (on several hosts); one is active, through the lease `router` in
 * lurk_leases (`routing.leaseTtlMs`/`leaseRenewMs`; shared/runtime/active-instance.ts). Only it
 * reads INBOUND (a term, term.ts) and answers requests (a standby relays them to it). The runs
 * holding lanes, the DM pairing records, the groups' kept context and the messages handled
 * without a run of their own are in the KV bucket lurk_router (replica.ts); the instance taking
 * the lease loads them, so a session's running run is not doubled by the next message, a paired
 * sender stays paired, kept group messages still reach the model once, and a merged message whose
 * ack was lost gets no second answer. Messages waiting in a term are unacked: a stopping
 * instance hands them back, a crashed one's come again after the ack wait.
 */
import { join } from "node:path";
import { LurkError } from "../../shared/contract/index.js";
import { ActiveInstance } from "../../shared/runtime/active-instance.js";
import type { ActorDefinition } from "../../shared/runtime/actor.js";
import { defaultAgent } from "../../shared/runtime/config.js";
import { deadLocalHolder } from "../../shared/runtime/dead-holder.js";
import { subscribeRunEnds } from "../../shared/runtime/run-ends.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { AUTHENTICATED_API_CHANNELS } from "../../shared/runtime/access-policy.js";
import { checkRoutingConfig } from "./bindings.js";
import { PairingStore } from "./pairing.js";
import { decidePairing } from "./pairing-owners.js";
import { RouterReplica } from "./replica.js";
import { subscribeRunRequests, type RunRequestWatch } from "./run-requests.js";
import { subscribeRunStarts } from "./run-starts.js";
import { SettingsCache } from "./settings.js";
import { RunsReader } from "./stored-runs.js";
import { startTerm, type RouterTerm, type TermState } from "./term.js";

export const definition: ActorDefinition = {
  name: "router",
  version: LURKBOT_VERSION,
  description: "bindings, DM/group policy, commands, queue modes, one run per session, run dispatch",
  async start(rt) {
    checkRoutingConfig(rt.config);
    for (const channel of AUTHENTICATED_API_CHANNELS) {
      if (rt.config.routing.dm.byChannel[channel] || rt.config.routing.groups.byChannel[channel]) rt.log.warn({ channel }, "routing policies for an API channel are ignored: its token or signature is its access control");
    }
    const pairing = new PairingStore(join(rt.config.dataDir, "router", "pairing"), rt.config.routing.pairing);
    const replica = await RouterReplica.open(rt.nc, pairing, rt.log);
    pairing.onChange = (change) => replica.pairingChanged(change);
    /** sessions' settings, cached for a term: another instance may have changed them while this one stood by */
    let settings = new SettingsCache(rt);
    let processed = 0;
    /** the active term (undefined while standing by) */
    let term: RouterTerm | undefined;
    let loaded: TermState = { runs: [], groups: [], handled: [], handOffs: [] };
    let stopping: Promise<void> = Promise.resolve();
    const runsReader = new RunsReader(rt.nc, rt.subjects, rt.limits, rt.log);
    /**
     * Run requests as they are stored (run-requests.ts), followed from a takeover until the term
     * ends (a standby is not sent every request): those seen before the term starts (after RUNS
     * was read) wait in `early` for it.
     */
    let stored: { stop(): void } | undefined;
    let watch: RunRequestWatch | undefined;
    let early: Array<[runId: string, sessionKey: string]> = [];

    const instance: ActiveInstance<"router"> = await ActiveInstance.open(rt, "router", {
      ttlMs: rt.config.routing.leaseTtlMs,
      renewMs: rt.config.routing.leaseRenewMs,
      takeOver: async () => {
        await stopping; // the last term's messages are handed back first
        // followed before RUNS is read, so no request stored meanwhile is missed
        early = [];
        stored?.stop();
        stored = subscribeRunRequests(rt.nc, rt.subjects, rt.limits, rt.log, {
          known: (runId) => watch?.known(runId) ?? false,
          stored: (runId, sessionKey) => (watch ? watch.stored(runId, sessionKey) : void early.push([runId, sessionKey])),
        });
        const result = await replica.load();
        // and the runs RUNS still holds: also those stored or started while no router was active
        const readAt = Date.now();
        const inRuns = await runsReader.read(true);
        const storedRuns = inRuns.runs.filter((run) => !result.runs.some((r) => r.runId === run.runId));
        loaded = { runs: [...result.runs, ...storedRuns], groups: result.groups, handled: result.handled, handOffs: result.handOffs, ...(inRuns.complete ? { inRuns: { ids: inRuns.runIds, at: readAt } } : {}) };
        settings = new SettingsCache(rt);
        rt.log.info({ runs: result.runs.length, storedRuns: storedRuns.length, pairing: result.pairing, groups: result.groups.length, handled: result.handled.length, handOffs: result.handOffs.length }, "router state loaded from the replica bucket and RUNS");
      },
      activated: () => {
        const begun = startTerm({ rt, pairing, settings, replica, runs: runsReader, isActive: () => instance.isActive(), processed: () => processed++ }, loaded);
        term = begun;
        // runs other actors store in RUNS hold their lane from their storing
        watch = { known: (runId) => begun.lanes.isHeld(runId), stored: (runId, sessionKey) => begun.runStored(runId, sessionKey) };
        for (const [runId, sessionKey] of early.splice(0)) if (!begun.lanes.isHeld(runId)) begun.runStored(runId, sessionKey);
      },
      // the lease was lost again during the takeover: a standby follows no run requests
      abandoned: () => {
        stored?.stop();
        stored = undefined;
        early = [];
      },
      standBy: () => {
        const ending = term;
        term = undefined;
        watch = undefined;
        stored?.stop();
        stored = undefined;
        stopping = ending ? ending.stop() : Promise.resolve();
      },
      // a restart after a crash on this host reads INBOUND at once, not after leaseTtlMs
      holderGone: deadLocalHolder(rt.nc, "router"),
    });
    const activeTerm = () => {
      if (!term) throw new LurkError("UNAVAILABLE", "this router instance is not active yet; retry in a few seconds");
      return term;
    };
    const ends = subscribeRunEnds(rt.nc, rt.subjects, rt.limits, rt.log, (runId) => term?.releaseRun(runId));
    // runs other actors store in RUNS (child runs, cron agentTurns) hold their session's lane from their start
    const starts = subscribeRunStarts(rt.nc, rt.subjects, rt.limits, rt.log, (runId, sessionKey) => term?.runStarted(runId, sessionKey));
    const relay = instance.relay;

    relay.serve("status", async () => {
      const { active, queued } = activeTerm().lanes.counts();
      return { defaultAgentId: defaultAgent(rt.config).id, agents: rt.config.agents.map((a) => a.id), activeRuns: active, queued, processed };
    });
    relay.serve("lanes", async (req) => ({
      lanes: activeTerm().lanes.snapshot(req.sessionKey).map((l) => ({
        sessionKey: l.sessionKey, queued: l.queued, queueMode: settings.peek(l.sessionKey)?.queue?.mode ?? rt.config.routing.queue.mode,
        ...(l.activeRunId ? { activeRunId: l.activeRunId, activeSince: l.activeSince } : {}),
      })),
    }));
    relay.serve("pairing", async (req) => {
      let decided;
      let revoked;
      if (req.action === "approve" || req.action === "deny") {
        if (!req.code) throw new LurkError("VALIDATION_FAILED", `pairing ${req.action} needs a code`);
        decided = await decidePairing(rt, pairing, req.action, req.code, req.decidedBy);
      } else if (req.action === "revoke") {
        if (!req.channel || !req.senderId) throw new LurkError("VALIDATION_FAILED", "pairing revoke needs channel and senderId");
        revoked = (await pairing.revoke(req.channel, req.senderId)) ?? undefined;
        if (!revoked) throw new LurkError("NOT_FOUND", `${req.channel}:${req.senderId} is not an approved sender`);
      }
      const { pending, approved } = await pairing.list();
      return { pending, approved, ...(decided ? { decided } : {}), ...(revoked ? { revoked } : {}) };
    });

    // the first try decides before the actor reports started: active (state loaded) or standby
    await instance.start();

    return {
      async stop() {
        const ending = term;
        term = undefined;
        stored?.stop();
        stored = undefined;
        await ending?.stop(); // waiting messages handed back
        ends.stop();
        starts.stop();
        await replica.drain();
        await instance.stop(); // released: a standby takes over at once
        await pairing.close().catch(() => undefined);
      },
    };
  },
};
