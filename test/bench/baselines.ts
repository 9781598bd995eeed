/** Baselines measured in the same run: raw NATS request/reply, a raw piscina task, a raw SDK call. */
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { Piscina } from "piscina";
import type { FakeOpenAIServer } from "../fakes/openai-server.js";
import type { TestNats } from "../harness/nats.js";
import { latencyStats, timeEach, type LatencyStats } from "./stats.js";

export async function rawNatsRequestReply(nats: TestNats, n: number): Promise<LatencyStats> {
  const responder = await nats.connect("admin");
  const requester = await nats.connect("admin");
  responder.subscribe("bench.echo", { callback: (_e, m) => void m.respond(m.data) });
  await responder.flush();
  const payload = JSON.stringify({ type: "bench", text: "x".repeat(200) });
  await timeEach(100, () => requester.request("bench.echo", payload));
  const stats = latencyStats(await timeEach(n, () => requester.request("bench.echo", payload)));
  await Promise.all([responder.close(), requester.close()]);
  return stats;
}

export async function rawPiscinaTask(n: number): Promise<LatencyStats> {
  const pool = new Piscina({ filename: fileURLToPath(new URL("./noop-worker.js", import.meta.url)), minThreads: 1, maxThreads: 1 });
  await timeEach(100, () => pool.run({ x: 1 }));
  const stats = latencyStats(await timeEach(n, () => pool.run({ x: 1 })));
  await pool.destroy();
  return stats;
}

/**
 * One streamed chat completion through the real SDK: the fake LLM's own time per call. With
 * `fetch` the SDK uses it instead of its default (Node's built-in fetch): LurkBot's providers
 * pass their lean transport, so the baseline the overheads are taken from passes it too.
 */
export async function rawProviderCall(fake: FakeOpenAIServer, n: number, fetch?: typeof globalThis.fetch): Promise<LatencyStats> {
  const client = new OpenAI({ baseURL: fake.baseUrl, apiKey: "sk-bench-000000000000", ...(fetch ? { fetch } : {}) });
  const call = async () => {
    const stream = await client.chat.completions.create({
      model: "test-model", stream: true, stream_options: { include_usage: true },
      messages: [{ role: "system", content: "You are LurkBot." }, { role: "user", content: "hello" }],
    });
    for await (const _chunk of stream) { /* consume */ }
  };
  await timeEach(50, call);
  const stats = latencyStats(await timeEach(n, call));
  fake.reset();
  return stats;
}
