/**
 * A message handed to a running run, when the router that handed it dies before that run ended:
 * the router of the rig as a process (host A, active) and a second one in process (host B,
 * standby), the sessions actor and a scripted runner that accepts hand-offs. Host A hands the
 * message to the run (followup) and is SIGKILLed; the run ends while no router is active. Host B
 * takes over, frees the run's lane (its transcript says done) and gets the message again after
 * the ack wait, with the session idle. The hand-off was replicated before it was asked
 * (replica.ts `handoff.<hash>`), so host B checks that run's transcript: the run took the message
 * (answered it in its reply), so it gets no run of its own; a run that ended without taking it
 * leaves it a run of its own.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Kvm } from "@nats-io/kv";
import { recordIds, ROUTER_BUCKET, type RunRequest } from "../shared/contract/index.js";
import type { ActorRuntime } from "../shared/runtime/actor.js";
import { BusClient } from "../shared/runtime/client.js";
import { loadConfig } from "../shared/runtime/config.js";
import { definition as routerActor } from "../services/router/actor.js";
import { handledKey, handOffKey } from "../services/router/replica.js";
import { startInProcess, waitFor } from "./harness/actors.js";
import { RouterRig } from "./harness/router-rig.js";

const ACK_WAIT_MS = 4_000;

describe("router failover: a message handed to a run that ended while no router was active", () => {
  const rig = new RouterRig();
  const { web, runOf, noRun, noticeFor, controls } = rig;
  const roles: string[] = [];
  let hostB: ActorRuntime | undefined;
  let runnerBus: BusClient;

  /** the replicated entry under `key` in lurk_router (undefined: none) */
  const replicated = async (key: string) => {
    const entry = await (await new Kvm(rig.admin).open(ROUTER_BUCKET)).get(key);
    return entry?.operation === "PUT" ? entry.json<Record<string, unknown>>() : undefined;
  };
  /** the run's transcript as an agent-runner writes it: started, the handed input if it took it, done */
  const runTook = async (run: RunRequest, handed?: { controlId: string; text: string }) => {
    const { runId, sessionKey } = run;
    await runnerBus.call("sessions", "append", {
      sessionKey,
      records: [
        { id: recordIds.started(runId), ts: Date.now(), runId, kind: "run_marker", runStatus: "started", meta: { trigger: "user" } },
        ...(handed ? [{ id: recordIds.mailboxInput(runId, handed.controlId), ts: Date.now(), runId, kind: "message" as const, message: { role: "user" as const, content: [{ type: "text" as const, text: handed.text }] } }] : []),
        { id: recordIds.marker(runId, "done"), ts: Date.now(), runId, kind: "run_marker", runStatus: "done", text: "both answered" },
      ],
    });
  };
  /** host A (active) hands `second` to the first message's run, then dies; returns both and the control */
  const handedThenKilled = async (group: string) => {
    await noticeFor((await web(group, "/queue followup")).id);
    const first = await web(group, "first");
    const run = await runOf(first.runId);
    rig.acceptControls = true;
    const second = await web(group, "and this too");
    const ctl = await waitFor(() => controls.find((c) => c.runId === run.runId && c.action === "followup"), 10_000, "the hand-off");
    rig.acceptControls = false;
    assert.equal((await replicated(handOffKey(second.runId)))?.handedTo, run.runId, "replicated before it was asked");
    return { run, second, ctl };
  };
  const activated = async (change: () => Promise<unknown>, what: string) => {
    const activations = roles.filter((r) => r === "active").length;
    await change();
    await waitFor(() => roles.filter((r) => r === "active").length > activations || undefined, 10_000, what);
  };
  const failOver = () => activated(() => rig.actor("router").kill(), "host B active");
  const startHostB = async () => (hostB = await startInProcess(routerActor, rig.nats, { ...loadConfig(rig.nats.env()), dataDir: join(rig.nats.home, "host-b") }));
  /** host A again as a process, active; host B a new standby */
  const backToHostA = async () => {
    await rig.restart("router");
    await activated(() => hostB!.stop(), "host A active");
    await startHostB();
  };

  before(async () => {
    await rig.start({
      agents: [{ id: "main", default: true }],
      routing: { leaseTtlMs: 3_000, leaseRenewMs: 1_000, queue: { controlTimeoutMs: 2_000 }, commands: { owners: ["web:owner"] } },
      bus: { ackWaitMs: ACK_WAIT_MS },
    }, ["sessions", "router"]);
    runnerBus = new BusClient(rig.runner);
    rig.admin.subscribe("lurk.evt.router.*", { callback: (_e, m) => void roles.push(m.subject.split(".").at(-1)!) });
    await rig.admin.flush();
    await startHostB();
  });
  after(async () => {
    await hostB?.stop();
    await rig.stop();
  });

  it("the run took it: the next router acks it as handed, with no run of its own", { timeout: 60_000 }, async () => {
    const { run, second, ctl } = await handedThenKilled("g-took");
    await runTook(run, { controlId: ctl.id, text: ctl.input!.text });
    await failOver();
    // the message comes again after the ack wait; the session is idle by then (the run's transcript says done)
    await waitFor(() => replicated(handledKey(`web:${second.id}`)), 3 * ACK_WAIT_MS, "the message handled as handed by host B");
    await noRun(second.runId, 500);
    await backToHostA();
  });

  it("the run ended without taking it: the next router gives it a run of its own", { timeout: 60_000 }, async () => {
    const { run, second } = await handedThenKilled("g-left");
    await runTook(run);
    await failOver();
    const own = await waitFor(async () => (await rig.runRequests()).find((r) => r.runId === second.runId), 3 * ACK_WAIT_MS, "its own run");
    assert.deepEqual(own.inputs.map((i) => i.text), ["and this too"]);
    assert.equal(await replicated(handledKey(`web:${second.id}`)), undefined);
  });
});
