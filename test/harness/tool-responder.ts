/**
 * A tools actor stand-in for agent-runner tests: a process-local NATS service, as the `tools`
 * user, that serves the catalog (`lurk.tools.list`) and `lurk.tools.call.<name>` for the tools
 * given, each answered by its `run`. A tool with `models` is listed only for those model refs
 * (as the tool policy's provider and model layers would).
 */
import type { NatsConnection } from "@nats-io/transport-node";
import {
  subjects, toolCallReply, toolCallRequest, toolsListReply, toolsListRequest, type ToolDefinition,
} from "../../shared/contract/index.js";
import type { z } from "zod";
import { createLogger } from "../../shared/runtime/logger.js";
import { addEndpoint, registerService } from "../../shared/runtime/service.js";
import type { TestNats } from "./nats.js";

type CallRequest = z.output<typeof toolCallRequest>;
type CallReply = z.input<typeof toolCallReply>;

export interface StandInTool {
  definition: ToolDefinition;
  run(req: CallRequest): CallReply | Promise<CallReply>;
  /** the "provider/model" refs the catalog lists it for (default: every one) */
  models?: string[];
}

/** A `read` tool that answers "contents of <path>". */
export const READ_STAND_IN: StandInTool = {
  definition: {
    name: "read", description: "Read a text file from the workspace.\nPaths are relative to the workspace.",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    actor: "tools", sideEffects: false, parallelSafe: true, groups: ["fs"], needsApproval: false,
  },
  run: (req) => textResult(req, `contents of ${String(req.args.path)}`),
};

export const textResult = (req: CallRequest, text: string, durationMs = 1): CallReply =>
  ({ toolCallId: req.toolCallId, content: [{ type: "text", text }], isError: false, durationMs });

export async function startToolResponder(nats: TestNats, tools: StandInTool[]): Promise<NatsConnection> {
  const S = subjects();
  const log = createLogger("test-tools", "silent");
  const nc = await nats.connect("tools");
  const service = await registerService(nc, { name: "tools", version: "0.0.0", description: "test tools" });
  addEndpoint(service, {
    name: "list", subject: S.op("tools", "list"), request: toolsListRequest, reply: toolsListReply, limits: {}, log,
    handler: (req) => ({ actor: "tools", tools: tools.filter((t) => !t.models || (req.model !== undefined && t.models.includes(req.model))).map((t) => t.definition) }),
  });
  for (const tool of tools) {
    addEndpoint(service, {
      name: `call-${tool.definition.name}`, subject: S.toolCall(tool.definition.name), request: toolCallRequest, reply: toolCallReply, limits: {}, log,
      handler: (req) => tool.run(req),
    });
  }
  return nc;
}
