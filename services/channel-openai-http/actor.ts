/**
 * channel-openai-http: an OpenAI-compatible HTTP API (node:http, loopback by default, bearer
 * token) on the channel kit. Requests become inbound messages; their replies come back through
 * the kit's delivery (`deliver` settles the waiting request), deltas from the run's events.
 * A completion carries no files: the reply's files are named in its text (one note line each),
 * and their own parts are acknowledged without sending anything.
 */
import type { OutboundMessage } from "../../shared/contract/index.js";
import { attachmentFallbackText, closeHttpServer, DeliveryError, defineChannelActor } from "../../shared/runtime/channel/index.js";
import { openaiHttpChannelSchema } from "../../shared/runtime/config-channels.js";
import { PendingRequests } from "./pending.js";
import { listen, openAiHandler } from "./server.js";

const NO_FILES = "a chat completion carries no files";

/** The reply text with a note line per file of the message (never an empty answer for a files-only reply). */
export function withFileNotes(text: string, msg: OutboundMessage): string {
  const notes = msg.attachments.map((a) => attachmentFallbackText(a, NO_FILES));
  return [text, ...notes].filter((t) => t.length > 0).join("\n\n");
}

export const definition = defineChannelActor({
  channel: "openai-http",
  description: "OpenAI-compatible HTTP API (chat completions, models)",
  schema: openaiHttpChannelSchema,
  metadata: (s) => ({ listen: `${s.host}:${s.port}` }),
  async start(ctx) {
    const { settings, log } = ctx;
    const token = ctx.secret("token", settings.token);
    const pending = new PendingRequests();
    const { server, port } = await listen(openAiHandler(ctx, token, pending), settings.host, settings.port, log);
    log.info({ host: settings.host, port }, "openai-http channel listening");
    return {
      textLimit: Infinity,
      async deliver(part) {
        const msg = part.message;
        // /verbose and /reasoning notes are not part of a completion (the API has no place for them)
        if (msg.note) return { platformMessageId: msg.id };
        const found = pending.find(msg);
        if (found.waiter) {
          if (msg.kind === "approval") found.waiter.onIntermediate(msg);
          // the first part answers: the text (index 0), or a file part when the reply has no text
          else found.waiter.onFinal(msg, withFileNotes(part.attachments.length > 0 ? "" : part.text, msg));
          return { platformMessageId: msg.replyTo[0] ?? msg.id };
        }
        if (found.settled === "answered") return { platformMessageId: msg.replyTo[0] ?? msg.id };
        throw new DeliveryError(found.settled === "abandoned" ? "the HTTP client left before the reply" : "no HTTP request waits for this reply (the channel restarted, or it is not an answer)", { permanent: true });
      },
      async stop() {
        await closeHttpServer(server);
      },
    };
  },
});
