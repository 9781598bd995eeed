/**
 * A run's final text -> the reply that is delivered: the text without voice directives
 * (tts-directives.ts), and, when the run's TTS mode asks for it, a voice message of it attached.
 *
 * Mode: the run's `options.tts` (the session's /tts or a message directive) else tts.auto.
 *   always  every delivered reply;  inbound  a reply to inputs with an audio attachment (a voice
 *   note);  tagged  a reply with a [[tts…]] directive;  off  never.
 * Nothing is spoken for a run that delivers nothing (no origin, deliver false) or a silent reply.
 * The spoken text: the [[tts:text]] parts, else the visible text, as plain sentences (tts-text.ts),
 * fitted to tts.maxChars (summarized or cut). The model's [[tts:provider=… voice=… …]] choose the
 * provider, voice, model and speed unless tts.modelOverrides is false.
 * Contract of `reply`: never throws. A synthesis that fails (every provider and profile the
 * Speaker tried) leaves the text reply as it is (the failure is logged and returned in `error`,
 * which the run's end marker keeps); one that succeeded after others failed names them in `failed`.
 * The audio's characters are booked to the run's session and agent under `speech` (tts.ts); the
 * summary call's tokens go with the run's end under `tts`.
 */
import { emptyUsage, isSilentReply, LurkError, type Attachment, type RunRequest, type TtsProvider, type Usage } from "../../shared/contract/index.js";
import type { TtsConfig } from "../../shared/runtime/config-tts.js";
import type { Logger } from "../../shared/runtime/logger.js";
import type { Complete } from "./model-complete.js";
import { parseTtsReply } from "./tts-directives.js";
import { fitForSpeech, speechText } from "./tts-text.js";
import type { Speaker } from "./tts.js";

export type TtsMode = TtsConfig["auto"];

export interface VoiceReply {
  /** the text to deliver (directives removed) */
  text: string;
  attachments: Attachment[];
  /** the summary call's usage (empty when there was none) */
  usage: Usage;
  /** what was spoken, or why not (for the run's end marker) */
  voice?: { provider: TtsProvider; voice: string; chars: number; shortened: "as is" | "summarized" | "cut"; failed?: string[] } | { error: string };
}

export class VoiceReplies {
  constructor(private readonly config: TtsConfig, private readonly speaker: Pick<Speaker, "speak">, private readonly log: Logger) {}

  mode(req: Pick<RunRequest, "options">): TtsMode {
    return req.options.tts ?? this.config.auto;
  }

  async reply(req: RunRequest, text: string, signal: AbortSignal, summarizer?: () => Complete, log: Logger = this.log): Promise<VoiceReply> {
    const parsed = parseTtsReply(text);
    const visible = parsed.visible === text ? text : parsed.visible.trim();
    const none: VoiceReply = { text: visible, attachments: [], usage: emptyUsage() };
    if (parsed.ignored.length > 0) log.debug({ ignored: parsed.ignored }, "tts directive attributes not understood");
    if (!req.deliver || !req.origin || isSilentReply(visible) || !this.wanted(req, parsed.tagged)) return none;
    const plain = speechText(parsed.spoken?.trim() || visible);
    if (!plain) return none;
    const fitted = await fitForSpeech(plain, this.config.maxChars, this.config.summarize ? summarizer?.() : undefined, log);
    const overrides = this.config.modelOverrides ? parsed.overrides : {};
    try {
      const spoken = await this.speaker.speak({ text: fitted.text, channel: req.origin.channel, ...overrides, signal, owner: { sessionKey: req.sessionKey, agentId: req.agentId } });
      const voice = { provider: spoken.provider, voice: spoken.voice, chars: fitted.text.length, shortened: fitted.how, ...(spoken.failed ? { failed: spoken.failed } : {}) };
      return { text: visible, attachments: [spoken.attachment], usage: fitted.usage, voice };
    } catch (err) {
      const e = LurkError.from(err);
      log.warn({ err: e, code: e.code }, "could not synthesize the voice reply; the text reply goes alone");
      return { ...none, usage: fitted.usage, voice: { error: `${e.code}: ${e.message}`.slice(0, 500) } };
    }
  }

  private wanted(req: RunRequest, tagged: boolean): boolean {
    switch (this.mode(req)) {
      case "always": return true;
      case "tagged": return tagged;
      case "inbound": return req.inputs.some((i) => i.kind === "user" && i.attachments.some((a) => a.kind === "audio"));
      default: return false;
    }
  }
}
