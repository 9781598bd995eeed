/**
 * The worker side of the vectors (types.ts): `ctx.embeddings` of a task with embedding
 * settings. Each lookup or embed is a "vectors" message on the task's port, answered by the
 * pool side (attempt.ts) with the message of the same id; the tool's AbortSignal rejects what
 * is still waiting.
 */
import type { MessagePort } from "node:worker_threads";
import { LurkError } from "../../../shared/contract/index.js";
import type { PoolToWorker, VectorsReply, VectorsRequest } from "../task.js";
import type { MemoryVectors, VectorSettings } from "./types.js";

type Ask = { op: "lookup"; hashes: string[] } | { op: "embed"; texts: string[]; hashes: Array<string | null> };
type Waiting = { resolve: (vectors: Array<Float32Array | null>) => void; reject: (err: unknown) => void };

export interface PortVectors {
  access: MemoryVectors;
  /** hands a pool message to the waiting call; false when it is not a vectors reply */
  receive(message: PoolToWorker): boolean;
}

export function portVectors(port: MessagePort, settings: VectorSettings, signal: AbortSignal): PortVectors {
  const waiting = new Map<number, Waiting>();
  let next = 0;
  signal.addEventListener("abort", () => {
    for (const w of waiting.values()) w.reject(signal.reason);
    waiting.clear();
  }, { once: true });

  const ask = (request: Ask) => new Promise<Array<Float32Array | null>>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const id = ++next;
    waiting.set(id, { resolve, reject });
    port.postMessage({ type: "vectors", id, ...request } satisfies VectorsRequest);
  });

  return {
    access: {
      ...settings,
      lookup: (hashes) => ask({ op: "lookup", hashes }),
      embed: async (texts, hashes) => {
        const vectors = await ask({ op: "embed", texts, hashes });
        if (vectors.length !== texts.length || vectors.some((v) => v === null)) throw new LurkError("INTERNAL", "the vectors answer does not match the texts");
        return vectors as Float32Array[];
      },
    },
    receive(message) {
      if (message?.type !== "vectors") return false;
      const reply = message as VectorsReply;
      const w = waiting.get(reply.id);
      if (!w) return true;
      waiting.delete(reply.id);
      if ("error" in reply) w.reject(new LurkError(reply.error.code, reply.error.message));
      else w.resolve(reply.vectors);
      return true;
    },
  };
}
