/** The sessions actor: serves `lurk.sessions.<op>` from its LMDB store. One active instance. */
import { join } from "node:path";
import type { ActorDefinition } from "../../shared/runtime/actor.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
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
    rt.serve("sessions", "begin", (req) => store.begin({ ...req, ...(req.origin ? { lastOrigin: req.origin } : {}) }));
    rt.serve("sessions", "ensure", (req) => store.ensure({ ...req, ...(req.origin ? { lastOrigin: req.origin } : {}) }));
    rt.serve("sessions", "get", (req) => ({ session: store.get(req.sessionKey) }));
    rt.serve("sessions", "list", (req) => ({ sessions: store.list(req) }));
    rt.serve("sessions", "history", (req) => ({ session: store.get(req.sessionKey), records: store.history(req.sessionKey, req.limit, req.sessionId) }));
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
