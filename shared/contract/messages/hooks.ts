/**
 * `lurk.hooks.reload`: the hooks actor discovers its hooks again now (folders and config.json's
 * `hooks` section) instead of waiting for its file watch or its interval (`lurkbot hooks reload`).
 * With several hooks instances one of them answers; the others follow by their own watch.
 * The same counts go out as `lurk.evt.hooks.reloaded` whenever a reload changed what runs.
 */
import { z } from "zod";
import { agentIdSchema, sessionKeySchema, sessionTypeSchema } from "../common.js";
import { defineMessage } from "../envelope.js";

export const hooksReloadRequest = defineMessage("lurk.hooks.reload.v1", {});

export const hooksReloadReply = z.object({
  /** what runs differs from before the reload */
  changed: z.boolean(),
  /** hooks that run (enabled and eligible), summed over agents */
  running: z.number().int().nonnegative(),
  /** hook folders that cannot be used, summed over agents */
  problems: z.number().int().nonnegative(),
  /** false: hooks.enabled is false in config.json (no hook runs) */
  hooksEnabled: z.boolean(),
  /** the bus events the actor follows after the reload */
  subjects: z.array(z.string()),
  agents: z.array(z.object({ agentId: agentIdSchema, running: z.array(z.string()), problems: z.number().int().nonnegative() })),
  /** config.json's `hooks` section could not be read: the previous one stays in force */
  configError: z.string().max(2000).optional(),
});
export type HooksReloadReply = z.infer<typeof hooksReloadReply>;

/**
 * `lurk.hooks.bootstrap` (agent-runner -> hooks): a run's bootstrap files (the workspace's
 * SOUL.md, AGENTS.md, … the session gets, with the ones it lacks as `missing`) go through the
 * agent's `agent:bootstrap` hooks, in order; the reply is the list the prompt's Project Context
 * takes. The runner asks only for agents the `lurk_hooks` bucket lists (`bootstrap.<agentId>`),
 * within `hooks.bootstrapTimeoutMs`; on any failure it uses its own files. Names are bootstrap
 * style (`NAME.md`, no path); each file and the whole list are capped like the prompt's own
 * bootstrap caps; a reply over them does not match the contract and is refused.
 */
export const BOOTSTRAP_HOOK_LIMITS = {
  /** files in a request or reply */
  files: 24,
  /** characters of one file's content (the prompt's per-file cap, agent-runner bootstrap.ts) */
  fileChars: 20_000,
  /** characters of all files' contents together */
  totalChars: 150_000,
} as const;

/** `NAME.md`: letters, digits, `.`, `_`, `-`, no path separator, at most 64 characters */
export const BOOTSTRAP_FILE_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,60}\.md$/;

export const bootstrapHookFileSchema = z.object({
  name: z.string().regex(BOOTSTRAP_FILE_NAME_RE, "a bootstrap file name: NAME.md, letters, digits, '.', '_', '-', no path"),
  content: z.string().max(BOOTSTRAP_HOOK_LIMITS.fileChars, `a bootstrap file holds at most ${BOOTSTRAP_HOOK_LIMITS.fileChars} characters`).default(""),
  /** the workspace has no such file (or it is blank): left out of the prompt unless a hook gives it content */
  missing: z.boolean().default(false),
  /** where the runner read it (information for handlers; the reply's is ignored) */
  path: z.string().max(4096).optional(),
  /** the runner trimmed it at the per-file cap */
  trimmed: z.boolean().optional(),
});
export type BootstrapHookFile = z.infer<typeof bootstrapHookFileSchema>;

export const bootstrapHookFilesSchema = z.array(bootstrapHookFileSchema).max(BOOTSTRAP_HOOK_LIMITS.files).superRefine((files, ctx) => {
  const total = files.reduce((n, f) => n + f.content.length, 0);
  if (total > BOOTSTRAP_HOOK_LIMITS.totalChars) ctx.addIssue({ code: "custom", message: `the bootstrap files hold ${total} characters; at most ${BOOTSTRAP_HOOK_LIMITS.totalChars} together` });
  const names = new Set<string>();
  for (const f of files) {
    if (names.has(f.name)) ctx.addIssue({ code: "custom", message: `${f.name} is listed twice` });
    names.add(f.name);
  }
});

export const hooksBootstrapRequest = defineMessage("lurk.hooks.bootstrap.v1", {
  agentId: agentIdSchema,
  sessionKey: sessionKeySchema,
  runId: z.string().min(1).max(200),
  sessionType: sessionTypeSchema,
  /** the agent's workspace on the runner's host */
  workspace: z.string().max(4096).optional(),
  files: bootstrapHookFilesSchema,
  /** how long the runner waits for the reply (ms): the hooks actor answers with what it has by then */
  budgetMs: z.number().int().min(100).max(600_000).optional(),
});

export const hooksBootstrapReply = z.object({
  files: bootstrapHookFilesSchema,
  /** the hooks that ran and changed nothing or changed the list, in order */
  ran: z.array(z.string().max(64)).max(100),
  /** the hooks whose result was not used (threw, timed out, invalid list), in order */
  failed: z.array(z.string().max(64)).max(100),
});
export type HooksBootstrapReply = z.infer<typeof hooksBootstrapReply>;

/** `lurk_hooks` bucket key naming an agent whose `agent:bootstrap` hooks run */
export function bootstrapHooksKey(agentId: string): string {
  return `bootstrap.${agentIdSchema.parse(agentId)}`;
}

/** the value under `bootstrap.<agentId>`: the hooks that run (written again every few minutes while they run) */
export const bootstrapHooksEntrySchema = z.object({
  hooks: z.array(z.string().max(64)).max(100),
  /** ms since epoch of the write */
  at: z.number().int().nonnegative(),
});
export type BootstrapHooksEntry = z.infer<typeof bootstrapHooksEntrySchema>;

/** the `lurk_hooks` bucket keeps a value this long (its max age); a runner takes an older one as absent */
export const BOOTSTRAP_HOOKS_TTL_MS = 10 * 60_000;
/** the hooks actor writes its `bootstrap.<agentId>` values again this often while their hooks run */
export const BOOTSTRAP_HOOKS_REFRESH_MS = 3 * 60_000;
