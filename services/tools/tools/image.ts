/**
 * `image` (group:image; in the `coding` profile, seeds 001 §3.4): ask a vision model about an
 * image, for runs whose own model cannot see (or should not spend its context on) it. The image
 * is a workspace file (`path`, confined like every file tool; PNG, JPEG, GIF or WebP by its
 * bytes, at most media.maxFileMb), stored in the media store, or a file of the conversation
 * (`ref`, its media ref). This actor holds no credentials: the agent-runner answers
 * (`lurk.agent-runner.describe_image`) with the agent's image model (agents[].imageModel, else
 * tools.image.model), scaling the image down to media.maxImageMb / media.imageMaxPx as for a
 * user's image, and books the tokens under purpose `image`. The catalog offers the tool only to
 * agents with an image model (availability.ts). The answer is the tool result's text.
 */
import { basename } from "node:path";
import { z } from "zod";
import { DEFAULT_IMAGE_PROMPT, LurkError, MAX_IMAGE_PROMPT_CHARS, mediaRefSchema } from "../../../shared/contract/index.js";
import { imageModelFor } from "../../../shared/runtime/config-tools-image.js";
import { formatBytes } from "../../../shared/runtime/media.js";
import { sniffImage } from "../content.js";
import { NO_IMAGE_MODEL } from "../availability.js";
import { defineTool } from "../tool.js";
import { busOf } from "./bus.js";

/** time kept for this actor's own work (reading, storing) and the reply within the call's deadline */
const CALL_MARGIN_MS = 2_000;

const parameters = z.object({
  path: z.string().min(1).max(4096).optional().describe("An image file in the workspace (PNG, JPEG, GIF or WebP), relative to the workspace root"),
  ref: mediaRefSchema.optional().describe("Or the media ref (64 hex characters) of an image of the conversation, as the conversation shows it"),
  prompt: z.string().trim().min(1).max(MAX_IMAGE_PROMPT_CHARS).optional().describe(`What to ask about the image (default: "${DEFAULT_IMAGE_PROMPT}")`),
});

export const imageTool = defineTool({
  name: "image",
  description: "Ask a vision model about an image: a workspace file (path) or an image of the conversation (ref). "
    + "Answers with the model's text: a description, or the answer to your question (prompt), e.g. what a screenshot says or what a chart shows.",
  parameters,
  sideEffects: false,
  parallelSafe: true,
  groups: ["group:image"],
  runsIn: "process",
  async execute(args, ctx) {
    const { rt, call } = busOf(ctx);
    if ((args.path === undefined) === (args.ref === undefined)) throw new LurkError("TOOL_INVALID_ARGS", "give exactly one of path (a workspace file) or ref (a media ref of the conversation)");
    const model = imageModelFor(rt.config, call.agentId);
    if (!model) throw new LurkError("NO_MODEL", NO_IMAGE_MODEL);
    let ref = args.ref;
    let label = ref ? `media ${ref.slice(0, 12)}…` : "";
    if (args.path !== undefined) {
      const file = await ctx.fs.readFile(args.path, { maxBytes: rt.media.maxFileBytes });
      label = file.path;
      if (file.truncated) throw new LurkError("LIMIT_EXCEEDED", `"${file.path}" is ${formatBytes(file.size)}, above the ${formatBytes(rt.media.maxFileBytes)} cap for an image (media.maxFileMb)`);
      const mime = sniffImage(file.data);
      if (!mime) throw new LurkError("TOOL_INVALID_ARGS", `"${file.path}" is not a PNG, JPEG, GIF or WebP image (by its first bytes); the image tool reads images only`);
      if (ctx.signal.aborted) throw new LurkError("ABORTED", "the image call was stopped");
      ref = (await rt.media.put(file.data, { mime, name: basename(file.path) })).ref;
    }
    const hostMs = ctx.host?.timeoutMs ?? rt.config.tools.timeoutMs;
    const timeoutMs = Math.max(1_000, Math.min(rt.config.tools.image.timeoutMs, hostMs - CALL_MARGIN_MS));
    if (ctx.signal.aborted) throw new LurkError("ABORTED", "the image call was stopped");
    const answer = await rt.client.call("agent-runner", "describe_image", {
      ref: ref!, agentId: call.agentId, sessionKey: call.sessionKey, timeoutMs, ...(args.prompt ? { prompt: args.prompt } : {}),
    }, { timeoutMs: timeoutMs + CALL_MARGIN_MS / 2, runId: call.runId });
    return { content: [{ type: "text", text: `${label} (as ${answer.model} sees it${answer.resized ? ", scaled down" : ""}):\n${answer.text}` }] };
  },
});
