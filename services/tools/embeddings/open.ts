/**
 * The tools actor's vectors when memory.embeddings is set: the LMDB cache under
 * `<dataDir>/tools/embeddings` and the host that asks the agent-runner. Undefined without the
 * setting (memory_search is then the keyword search alone, as before); lmdb is then not even
 * loaded (imported here only when the setting is there).
 */
import { join } from "node:path";
import type { ActorRuntime } from "../../../shared/runtime/actor.js";
import type { VectorCache } from "./cache.js";
import type { MemoryEmbeddings } from "./host.js";

export async function openMemoryEmbeddings(rt: ActorRuntime): Promise<{ host: MemoryEmbeddings; cache: VectorCache } | undefined> {
  const config = rt.config.memory.embeddings;
  if (!config) return undefined;
  const [{ VectorCache }, { MemoryEmbeddings }] = await Promise.all([import("./cache.js"), import("./host.js")]);
  const cache = new VectorCache(join(rt.config.dataDir, "tools", "embeddings"), config.cacheMaxEntries);
  const host = new MemoryEmbeddings({ client: rt.client, config, cache, maxPayloadBytes: rt.config.bus.maxPayloadBytes, log: rt.log });
  rt.log.info({ model: config.model, vectorWeight: config.vectorWeight, cached: cache.count }, "memory_search: hybrid ranking with embeddings");
  return { host, cache };
}
