/**
 * The tools actor: the catalog (`lurk.tools.list`) and execution (`lurk.tools.call.<tool>`) of
 * the built-in tools, in a piscina worker pool confined to the calling agent's workspace.
 * Stateless, so any number of instances may run: both subjects use the queue group "tools",
 * so each request is answered once per actor kind (another actor serving tools of its own
 * answers `lurk.tools.list` in its own group, and the caller merges).
 * Background jobs of the `process` tool are the exception: they live in the instance that
 * started them, and its `lurk.tools.job.<instanceId>` takes the calls about them (jobs/).
 * Documents web_fetch downloads are read in a thread of their own (shared/runtime/documents/
 * pool.ts), created here but started only with the first document and stopped when idle.
 * With memory.embeddings, memory_search's vectors are cached in LMDB under the data dir and
 * asked of the agent-runner (`lurk.agent-runner.embed`) from this thread (embeddings/).
 */
import { toolCallRequest, toolCallReply } from "../../shared/contract/index.js";
import type { ActorDefinition } from "../../shared/runtime/actor.js";
import { DocumentPool } from "../../shared/runtime/documents/pool.js";
import { serveToolCatalog } from "../../shared/runtime/tool-catalog.js";
import { InflightCalls } from "../../shared/runtime/tool-inflight.js";
import { LURKBOT_VERSION } from "../../shared/runtime/version.js";
import { availableOnly, explainAvailability } from "./availability.js";
import { handleToolCall } from "./call.js";
import { openMemoryEmbeddings } from "./embeddings/open.js";
import { execHostFor, execMetadata } from "./exec/sandbox.js";
import { allowedCatalog, explainTools } from "../../shared/runtime/tool-policy-config.js";
import { ToolPool } from "./pool.js";
import { serveJobRoutes } from "./jobs/route.js";
import { JobTable, newInstanceId } from "./jobs/table.js";
import { BUILTIN_TOOLS, builtinTool } from "./registry.js";
import { toolDefinition } from "./tool.js";
import { hybridSearchDefinition } from "./tools/memory.js";

export const TOOLS_QUEUE = "tools";

export const definition: ActorDefinition = {
  name: "tools",
  version: LURKBOT_VERSION,
  description: "tool catalog and execution (piscina workers, workspace-confined; exec in a bubblewrap sandbox)",
  /** the exec sandbox in force, for `lurkbot status` (probed once; start reuses it) */
  async metadata(config, log) {
    return execMetadata(await execHostFor(config, log));
  },
  async start(rt) {
    const exec = await execHostFor(rt.config, rt.log);
    const pool = ToolPool.fromConfig(rt.config, rt.log);
    // with memory.embeddings, memory_search's entry says it also ranks by meaning
    const catalog = BUILTIN_TOOLS.map((tool) => toolDefinition(tool, rt.name))
      .map((def) => (def.name === "memory_search" && rt.config.memory.embeddings ? hybridSearchDefinition(def) : def));
    // background jobs (the process tool) live here; calls about another instance's job go there
    const jobs = new JobTable(newInstanceId(), rt.config.tools.jobs, exec);
    const processTool = builtinTool("process");
    // the calls running here, cancelled by lurk.tools.cancel or when their run is aborted or ends
    const inflight = new InflightCalls(rt);
    inflight.listen();
    // documents web_fetch downloads are read in their own worker thread, started on the first one
    const documents = new DocumentPool({ timeoutMs: rt.config.tools.timeoutMs, log: rt.log, timeoutSetting: "tools.timeoutMs", stoppingReason: "the tools actor is stopping", cancelledReason: "the call was cancelled" });
    // memory.embeddings: memory_search's vectors, cached in LMDB and asked of the agent-runner (embeddings/)
    const embeddings = await openMemoryEmbeddings(rt);
    const jobHost = serveJobRoutes(rt, jobs, (req) => handleToolCall(rt, pool, processTool!, req, exec, { jobs: jobHost, inflight, documents }));
    rt.log.info({ toolsInstance: jobs.instanceId }, "tools instance ready");

    // the tool policy (shared/runtime/tool-policy.ts) filters the catalog per agent and session; call.ts enforces it
    // served in the queue group and announced on `lurk.tools.catalog` once live (agent-runners refresh)
    // tools that need a setting besides the policy (image: an image model) are left out without it (availability.ts)
    serveToolCatalog(rt, (req) => ({ actor: rt.name, tools: availableOnly(rt.config, allowedCatalog(rt.config, BUILTIN_TOOLS, catalog, req), req) }), { queue: TOOLS_QUEUE });
    rt.serve("tools", "explain", (req) => explainAvailability(rt.config, explainTools(rt.config, rt.name, BUILTIN_TOOLS, req), req), { queue: TOOLS_QUEUE });
    for (const tool of BUILTIN_TOOLS) {
      for (const name of [tool.name, ...(tool.aliases ?? [])]) {
        rt.serveSubject(`call-${name}`, rt.subjects.toolCall(name), toolCallRequest, toolCallReply,
          (req) => handleToolCall(rt, pool, tool, req, exec, { jobs: jobHost, inflight, documents, ...(embeddings ? { embeddings: embeddings.host } : {}) }), { queue: TOOLS_QUEUE });
      }
    }
    return {
      stop: async () => {
        await jobs.stopAll();
        await pool.close();
        await documents.close();
        await embeddings?.cache.close();
      },
    };
  },
};
