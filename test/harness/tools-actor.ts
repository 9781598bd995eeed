/** The tools actor as a process on its own nats-server, with a config.json, called as the agent-runner. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { BusClient } from "../../shared/runtime/client.js";
import { startActorProcess, type ActorProcess } from "./actors.js";
import { TestNats } from "./nats.js";

export interface ToolsActorUnderTest {
  nats: TestNats;
  tools: ActorProcess;
  nc: NatsConnection;
  client: BusClient;
  stop(): Promise<void>;
}

export async function startToolsActor(workspace: string, config: Record<string, unknown> = {}, env: Record<string, string> = {}): Promise<ToolsActorUnderTest> {
  const nats = await TestNats.start({ streams: false });
  writeFileSync(join(nats.home, "config.json"), JSON.stringify(config));
  const tools = await startActorProcess("tools", nats, { LURKBOT_WORKSPACE: workspace, ...env });
  const nc = await nats.connect("agent-runner");
  return {
    nats, tools, nc, client: new BusClient(nc),
    async stop() {
      await nc.close();
      await tools.stop();
      await nats.stop();
    },
  };
}
