/**
 * `tools.image` and `agents[].imageModel`: the vision model the `image` tool asks
 * (services/tools/tools/image.ts through `lurk.agent-runner.describe_image`). The agent's
 * imageModel wins over tools.image.model; with neither, the tool is not offered to that agent.
 */
import { z } from "zod";
import { modelRefSchema } from "./config-models.js";

export const IMAGE_TOOL_DEFAULTS = { timeoutMs: 45_000, maxOutputTokens: 1_024 };

export const toolsImageConfigSchema = z.object({
  /** `provider/model` of a vision-capable model, e.g. openai/gpt-4o-mini; unset: no image tool (unless an agent sets imageModel) */
  model: modelRefSchema.optional(),
  /** ms one answer may take, every auth profile tried included (capped by tools.timeoutMs) */
  timeoutMs: z.number().int().min(1_000).max(600_000).default(IMAGE_TOOL_DEFAULTS.timeoutMs),
  /** the longest answer, in tokens */
  maxOutputTokens: z.number().int().min(16).max(32_000).default(IMAGE_TOOL_DEFAULTS.maxOutputTokens),
});
export type ToolsImageConfig = z.infer<typeof toolsImageConfigSchema>;

/** The image model of an agent: its own imageModel, else tools.image.model, else undefined (no image tool). */
export function imageModelFor(config: { agents: ReadonlyArray<{ id: string; imageModel?: string | undefined }>; tools: { image: Pick<ToolsImageConfig, "model"> } }, agentId: string | undefined): string | undefined {
  const agent = agentId === undefined ? undefined : config.agents.find((a) => a.id === agentId);
  return agent?.imageModel ?? config.tools.image.model;
}
