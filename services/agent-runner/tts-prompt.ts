/**
 * The system prompt's "## Voice (TTS)" section (seed 001 §3.3 item 15), present only when the
 * run's TTS mode (the session's /tts, else tts.auto) is not off: when replies are spoken, the
 * directives the model may use (removed from the text the user reads), the voices, the spoken
 * length limit, and the tts tool when the run has it.
 */
import { OPENAI_TTS_VOICES, type TtsConfig } from "../../shared/runtime/config-tts.js";

export function ttsPromptLines(config: TtsConfig, mode: TtsConfig["auto"], hasTool: boolean): string[] {
  if (mode === "off") return [];
  const when = {
    always: "Your replies in this conversation are also sent as voice messages (text-to-speech), with the written text.",
    inbound: "When the user's message carries a voice note or other audio, your reply is also sent as a voice message (text-to-speech), with the written text.",
    tagged: "Your replies are text only unless you put [[tts]] in the reply: then it is also sent as a voice message (text-to-speech). Use it when the user asks to hear the answer or a spoken reply clearly helps.",
  }[mode];
  const voices = config.provider === "openai"
    ? `Voices (${config.openai.model}): ${OPENAI_TTS_VOICES.join(", ")}; the default is ${config.openai.voice}.`
    : `The voice is the ElevenLabs voice id ${config.elevenlabs.voiceId} unless you name another voice id.`;
  return [
    when,
    "Directives in double brackets are removed from the text the user reads: [[tts:text]]…[[/tts:text]] is spoken instead of the written text (for example a short spoken summary of a long written answer); everything outside it is written only.",
    ...(config.modelOverrides ? [`[[tts:voice=NAME]] picks the voice for this reply${config.provider === "openai" ? " (e.g. [[tts:voice=nova]])" : ""}; [[tts:provider=openai]] or [[tts:provider=elevenlabs]] the provider.`, voices] : []),
    `Spoken text above ${config.maxChars} characters is shortened; markdown, code and links are not read aloud, so write what should be heard as plain sentences.`,
    ...(hasTool ? ["The `tts` tool sends a voice message of any text to this conversation right away (e.g. when asked to read something aloud)."] : []),
  ];
}
