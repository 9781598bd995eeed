/**
 * `POST /v1/chat/completions`: the last user message becomes an InboundMessage (a fresh id,
 * session = `user` or X-LurkBot-Session), persisted in LURK_INBOUND; the request then waits for
 * its delivery from the outbound stream (the kit's `deliver` -> PendingRequests). Streaming
 * (`stream: true`) sends the run's text deltas as `chat.completion.chunk` SSE events while it
 * runs, then the rest of the final text, a `finish_reason: "stop"` chunk, the usage chunk when
 * `stream_options.include_usage`, and `data: [DONE]`. A silent run (NO_REPLY) answers "".
 * A run error answers 502 (streaming: an `error` event, which the SDKs raise). The message's
 * `image_url` parts become image attachments (images.ts; a bad one answers 400 before anything
 * is published).
 */
import { createHash, randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { LurkError, type Attachment, type OutboundMessage } from "../../shared/contract/index.js";
import { sendJson, type ChannelContext, type RunEnd } from "../../shared/runtime/channel/index.js";
import type { OpenAiHttpChannelConfig } from "../../shared/runtime/config-channels.js";
import { ImageError, imageAttachments } from "./images.js";
import type { PendingRequests } from "./pending.js";
import { chunk, completion, errorBody, lastUserMessage, toOpenAiUsage, usageChunk, type ChatRequest } from "./wire.js";

/** after the terminal run event, how long the delivery may take before we answer from the event */
const DELIVERY_GRACE_MS = 10_000;
/** after the delivery, how long we wait for the terminal event's usage */
const USAGE_GRACE_MS = 1_000;

export interface CompletionInput {
  body: ChatRequest;
  agentId: string;
  session: string;
}

export async function chatCompletion(ctx: ChannelContext<OpenAiHttpChannelConfig>, pending: PendingRequests, req: IncomingMessage, res: ServerResponse, input: CompletionInput): Promise<void> {
  const { body, agentId, session } = input;
  const user = lastUserMessage(body);
  if (user === null) return sendJson(res, 400, errorBody("messages must contain a user message", "invalid_request_error", null, "messages"));
  const { text } = user;
  let attachments: Attachment[];
  try {
    attachments = await imageAttachments(ctx.rt.media, user.images);
  } catch (err) {
    if (err instanceof ImageError) return sendJson(res, 400, errorBody(err.message, "invalid_request_error", err.code, err.param));
    const e = LurkError.from(err);
    ctx.log.warn({ code: e.code, err: e.message }, "an image could not be stored");
    return sendJson(res, 503, errorBody(`the image could not be stored: ${e.message}`, "server_error", e.code.toLowerCase()));
  }
  const id = randomUUID();
  const runId = ctx.runIdFor(id);
  const completionId = `chatcmpl-${id.replace(/-/g, "")}`;
  const created = Math.floor(Date.now() / 1000);
  const model = body.model;
  const streaming = body.stream === true;
  const log = ctx.log.child({ runId, completionId });
  let finished = false;
  let streamed = "";
  let end: RunEnd | undefined;
  let graceTimer: NodeJS.Timeout | undefined;

  const sse = (data: unknown) => res.write(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
  /** SSE headers and the role chunk, once; text that arrived before goes out with it */
  const startStream = () => {
    if (res.headersSent) return;
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" });
    sse(chunk(completionId, model, created, { role: "assistant", content: "" }));
    if (streamed) sse(chunk(completionId, model, created, { content: streamed }));
  };
  /** ends the request's bookkeeping; the run watch stays until `watch.stop()` (usage may follow) */
  const cleanup = (how: "answered" | "abandoned", keepWatch = false) => {
    finished = true;
    clearTimeout(timeout);
    clearTimeout(graceTimer);
    if (!keepWatch) watch.stop();
    pending.settle(id, how);
  };
  const answer = async (content: string) => {
    if (finished) return;
    cleanup("answered", true);
    if (!end) await Promise.race([watch.ended, new Promise((r) => setTimeout(r, USAGE_GRACE_MS))]);
    watch.stop();
    const usage = toOpenAiUsage(end?.status === "done" ? end.usage : undefined);
    if (!streaming) return sendJson(res, 200, completion(completionId, model, created, content, usage));
    startStream();
    if (content && content !== streamed) sse(chunk(completionId, model, created, { content: content.startsWith(streamed) ? content.slice(streamed.length) : streamed ? `\n\n${content}` : content }));
    sse(chunk(completionId, model, created, {}, "stop"));
    if (body.stream_options?.include_usage) sse(usageChunk(completionId, model, created, usage));
    sse("[DONE]");
    res.end();
  };
  const fail = (status: number, message: string, type: "server_error" | "timeout", code: string | null) => {
    if (finished) return;
    cleanup("answered");
    log.warn({ status, code }, "completion failed");
    if (!streaming || !res.headersSent) return sendJson(res, status, errorBody(message, type, code));
    sse(errorBody(message, type, code));
    sse("[DONE]");
    res.end();
  };

  const watch = ctx.watchRun(runId, {
    ...(streaming ? {
      onAppend: (delta: string) => {
        if (finished) return;
        streamed += delta;
        if (res.headersSent) sse(chunk(completionId, model, created, { content: delta }));
      },
    } : {}),
    onEnd: (e) => {
      end = e;
      if (finished) return;
      if (e.status === "done" && e.silent) return void answer("");
      // the delivery normally follows; answer from the event if it never comes
      graceTimer = setTimeout(() => {
        if (e.status === "done") void answer(e.text);
        else fail(502, e.message, "server_error", e.code);
      }, DELIVERY_GRACE_MS);
    },
  });
  const timeout = setTimeout(() => fail(504, `no reply within ${Math.round(ctx.settings.replyTimeoutMs / 1000)} s`, "timeout", "timeout"), ctx.settings.replyTimeoutMs);
  pending.add(id, {
    onFinal: (msg: OutboundMessage, final: string) => {
      if (msg.kind === "error") fail(502, final, "server_error", msg.errorCode ?? null);
      else void answer(final);
    },
    onIntermediate: (msg: OutboundMessage) => {
      if (streaming && res.headersSent && !finished) {
        const note = `\n[approval needed: ${msg.approval?.tool ?? "a tool"}${msg.approval?.command ? ` \`${msg.approval.command}\`` : ""}; decide with \`npx lurkbot approvals\` (id ${msg.approval?.approvalId ?? "?"})]\n`;
        streamed += note;
        sse(chunk(completionId, model, created, { content: note }));
      }
    },
  });
  res.on("close", () => {
    if (!finished) {
      log.info("client closed the request before the reply");
      cleanup("abandoned");
    }
  });

  try {
    await ctx.rt.nc.flush();
    const conversation = `s-${createHash("sha256").update(session).digest("hex").slice(0, 24)}`;
    await ctx.publishInbound({
      id, conversation, peer: { kind: "dm", id: session }, sender: { id: session }, text, attachments, sessionName: session, agentId,
    });
  } catch (err) {
    const e = LurkError.from(err);
    cleanup("abandoned");
    const status = e.code === "PAYLOAD_TOO_LARGE" ? 413 : e.code === "VALIDATION_FAILED" ? 400 : 503;
    return sendJson(res, status, errorBody(e.message, status === 503 ? "server_error" : "invalid_request_error", e.code.toLowerCase()));
  }
  log.info({ streaming, session }, "chat completion accepted");
  if (streaming && !finished) startStream();
}
