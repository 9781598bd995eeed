/**
 * The system prompt. The sectioned builder (seed 001 §3.3: modes full/minimal/none, bootstrap
 * files, skills) lives in system-prompt.ts; this module keeps the original exports for callers.
 */
export { buildSystemPrompt, SILENT_TOKEN, type PromptInput, type PromptMode } from "./system-prompt.js";
