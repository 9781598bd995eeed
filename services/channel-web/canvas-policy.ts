/**
 * Who gets the `canvas` tool: the built-in layered policy (shared/runtime/tool-serve-policy.ts over
 * tool-policy.ts: canvas is in group:ui and the coding profile; the built-in provider rule takes
 * it from ollama models and the model rule from gpt-3.5; tools.allow/deny, agent, session and
 * subagent rules apply), for the catalog, again on every call and for `lurkbot tools --explain`;
 * and, as this actor's own rule, only in sessions a web chat shows (a canvas nobody can see is
 * no use to the model). A request without a session key is judged by the layers alone.
 */
import type { LurkConfig } from "../../shared/runtime/config.js";
import type { ServedToolPolicy } from "../../shared/runtime/tool-serve.js";
import { layeredToolPolicy } from "../../shared/runtime/tool-serve-policy.js";

export function canvasPolicy(config: LurkConfig, shownInWeb: (sessionKey: string) => boolean): ServedToolPolicy {
  return layeredToolPolicy(config, {
    extra: (definition, req) => (req.sessionKey && !shownInWeb(req.sessionKey)
      ? `The tool "${definition.name}" is not available in this session: the canvas is shown only in the web chat, and no web chat shows session ${req.sessionKey}. Answer in text instead.`
      : null),
  });
}
