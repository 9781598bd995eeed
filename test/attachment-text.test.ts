/**
 * Attachments the model reads as text, with the whole system as processes.
 * Voice notes (media.transcription): the agent-runner
 * sends an audio attachment from the media store to the fake OpenAI server's
 * /v1/audio/transcriptions (the SDK's real multipart request) and the model reads the transcript;
 * the session keeps it; the same file is not transcribed twice; a file above the cap and a
 * failed transcription become notes that say why, and the run still answers.
 * Small text files (media.inlineTextKb): their content goes under the file's note; binary
 * content, a file above the cap and text past the per-run total stay refs.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, beforeEach, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { BusClient } from "../shared/runtime/client.js";
import { MediaStore } from "../shared/runtime/media.js";
import { messageText } from "./fakes/openai-server.js";
import { CliClient, TestSystem } from "./harness/system.js";
import { startFileRig, stopFileRig } from "./harness/file-rig.js";

/** an Ogg page header and noise: the server does not decode it */
const voice = (size: number) => Buffer.concat([Buffer.from("OggS\0\x02", "binary"), randomBytes(size - 6)]);

describe("audio transcription", () => {
  let system: TestSystem;
  let channelNc: NatsConnection;
  let runnerNc: NatsConnection;
  let media: MediaStore;
  let cli: CliClient;

  before(async () => {
    ({ system, channelNc, runnerNc, media, cli } = await startFileRig({ config: { media: { inlineTextKb: 4, transcription: { model: "openai/whisper-1", language: "en", maxMb: 0.05 } } } }));
  });
  after(() => stopFileRig({ system, channelNc, runnerNc, media, cli }));
  beforeEach(() => system.fake.reset());

  const lastUserText = (i = 0) => messageText(system.fake.requests[i]!.body.messages.at(-1));

  it("the model reads a voice note's transcript, the session keeps it, and the same file is transcribed once", async () => {
    const bytes = voice(4_000);
    const { ref } = await media.put(bytes, { mime: "audio/ogg", name: "voice.ogg" });
    system.fake.transcriptText = () => "Remind me to water the plants at six.";
    system.fake.enqueue({ kind: "text", text: "I will remind you." }, { kind: "text", text: "Same note again." });
    const reply = await cli.send("", { sessionName: "voice", attachments: [{ kind: "audio", mime: "audio/ogg", name: "voice.ogg", size: bytes.length, ref }] });
    assert.equal(reply.text, "I will remind you.");
    assert.equal(system.fake.transcriptions.length, 1);
    const [sent] = system.fake.transcriptions;
    assert.deepEqual({ model: sent!.model, fileName: sent!.fileName, fileType: sent!.fileType, language: sent!.language, format: sent!.responseFormat, auth: sent!.headers.authorization },
      { model: "whisper-1", fileName: "voice.ogg", fileType: "audio/ogg", language: "en", format: "json", auth: "Bearer sk-test-0123456789abcdef" });
    assert.deepEqual(sent!.bytes, bytes, "the stored file's bytes went to the API");
    assert.match(lastUserText(), new RegExp(`\\[attachment voice\\.ogg \\(audio/ogg, 3\\.9 KB\\), media ref ${ref}; its transcript:\\]\\nRemind me to water the plants at six\\.`));
    const records = (await new BusClient(runnerNc).call("sessions", "history", { sessionKey: "agent:main:cli:dm:voice", limit: 20 })).records;
    assert.ok(JSON.stringify(records).includes("Remind me to water the plants at six."), "the transcript is in the session's history");
    // the same file in a later message: the cached transcript, no second request
    await cli.send("and this one?", { sessionName: "voice", attachments: [{ kind: "audio", mime: "audio/ogg", name: "voice.ogg", ref }] });
    assert.equal(system.fake.transcriptions.length, 1, "not transcribed again");
    assert.match(lastUserText(1), /and this one\?[^]*its transcript:\]\nRemind me to water the plants at six\./);
  });

  it("a video in a type the API takes is transcribed; images and other files are not", async () => {
    const clip = Buffer.concat([Buffer.from("\0\0\0\x18ftypmp42", "binary"), randomBytes(2_000)]);
    const { ref: clipRef } = await media.put(clip, { mime: "video/mp4", name: "clip.mp4" });
    const { ref: docRef } = await media.put(Buffer.from("%PDF-1.4 tiny"), { mime: "application/pdf", name: "doc.pdf" });
    system.fake.transcriptText = (req) => `spoken words in ${req.fileName}`;
    system.fake.enqueue({ kind: "text", text: "ok" });
    await cli.send("two files", { sessionName: "video", attachments: [
      { kind: "video", mime: "video/mp4", name: "clip.mp4", ref: clipRef },
      { kind: "file", mime: "application/pdf", name: "doc.pdf", ref: docRef },
    ] });
    assert.deepEqual(system.fake.transcriptions.map((t) => t.fileName), ["clip.mp4"]);
    const text = lastUserText();
    assert.match(text, /clip\.mp4 \(video\/mp4\), media ref \w+; its transcript:\]\nspoken words in clip\.mp4/);
    // not transcribed: the document reader tried it (it is no valid PDF)
    assert.ok(text.includes(`doc.pdf (application/pdf), media ref ${docRef} (its text could not be read: it is not a valid PDF (damaged, or another kind of file)): the media_save tool`), text);
  });

  it("audio above media.transcription.maxMb is not sent: the model is told why and gets the file", async () => {
    const big = voice(60_000);
    const { ref } = await media.put(big, { mime: "audio/ogg", name: "long.ogg" });
    system.fake.enqueue({ kind: "text", text: "too long to hear" }, { kind: "text", text: "still too long" });
    await cli.send("listen", { sessionName: "big", attachments: [{ kind: "audio", mime: "audio/ogg", name: "long.ogg", size: big.length, ref }] });
    assert.match(lastUserText(), new RegExp(`long\\.ogg \\(audio/ogg, 58\\.6 KB\\), media ref ${ref} \\(not transcribed: 58\\.6 KB is above the 51\\.2 KB cap \\(media\\.transcription\\.maxMb\\)\\): the media_save tool`));
    // without a size on the attachment the store's size is checked
    await cli.send("again", { sessionName: "big", attachments: [{ kind: "audio", mime: "audio/ogg", name: "long.ogg", ref }] });
    assert.match(lastUserText(1), /\(not transcribed: the file is above the 51\.2 KB cap \(media\.transcription\.maxMb\)\)/);
    assert.equal(system.fake.transcriptions.length, 0, "nothing sent to the API");
  });

  it("a failed transcription becomes a note with the provider's error, and the run still answers", async () => {
    const bytes = voice(1_000);
    const { ref } = await media.put(bytes, { mime: "audio/mpeg", name: "memo.mp3" });
    system.fake.transcriptText = () => 401;
    system.fake.enqueue({ kind: "text", text: "I could not hear it" });
    const reply = await cli.send("memo", { sessionName: "fail", attachments: [{ kind: "audio", mime: "audio/mpeg", name: "memo.mp3", ref }] });
    assert.equal(reply.text, "I could not hear it");
    assert.equal(system.fake.transcriptions.length, 1, "an auth failure is not retried");
    assert.match(lastUserText(), new RegExp(`memo\\.mp3 \\(audio/mpeg\\), media ref ${ref} \\(not transcribed \\(PROVIDER_AUTH\\): openai: [^)]*Incorrect API key`));
  });

  it("a small text file reaches the model as its text; binary content and a file above media.inlineTextKb stay refs", async () => {
    const notes = "# Shopping\n- milk\n- bread\n";
    const { ref: notesRef } = await media.put(Buffer.from(notes), { mime: "text/markdown", name: "list.md" });
    const { ref: codeRef } = await media.put(Buffer.from("print('hi')\n"), { mime: "application/octet-stream", name: "hello.py" });
    const { ref: binRef } = await media.put(Buffer.from([0x68, 0x69, 0x00, 0x01]), { mime: "text/plain", name: "odd.txt" });
    const big = "x".repeat(5_000);
    const { ref: bigRef } = await media.put(Buffer.from(big), { mime: "text/plain", name: "big.txt" });
    system.fake.enqueue({ kind: "text", text: "read them" });
    await cli.send("my files", { sessionName: "texts", attachments: [
      { kind: "file", mime: "text/markdown", name: "list.md", size: notes.length, ref: notesRef },
      { kind: "file", mime: "application/octet-stream", name: "hello.py", ref: codeRef },
      { kind: "file", mime: "text/plain", name: "odd.txt", ref: binRef },
      { kind: "file", mime: "text/plain", name: "big.txt", ref: bigRef },
    ] });
    const text = lastUserText();
    assert.ok(text.includes(`[attachment list.md (text/markdown, ${notes.length} bytes), media ref ${notesRef}; its text:]\n${notes}`), text);
    assert.ok(text.includes(`hello.py (application/octet-stream), media ref ${codeRef}; its text:]\nprint('hi')`), "a known text extension");
    assert.match(text, new RegExp(`odd\\.txt \\(text/plain\\), media ref ${binRef}: the media_save tool`), "NUL bytes: not text");
    assert.match(text, new RegExp(`big\\.txt \\(text/plain\\), media ref ${bigRef}: the media_save tool`), "above 4 KB: a ref");
    const records = (await new BusClient(runnerNc).call("sessions", "history", { sessionKey: "agent:main:cli:dm:texts", limit: 20 })).records;
    assert.ok(JSON.stringify(records).includes("- bread"), "the session keeps the text");
  });
});
