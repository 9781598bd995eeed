/**
 * The whole system for tests of files users send: the actors as processes, a connection as the
 * Telegram channel (which stores files in the media store) and one as the agent-runner (which
 * reads sessions), the media store, and a terminal-channel client that sends the messages.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { MEDIA_DEFAULTS } from "../../shared/runtime/config-media.js";
import { MediaStore } from "../../shared/runtime/media.js";
import { CliClient, TestSystem, type SystemOptions } from "./system.js";

export interface FileRig {
  system: TestSystem;
  channelNc: NatsConnection;
  runnerNc: NatsConnection;
  media: MediaStore;
  cli: CliClient;
}

export async function startFileRig(opts: SystemOptions = {}): Promise<FileRig> {
  const system = await TestSystem.start(opts);
  const channelNc = await system.nats.connect("channel-telegram");
  const runnerNc = await system.nats.connect("agent-runner");
  const media = new MediaStore(channelNc, { ...MEDIA_DEFAULTS });
  const cli = await CliClient.connect(system.nats);
  return { system, channelNc, runnerNc, media, cli };
}

export async function stopFileRig(rig: Partial<FileRig>): Promise<void> {
  await rig.cli?.close();
  await rig.channelNc?.close();
  await rig.runnerNc?.close();
  await rig.system?.stop();
}
