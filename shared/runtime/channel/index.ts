/** The channel kit: what a channel actor (`services/channel-<name>/`) builds on. */
export * from "./channel-actor.js";
export * from "./chunk.js";
export * from "./delivery.js";
export * from "./http.js";
export * from "./inbound.js";
export * from "./ledger.js";
export * from "./markdown.js";
export * from "./reply.js";
export * from "./run-watch.js";
export * from "./secrets.js";
export * from "./drafts.js";
export * from "./expiring-db.js";
export * from "./media.js";
export * from "./tables.js";
export * from "./actions.js";
export * from "./reactions.js";
