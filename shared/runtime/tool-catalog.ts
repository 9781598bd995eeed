/**
 * Serving a tool catalog: what every tools actor (the built-in `tools`, extension actors such as
 * test/fixtures/ext-tools) does to be in the agent-runners' catalog.
 * - answers the scatter-gather `lurk.tools.list` in its own queue group (one reply per actor kind);
 * - announces `lurk.tools.catalog` (toolsCatalogChangedSchema) once that subscription is live:
 *   after the code of the current tick has registered its endpoints (tool calls included) and a
 *   flush has confirmed the server holds them. Agent-runners then refresh their cached catalogs
 *   in the background, so the new tools are in the next runs without anyone waiting.
 * Call `announce()` again whenever the catalog this actor serves changes. Never throws.
 */
import { hostname } from "node:os";
import { envelope, toolsCatalogChangedSchema, type ParsedRequestOf, type ReplyOf } from "../contract/index.js";
import type { ActorRuntime } from "./actor.js";
import type { EndpointHandlerContext } from "./service.js";

export type ToolsListHandler = (req: ParsedRequestOf<"tools", "list">, ctx: EndpointHandlerContext) => Promise<ReplyOf<"tools", "list">> | ReplyOf<"tools", "list">;

export interface ServedToolCatalog {
  /** publishes the announcement again (after a flush); resolves when sent or given up */
  announce(): Promise<void>;
}

/** Serves `lurk.tools.list` in `queue` and announces the catalog once the subscription is live. */
export function serveToolCatalog(rt: ActorRuntime, handler: ToolsListHandler, opts: { queue: string }): ServedToolCatalog {
  rt.serve("tools", "list", handler, { queue: opts.queue });
  const announce = async (): Promise<void> => {
    if (rt.signal.aborted) return;
    try {
      await rt.nc.flush();
      if (rt.signal.aborted || rt.nc.isClosed()) return;
      const message = toolsCatalogChangedSchema.parse(envelope("lurk.tools.catalog.v1", { actor: rt.name, instance: { host: hostname(), pid: process.pid } }));
      rt.nc.publish(rt.subjects.toolsCatalogChanged, JSON.stringify(message));
      rt.log.debug({ subject: rt.subjects.toolsCatalogChanged }, "tool catalog announced");
    } catch (err) {
      rt.log.warn({ err }, "could not announce the tool catalog (agent-runners pick it up at their next refresh)");
    }
  };
  // next macrotask: the rest of start() (the `lurk.tools.call.<tool>` endpoints) is registered by then
  setImmediate(() => void announce());
  return { announce };
}
