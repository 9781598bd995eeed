/**
 * `lurk.agent-runner.speak`: text -> a voice message in the media store, made by the agent-runner
 * (it alone holds the speech providers' credentials) for the tools actor's `tts` tool. Only the
 * tools user may publish the request (nats.conf). The reply names the stored audio (kind "audio",
 * a media ref, never the bytes). Failures are typed errors: PROVIDER_* (auth, rate limit, timeout,
 * ...; the provider's message, secrets redacted), LIMIT_EXCEEDED (the audio is above
 * media.maxFileMb or the store is full), UNAVAILABLE (the media store cannot be reached).
 */
import { z } from "zod";
import { agentIdSchema, attachmentSchema, channelNameSchema, sessionKeySchema } from "../common.js";
import { defineMessage } from "../envelope.js";

/** OpenAI's speech API takes at most 4096 characters of input */
export const MAX_SPEAK_CHARS = 4096;

/** the speech providers LurkBot drives (Edge TTS has no official API: not supported) */
export const ttsProviderSchema = z.enum(["openai", "elevenlabs"]);
export type TtsProvider = z.infer<typeof ttsProviderSchema>;

/** a voice: an OpenAI voice name (alloy, nova, ...), a compatible server's, or an ElevenLabs voice id */
export const ttsVoiceSchema = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "a voice name or id: letters, digits, _ . - (at most 64), e.g. nova or 21m00Tcm4TlvDq8ikWAM");

export const agentRunnerSpeakRequest = defineMessage("lurk.agent-runner.speak.v1", {
  text: z.string().trim().min(1).max(MAX_SPEAK_CHARS),
  /** where the audio goes: Telegram gets an OGG/Opus voice note, other channels MP3 (unless tts.<provider>.format says) */
  channel: channelNameSchema.optional(),
  /** the calling session: the logs, and the usage ledger's `speech` booking (its agent, channel, type) */
  sessionKey: sessionKeySchema.optional(),
  /** the calling agent: the usage ledger's booking when the session is not stored */
  agentId: agentIdSchema.optional(),
  /** default: tts.provider */
  provider: ttsProviderSchema.optional(),
  /** default: the provider's configured voice */
  voice: ttsVoiceSchema.optional(),
});
export type AgentRunnerSpeakRequest = z.infer<typeof agentRunnerSpeakRequest>;

export const agentRunnerSpeakReply = z.object({
  /** the stored audio: kind "audio", its MIME type, name, size and media ref */
  attachment: attachmentSchema.extend({ kind: z.literal("audio"), ref: attachmentSchema.shape.ref.unwrap(), size: z.number().int().nonnegative() }),
  provider: ttsProviderSchema,
  voice: z.string().max(64),
  model: z.string().max(200),
});
export type AgentRunnerSpeakReply = z.infer<typeof agentRunnerSpeakReply>;
