/**
 * `tts` (group:tts): a voice message of a text, sent to the conversation the run came from (else
 * the session's last one). This actor holds no speech credentials: it asks the agent-runner
 * (`lurk.agent-runner.speak`), which synthesizes and stores the audio (tts config) and answers
 * with its media ref; the tool then queues it like the `message` tool does (stream OUTBOUND, kind
 * "notice", `Nats-Msg-Id` from the tool call id, so a repeated call delivers once). The channel
 * sends it as a voice note (Telegram), a voice message (Discord) or an audio file.
 */
import { z } from "zod";
import { LurkError, MAX_SPEAK_CHARS, ttsProviderSchema, ttsVoiceSchema } from "../../../shared/contract/index.js";
import { formatBytes } from "../../../shared/runtime/media.js";
import { defineTool } from "../tool.js";
import { busOf, defaultTarget, queueMessage } from "./bus.js";

/** time for the runner's answer beyond tts.totalTimeoutMs (every profile and fallback provider; storing the audio) */
const SPEAK_MARGIN_MS = 10_000;

const parameters = z.object({
  text: z.string().trim().min(1).max(MAX_SPEAK_CHARS).describe(`What to say (plain sentences; at most ${MAX_SPEAK_CHARS} characters)`),
  voice: ttsVoiceSchema.optional().describe("A voice (OpenAI: alloy, ash, ballad, coral, echo, fable, nova, onyx, sage, shimmer, verse; ElevenLabs: a voice id); default: the configured one"),
  provider: ttsProviderSchema.optional().describe("openai or elevenlabs; default: the configured one"),
});

export const ttsTool = defineTool({
  name: "tts",
  description: "Send a voice message: the text is spoken (text-to-speech) and sent as audio to this conversation. "
    + "Use it when the user asks to hear something; your normal reply still goes as text.",
  parameters,
  sideEffects: true,
  parallelSafe: true,
  groups: ["group:tts"],
  runsIn: "process",
  async execute(args, ctx) {
    const { rt, call } = busOf(ctx);
    const target = await defaultTarget(rt, call);
    if (ctx.signal.aborted) throw new LurkError("ABORTED", "the voice message was stopped");
    const spoken = await rt.client.call("agent-runner", "speak", {
      text: args.text, channel: target.channel, sessionKey: call.sessionKey, agentId: call.agentId,
      ...(args.voice ? { voice: args.voice } : {}), ...(args.provider ? { provider: args.provider } : {}),
    }, { timeoutMs: rt.config.tts.totalTimeoutMs + SPEAK_MARGIN_MS });
    const id = `tts-${call.toolCallId}`.slice(0, 200);
    const ack = await queueMessage(rt, call, target, id, { kind: "notice", text: "", attachments: [spoken.attachment] }, "the voice message");
    const a = spoken.attachment;
    return { content: [{ type: "text", text: `${ack.duplicate ? "already sent" : "sent"} a voice message (${a.name}, ${formatBytes(a.size)}, ${spoken.provider} voice ${spoken.voice}) to ${target.channel}/${target.conversation}` }] };
  },
});
