/**
 * `lurkbot acp [--agent ID] [--session-prefix P]`: the Agent Client Protocol server an editor
 * spawns. JSON-RPC on stdin/stdout (only protocol messages on stdout), pino logs on stderr. The
 * bus is reached as the `cli` user (the operator's own credentials, like `lurkbot chat`), on the
 * first session request, reconnecting forever. Ends when the editor closes stdin (or on SIGTERM /
 * SIGINT), exit code 0.
 */
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { MB } from "../../../shared/runtime/config-media.js";
import { defaultAgent, loadConfig, type Env } from "../../../shared/runtime/config.js";
import { createLogger } from "../../../shared/runtime/logger.js";
import { formatBytes } from "../../../shared/runtime/media.js";
import type { ParsedCommand } from "../args.js";
import { connectCli } from "../bus.js";
import { EXIT, UsageError } from "../errors.js";
import { DEFAULT_MAX_LINE_BYTES, JsonRpcPeer } from "./jsonrpc.js";
import { promptFilesMaxBytes } from "./prompt-files.js";
import { AcpAgent } from "./server.js";

const SESSION_PREFIX = /^[A-Za-z0-9_-]{1,64}$/;
/** a prompt's run may wait for approvals (5 minutes each by default) and take many tool calls */
const PROMPT_TIMEOUT_MS = 60 * 60_000;
const CANCEL_GRACE_MS = 3_000;

/** A line holds a prompt's images and files (`promptFilesBytes`, media.maxPromptFilesMb) in base64 (4/3 of them), plus the 4 MiB a prompt without files may have. */
export function maxLineBytes(promptFilesBytes: number): number {
  return DEFAULT_MAX_LINE_BYTES + Math.ceil((promptFilesBytes * 4) / 3);
}

export interface AcpIo {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
}

export async function cmdAcp(p: ParsedCommand, env: Env, io: AcpIo = { input: process.stdin, output: process.stdout }): Promise<number> {
  const sessionPrefix = (p.options["session-prefix"] as string | undefined) ?? "acp-";
  if (!SESSION_PREFIX.test(sessionPrefix)) throw new UsageError(`--session-prefix "${sessionPrefix}": 1 to 64 letters, digits, '-' or '_'.`, "acp");
  const agentId = p.options.agent as string | undefined;
  const cfg = loadConfig(env);
  if (agentId !== undefined && !cfg.agents.some((a) => a.id === agentId)) {
    throw new UsageError(`--agent "${agentId}" is not in agents[] of the configuration (${cfg.agents.map((a) => a.id).join(", ")}).`, "acp");
  }
  const log = createLogger("acp", cfg.log.level);

  let connecting: Promise<NatsConnection> | undefined;
  const bus = () => {
    connecting ??= connectCli(cfg, env, { reconnect: true }).catch((err: unknown) => {
      connecting = undefined; // the next session request tries again
      throw err;
    });
    return connecting;
  };
  const agent = new AcpAgent({
    bus, prefix: cfg.nats.prefix, loadAgentId: agentId ?? defaultAgent(cfg).id, sessionPrefix,
    requestTimeoutMs: cfg.bus.requestTimeoutMs, log, promptTimeoutMs: PROMPT_TIMEOUT_MS, cancelGraceMs: CANCEL_GRACE_MS,
    // the folder `lurkbot chat` saves received files in
    media: cfg.media, downloadsDir: join(cfg.home, "downloads"),
    ...(agentId !== undefined ? { agentId } : {}),
  });
  const filesBytes = promptFilesMaxBytes(cfg.media);
  const peer = new JsonRpcPeer(io.input, io.output, agent, log, maxLineBytes(filesBytes),
    `a prompt's images and files may come to ${formatBytes(filesBytes)} together, media.maxPromptFilesMb, each at most ${formatBytes(Math.floor(cfg.media.maxFileMb * MB))}, media.maxFileMb`);
  agent.attach(peer);
  const stop = () => io.input.emit("end");
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  log.info({ agentId, sessionPrefix }, "ACP server ready on stdio");
  await peer.run();
  agent.close();
  if (connecting) await (await connecting.catch(() => undefined))?.close().catch(() => undefined);
  log.info("ACP client closed the connection");
  log.flush();
  return EXIT.ok;
}
