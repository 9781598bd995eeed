/**
 * The built-in tools of this actor, by name. Both sides load it: the actor (catalog, argument
 * validation, one subject per tool) and the worker (execution). A new tool is one module under
 * tools/ and one line here.
 */
import type { Tool } from "./tool.js";
import { execTool } from "./tools/exec.js";
import { readTool } from "./tools/read.js";
import { writeTool } from "./tools/write.js";
import { editTool } from "./tools/edit.js";
import { applyPatchTool } from "./tools/apply-patch.js";
import { memoryGetTool, memorySearchTool } from "./tools/memory.js";
import { webFetchTool } from "./tools/web-fetch.js";
import { webSearchTool } from "./tools/web-search.js";
import { processTool } from "./tools/process.js";
import { messageTool } from "./tools/message.js";
import { mediaSaveTool } from "./tools/media.js";
import { agentsListTool, sessionsHistoryTool, sessionsListTool, sessionsSendTool, sessionStatusTool } from "./tools/sessions.js";
import { sessionsSpawnTool } from "./tools/sessions-spawn.js";
import { cronTool } from "./tools/cron.js";
import { ttsTool } from "./tools/tts.js";
import { imageTool } from "./tools/image.js";

export const BUILTIN_TOOLS: readonly Tool[] = [readTool, execTool, writeTool, editTool, applyPatchTool, memorySearchTool, memoryGetTool, webFetchTool, webSearchTool, sessionsSpawnTool, processTool, messageTool, mediaSaveTool, sessionsListTool, sessionsHistoryTool, sessionsSendTool, sessionStatusTool, agentsListTool, cronTool, ttsTool, imageTool];

const byName = new Map(BUILTIN_TOOLS.map((tool) => [tool.name, tool]));

export function builtinTool(name: string): Tool | undefined {
  return byName.get(name);
}
