/**
 * What a run's system prompt needs beyond the basics: the prompt mode (a subagent session is
 * always "minimal"; else the request's promptMode, else the agent's), the bootstrap files, the
 * skills (full mode only; workspace skills that are not used as they ask are logged once, skills.ts),
 * the sandbox note, the Voice (TTS) lines (when replies may be spoken),
 * the User Identity and Model Aliases inputs (full mode only, prompt-sections.ts) and runtime
 * details. The bootstrap files go through the agent's `agent:bootstrap` hooks when
 * `bootstrapHook` is given (bootstrap-hook.ts), after the session's filter (as OpenClaw: a
 * subagent's hooks see AGENTS.md and TOOLS.md, and what they return is what it gets). Loading
 * problems never fail a run: a file that cannot be read is left out.
 */
import { join } from "node:path";
import type { RunRequest, ToolDefinition } from "../../shared/contract/index.js";
import { agentWorkspace, type AgentConfig, type LurkConfig } from "../../shared/runtime/config.js";
import { REPO_ROOT } from "../../shared/scripts/paths.js";
import { loadBootstrapFiles, type BootstrapFile } from "./bootstrap.js";
import type { BootstrapRun } from "./bootstrap-hook.js";
import { lookupModel } from "../../shared/runtime/models.js";
import { loadSkills, type SkillProblem } from "./skills.js";
import type { Logger } from "../../shared/runtime/logger.js";
import { modelAliasLines, userIdentity } from "./prompt-sections.js";
import type { PromptInput, PromptMode } from "./system-prompt.js";
import { ttsPromptLines } from "./tts-prompt.js";

export type PromptExtras = Pick<PromptInput, "mode" | "bootstrap" | "skills" | "sandbox" | "docsPath" | "model" | "thinking" | "subagent" | "tts" | "reasoningTags" | "identity" | "modelAliases">;

/** the run's bootstrap files after the agent's agent:bootstrap hooks (never throws) */
export type BootstrapHook = (run: BootstrapRun, loaded: BootstrapFile[]) => Promise<BootstrapFile[]>;

export async function promptExtras(config: LurkConfig, agent: AgentConfig, req: RunRequest, tools: ToolDefinition[], model?: string, bootstrapHook?: BootstrapHook, log?: Logger): Promise<PromptExtras> {
  const workspace = agentWorkspace(config, agent);
  const subagent = req.sessionType === "subagent" || req.subagent !== undefined;
  const sessionType = subagent ? "subagent" : req.sessionType;
  const mode: PromptMode = subagent ? "minimal" : req.options.promptMode ?? agent.promptMode;
  const loadBootstrap = async () => {
    const loaded = await loadBootstrapFiles(workspace, sessionType).catch(() => []);
    return bootstrapHook ? bootstrapHook({ agentId: req.agentId, sessionKey: req.sessionKey, runId: req.runId, sessionType, workspace }, loaded) : loaded;
  };
  const [bootstrap, skills] = await Promise.all([
    mode === "none" ? [] : loadBootstrap(),
    mode === "full" ? loadSkills({ workspace, home: config.home }, { alwaysAllow: config.skills?.alwaysAllow ?? [], ...(log ? { onProblem: (p) => reportSkillProblem(log, p) } : {}) }).catch(() => []) : [],
  ]);
  const thinking = req.options.thinking ?? agent.thinking;
  const sandbox = sandboxNote(config, tools);
  const tts = subagent ? [] : ttsPromptLines(config.tts, req.options.tts ?? config.tts.auto, tools.some((t) => t.name === "tts"));
  return {
    mode, bootstrap, skills,
    docsPath: join(REPO_ROOT, "README.md"),
    ...(sandbox ? { sandbox } : {}),
    ...(model ? { model } : {}),
    ...(thinking ? { thinking } : {}),
    ...(tts.length > 0 ? { tts } : {}),
    ...(mode === "full" ? { identity: userIdentity(config, req.origin, sessionType), modelAliases: modelAliasLines(config, model) } : {}),
    // a model that reasons in <think> tags is told where its reasoning goes (Reasoning Format)
    ...(model && lookupModel(model, config).reasoningTags === "on" ? { reasoningTags: true } : {}),
    ...(subagent ? { subagent: {
      task: req.subagent?.task ?? req.inputs.find((i) => i.kind === "user")?.text ?? "",
      ...(req.subagent?.label ? { label: req.subagent.label } : {}),
      ...(req.subagent?.parentSessionKey ? { requesterSessionKey: req.subagent.parentSessionKey } : {}),
      sessionKey: req.sessionKey,
    } } : {}),
  };
}

/** skill folders already reported (a warning once per folder and reason, not once per run) */
const reportedSkills = new Set<string>();

function reportSkillProblem(log: Logger, problem: SkillProblem): void {
  const key = `${problem.location}\n${problem.reason}`;
  if (reportedSkills.has(key)) return;
  if (reportedSkills.size >= 1_000) reportedSkills.clear();
  reportedSkills.add(key);
  log.warn({ skill: problem.name, source: problem.source, location: problem.location }, `skill not used as it asks: ${problem.reason}`);
}

function sandboxNote(config: LurkConfig, tools: ToolDefinition[]): string | undefined {
  if (!tools.some((t) => t.name === "exec")) return undefined;
  const exec = config.tools.exec;
  return [
    "`exec` runs commands in a bubblewrap sandbox: they see the workspace (read-write) and the system's programs (read-only), not the rest of the home directory, under CPU, memory and process limits.",
    exec.allowUnsandboxed ? "Where bubblewrap is unavailable, commands run without it (scrubbed environment, same limits); still keep to the workspace." : "",
  ].filter(Boolean).join(" ");
}
