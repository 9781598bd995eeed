/**
 * A run request published as the router would (LURK_RUNS, `Nats-Msg-Id` = run id), its events
 * collected until the terminal one: for suites that drive the agent-runner without a router.
 */
import type { JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { runEventSchema, subjects, type Attachment, type RunEvent, type RunRequest } from "../../shared/contract/index.js";
import { waitFor } from "./actors.js";

export interface DirectRunOptions {
  sessionKey: string;
  agentId?: string;
  options?: RunRequest["options"];
  attachments?: Attachment[];
}

/** `tag` makes the ids of one suite's runs its own (`req-<tag>N-…`, `run-<tag>-N-…`, conversation `<tag>conv-N`). */
export async function runDirect(admin: NatsConnection, js: JetStreamClient, tag: string, n: number, text: string, opts: DirectRunOptions): Promise<{ req: RunRequest; events: RunEvent[]; terminal: RunEvent["event"] }> {
  const S = subjects();
  const agentId = opts.agentId ?? "main";
  const req = {
    type: "lurk.run.request.v1", id: `req-${tag}${n}-${Date.now()}`, ts: Date.now(), runId: `run-${tag}-${n}-${Date.now().toString(36)}`,
    sessionKey: opts.sessionKey, agentId, sessionType: "dm", trigger: "message",
    inputs: [{ kind: "user", text, attachments: opts.attachments ?? [] }],
    origin: { channel: "cli", conversation: `${tag}conv-${n}`, messageIds: [`${tag}msg-${n}`] }, deliver: true, options: opts.options ?? {},
  } as RunRequest;
  const events: RunEvent[] = [];
  const sub = admin.subscribe(S.runEvents(req.runId), { callback: (_e, msg) => void events.push(runEventSchema.parse(msg.json())) });
  await admin.flush();
  await js.publish(S.runRequest(agentId), JSON.stringify(req), { msgID: req.runId });
  const terminal = await waitFor(() => events.find((e) => e.event.kind === "done" || e.event.kind === "error"), 30_000, `terminal event of ${req.runId}`);
  sub.unsubscribe();
  return { req, events, terminal: terminal.event };
}
