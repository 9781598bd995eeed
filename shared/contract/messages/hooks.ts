/**
 * `lurk.hooks.reload`: the hooks actor discovers its hooks again now (folders and config.json's
 * `hooks` section) instead of waiting for its file watch or its interval (`lurkbot hooks reload`).
 * With several hooks instances one of them answers; the others follow by their own watch.
 * The same counts go out as `lurk.evt.hooks.reloaded` whenever a reload changed what runs.
 */
import { z } from "zod";
import { agentIdSchema } from "../common.js";
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
