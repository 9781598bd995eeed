/**
 * `lurk.agent-runner.speak` (shared/contract/messages/tts.ts): the tools actor's `tts` tool asks
 * for a voice message of a text; the runner synthesizes and stores it (tts.ts) and answers with
 * the audio attachment. The text is spoken as given (the tool's caller chose it; no summary), as
 * plain sentences (markdown left out, tts-text.ts). Failures are the Speaker's typed errors.
 * The characters are booked to the calling session (else agent) under `speech` (tts.ts).
 */
import { LurkError } from "../../shared/contract/index.js";
import type { ActorRuntime } from "../../shared/runtime/actor.js";
import { speechText } from "./tts-text.js";
import type { Speaker } from "./tts.js";

export function serveSpeech(rt: ActorRuntime, speaker: Pick<Speaker, "speak">): void {
  rt.serve("agent-runner", "speak", async (req) => {
    const text = speechText(req.text);
    if (!text) throw new LurkError("VALIDATION_FAILED", "the text has nothing to speak once markdown, code and URLs are left out");
    const spoken = await speaker.speak({
      text, signal: rt.signal,
      ...(req.sessionKey || req.agentId ? { owner: { sessionKey: req.sessionKey, agentId: req.agentId } } : {}),
      ...(req.channel ? { channel: req.channel } : {}), ...(req.provider ? { provider: req.provider } : {}), ...(req.voice ? { voice: req.voice } : {}),
    });
    rt.log.debug({ sessionKey: req.sessionKey, provider: spoken.provider, voice: spoken.voice, chars: text.length }, "tts tool speech");
    return spoken;
  });
}
