/** The sessions actor: serves `lurk.sessions.<op>` from its LMDB store. One active instance. */
import { join } from "node:path";
import type { ActorDefinition } from "../../shared/runtime/actor.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { jsonBytes } from "../../shared/contract/index.js";
import { newestWithin, replyBudget } from "./reply-size.js";
import { SessionStore } from "./store.js";

export const definition: ActorDefinition = {
  name: "sessions",
  version: LURKBOT_VERSION,
  description: "session entries and append-only transcripts (LMDB)",
  async start(rt) {
    const policy = rt.config.sessions;
    const store = new SessionStore(join(rt.config.dataDir, "sessions"), Date.now, {
      resetPolicy: policy,
      // daily/idle resets done while a run begins (or a session is ensured)
      onReset: (r) => rt.emit("reset", { ...r, lastActivity: new Date(r.lastActivity).toISOString() }),
      onFlushError: (err) => rt.log.error({ err }, "flushing the sessions store to disk failed; the next write retries"),
    });
    // replies with transcript records keep the newest that fit the bus's message size (reply-size.ts)
    const budget = () => replyBudget(rt.nc.info?.max_payload);
    rt.serve("sessions", "begin", async (req) => {
      const begun = await store.begin({ ...req, ...(req.origin ? { lastOrigin: req.origin } : {}) });
      const fitted = newestWithin(begun.records, budget() - jsonBytes({ ...begun, records: [] }));
      if (!fitted.truncated) return begun;
      rt.log.info({ sessionKey: req.sessionKey, kept: fitted.records.length, of: begun.records.length }, "a run's history is larger than one reply: the runner pages back for the rest");
      return { ...begun, records: fitted.records, incremental: false, truncated: true };
    });
    rt.serve("sessions", "ensure", (req) => store.ensure({ ...req, ...(req.origin ? { lastOrigin: req.origin } : {}) }));
    rt.serve("sessions", "get", (req) => ({ session: store.get(req.sessionKey) }));
    rt.serve("sessions", "list", (req) => ({ sessions: store.list(req) }));
    rt.serve("sessions", "history", (req) => {
      const session = store.get(req.sessionKey);
      const fitted = newestWithin(store.history(req.sessionKey, req.limit, req.sessionId, req.beforeSeq), budget() - jsonBytes({ session, records: [] }));
      return { session, records: fitted.records, ...(fitted.truncated ? { truncated: true } : {}) };
    });
    rt.serve("sessions", "append", (req) => store.append(req.sessionKey, req.records, req.usage));
    rt.serve("sessions", "run", (req) => store.run(req.runId));
    rt.serve("sessions", "usage", async (req) => ({ session: await store.addUsage(req.sessionKey, req.usage, req.model, req.provider) }));
    rt.serve("sessions", "patch", async (req) => ({ session: await store.patch(req.sessionKey, req.patch) }));
    rt.serve("sessions", "reset", async (req) => {
      const result = await store.reset(req.sessionKey);
      rt.emit("reset", { sessionKey: req.sessionKey, reason: req.reason });
      return result;
    });
    rt.serve("sessions", "delete", async (req) => ({ deleted: await store.delete(req.sessionKey) }));
    return { stop: () => store.close() };
  },
};
