/**
 * The HTTP surface: bearer-token auth on every route (401 with OpenAI's error body), then
 * `GET /v1/models` (the configured agents as `lurkbot/<agentId>`) and `POST /v1/chat/completions`.
 * Model names: `lurkbot/<agentId>`, `<agentId>`, or `lurkbot` (the default agent).
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { LurkError, safeParseJson } from "../../shared/contract/index.js";
import { listenHttp, readBody, safeEqual, sendJson, type ChannelContext } from "../../shared/runtime/channel/index.js";
import { defaultAgent } from "../../shared/runtime/config.js";
import type { OpenAiHttpChannelConfig } from "../../shared/runtime/config-channels.js";
import { formatIssues } from "../../shared/runtime/service.js";
import { chatCompletion } from "./completions.js";
import type { PendingRequests } from "./pending.js";
import { chatRequestSchema, errorBody } from "./wire.js";

const MODEL_PREFIX = "lurkbot/";
const SESSION_HEADER = "x-lurkbot-session";
const SESSION_NAME = /^[A-Za-z0-9_.:@+=,-]{1,128}$/;

export function agentForModel(ctx: ChannelContext<OpenAiHttpChannelConfig>, model: string): string | null {
  if (model === "lurkbot") return defaultAgent(ctx.config).id;
  const id = model.startsWith(MODEL_PREFIX) ? model.slice(MODEL_PREFIX.length) : model;
  return ctx.config.agents.some((a) => a.id === id) ? id : null;
}

export function openAiHandler(ctx: ChannelContext<OpenAiHttpChannelConfig>, token: string, pending: PendingRequests) {
  const created = Math.floor(Date.now() / 1000);
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? "/").split("?")[0];
    const auth = req.headers.authorization ?? "";
    const given = /^Bearer\s+(.+)$/i.exec(auth)?.[1]?.trim() ?? "";
    if (!given || !safeEqual(given, token)) {
      ctx.log.warn({ path, remote: req.socket.remoteAddress }, "request refused: bad or missing bearer token");
      req.resume();
      return sendJson(res, 401, errorBody("Incorrect API key provided. Use the token of channels[\"openai-http\"].token (or <home>/credentials/channels.json).", "authentication_error", "invalid_api_key"));
    }
    if (req.method === "GET" && path === "/v1/models") {
      return sendJson(res, 200, { object: "list", data: ctx.config.agents.map((a) => ({ id: `${MODEL_PREFIX}${a.id}`, object: "model", created, owned_by: "lurkbot" })) });
    }
    if (path === "/v1/chat/completions") {
      if (req.method !== "POST") return sendJson(res, 405, errorBody("use POST", "invalid_request_error", "method_not_allowed"));
      let raw: unknown;
      try {
        raw = safeParseJson(await readBody(req, ctx.settings.maxBodyBytes), { maxBytes: ctx.settings.maxBodyBytes, maxDepth: 64 });
      } catch (err) {
        const e = LurkError.from(err);
        return sendJson(res, e.code === "PAYLOAD_TOO_LARGE" ? 413 : 400, errorBody(`the request body is not acceptable JSON: ${e.message}`, "invalid_request_error", e.code.toLowerCase()));
      }
      const parsed = chatRequestSchema.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        return sendJson(res, 400, errorBody(formatIssues(parsed.error), "invalid_request_error", "invalid_request", issue.path.join(".") || null));
      }
      const agentId = agentForModel(ctx, parsed.data.model);
      if (!agentId) return sendJson(res, 404, errorBody(`The model \`${parsed.data.model}\` does not exist; GET /v1/models lists ${ctx.config.agents.map((a) => `${MODEL_PREFIX}${a.id}`).join(", ")}`, "invalid_request_error", "model_not_found", "model"));
      const headerSession = typeof req.headers[SESSION_HEADER] === "string" ? (req.headers[SESSION_HEADER] as string) : undefined;
      const session = headerSession ?? parsed.data.user ?? "default";
      if (!SESSION_NAME.test(session)) return sendJson(res, 400, errorBody("the session (user field or X-LurkBot-Session) must be 1-128 letters, digits or _.:@+=,-", "invalid_request_error", "invalid_session", "user"));
      return chatCompletion(ctx, pending, req, res, { body: parsed.data, agentId, session });
    }
    return sendJson(res, 404, errorBody(`no route ${req.method} ${path}`, "invalid_request_error", "not_found"));
  };
}

export function listen(handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>, host: string, port: number, log: ChannelContext<unknown>["log"]): Promise<{ server: Server; port: number }> {
  return listenHttp(handler, {
    host, port,
    requestTimeoutMs: 0, // streaming answers may take minutes; replyTimeoutMs bounds them
    onError: (err, res) => {
      log.error({ err }, "request handler failed");
      sendJson(res, 500, errorBody("internal error", "server_error"));
    },
  });
}
