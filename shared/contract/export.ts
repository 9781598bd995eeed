/**
 * The contract as one JSON document (JSON Schema 2020-12 per message), for actors written in
 * other languages. `npm run contract:export` writes shared/contract/lurkbot-contract.json and
 * nats.conf; test/contract checks both equal what the code produces.
 */
import { z } from "zod";
import { actorGrants, expandGrant } from "./actors.js";
import { ENDPOINTS } from "./endpoints.js";
import { ERROR_CODES, errorReplySchema } from "./errors.js";
import { deliveryReceiptSchema, inboundMessageSchema, outboundMessageSchema } from "./messages/channels.js";
import { actorEventSchema, deadLetterDataSchema, routerCommandDataSchema, sessionsCreatedDataSchema, sessionsDeleteDataSchema, sessionsResetDataSchema } from "./messages/events.js";
import { heartbeatEventSchema } from "./messages/heartbeat.js";
import { sessionChangeSchema } from "./messages/sessions.js";
import { runControlReplySchema, runControlSchema, runEventSchema, runRequestSchema, systemInjectSchema } from "./messages/runs.js";
import { toolCallReply, toolCallRequest, toolProgressSchema, toolsCancelSchema, toolsCatalogChangedSchema } from "./messages/tools.js";
import { DEFAULT_PREFIX, STREAMS } from "./subjects.js";

const schema = (s: z.ZodType) => z.toJSONSchema(s, { io: "input", unrepresentable: "any" });

/** Messages that travel on streams or as events, by subject pattern. */
export const STREAMED_MESSAGES = {
  "lurk.in.<channel>": inboundMessageSchema,
  "lurk.inject.<agentId>": systemInjectSchema,
  "lurk.run.req.<agentId>": runRequestSchema,
  "lurk.run.ctl.<runId>": runControlSchema,
  "lurk.run.evt.<runId>.<kind>": runEventSchema,
  "lurk.out.<channel>.<conversation>": outboundMessageSchema,
  "lurk.tools.progress.<runId>": toolProgressSchema,
  "lurk.tools.catalog": toolsCatalogChangedSchema,
  "lurk.tools.cancel": toolsCancelSchema,
  "lurk.evt.<actor>.<event>": actorEventSchema,
  "lurk.evt.<channel actor>.delivered": deliveryReceiptSchema,
  "lurk.evt.heartbeat.<status>": heartbeatEventSchema,
  "lurk.evt.<actor>.dead_letter (data)": deadLetterDataSchema,
  "lurk.evt.router.command (data)": routerCommandDataSchema,
  "lurk.evt.sessions.reset (data)": sessionsResetDataSchema,
  "lurk.evt.sessions.created (data)": sessionsCreatedDataSchema,
  "lurk.evt.sessions.delete (data)": sessionsDeleteDataSchema,
  "lurk.sesslog.<sessionKey>": sessionChangeSchema,
} as const;

export function exportContract(): Record<string, unknown> {
  const endpoints: Record<string, unknown> = {};
  for (const [actor, ops] of Object.entries(ENDPOINTS)) {
    for (const [op, spec] of Object.entries(ops)) {
      endpoints[`${DEFAULT_PREFIX}.${actor}.${op}`] = { description: spec.description, request: schema(spec.request), reply: schema(spec.reply) };
    }
  }
  endpoints[`${DEFAULT_PREFIX}.tools.call.<tool>`] = { description: "execute one tool", request: schema(toolCallRequest), reply: schema(toolCallReply) };
  endpoints[`${DEFAULT_PREFIX}.run.ctl.<runId>`] = { description: "steer, follow up or abort a run (optional reply: only the runner holding the run answers)", request: schema(runControlSchema), reply: schema(runControlReplySchema) };
  const messages: Record<string, unknown> = {};
  for (const [subject, s] of Object.entries(STREAMED_MESSAGES)) messages[subject] = schema(s);
  return {
    title: "LurkBot bus contract",
    version: 1,
    defaultPrefix: DEFAULT_PREFIX,
    notes: [
      "Every request and every streamed message carries the envelope in its JSON body: type (versioned), id, ts, and optional runId, sessionKey, causationId.",
      "Replies carry the result, or lurk.error.v1 with the Nats-Service-Error and Nats-Service-Error-Code headers.",
      "Subject tokens never contain '.', '*', '>' or whitespace; platform ids are encoded with ~XX escapes.",
    ],
    streams: STREAMS,
    errorCodes: ERROR_CODES,
    errorReply: schema(errorReplySchema),
    endpoints,
    messages,
    users: Object.fromEntries(actorGrants().map((g) => [g.user, { description: g.description, ...expandGrant(g), allowResponses: g.responder }])),
  };
}
