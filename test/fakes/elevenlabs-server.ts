/**
 * A fake ElevenLabs API (node:http) for the text-to-speech tests, speaking its wire format:
 * `POST /v1/text-to-speech/<voice_id>?output_format=<format>` with the `xi-api-key` header and a
 * JSON body `{ text, model_id, language_code?, voice_settings? }`; answers the audio bytes
 * (`fakeElevenLabsAudio`: Ogg's or MP3's magic bytes, then a hash of the request) with
 * `audio/ogg` (opus_*) or `audio/mpeg` (mp3_*). A wrong or missing key is 401 with ElevenLabs'
 * error body (`{"detail":{"status":"invalid_api_key","message":…}}`); a body without text, an
 * unknown format or voice is 400/422/404 the same way. Every request is recorded in `requests`;
 * `failNext(status, detailStatus?, key?)` makes the next request (with that key) fail; `apiKeys`
 * takes more keys (profiles of other accounts).
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { closeLoopback, listenLoopback, readBody, sendJson } from "./http.js";

export interface ElevenLabsRequest {
  headers: IncomingHttpHeaders;
  voiceId: string;
  outputFormat: string;
  body: { text?: unknown; model_id?: unknown; language_code?: unknown; voice_settings?: Record<string, unknown> };
}

const FORMATS = /^(mp3_(22050_32|44100_(32|64|96|128|192))|opus_48000_(32|64|96|128|192)|pcm_\d+|ulaw_8000|alaw_8000)$/;

export function fakeElevenLabsAudio(voiceId: string, format: string, text: string): Buffer {
  const digest = createHash("sha256").update(`${voiceId}\n${format}\n${text}`).digest();
  return Buffer.concat([Buffer.from(format.startsWith("opus") ? "OggS" : "ID3", "latin1"), digest]);
}

export class FakeElevenLabsServer {
  readonly requests: ElevenLabsRequest[] = [];
  /** voice ids the account has (others: 404 voice_not_found) */
  readonly voices = new Set(["21m00Tcm4TlvDq8ikWAM", "pNInz6obpgDQGcFmaJgB"]);
  /** the keys it accepts (`apiKey`, and any added: another account's) */
  readonly apiKeys: Set<string>;
  private readonly failures: Array<{ status: number; detailStatus: string; key?: string }> = [];

  private constructor(private readonly server: Server, readonly url: string, readonly apiKey: string) {
    this.apiKeys = new Set([apiKey]);
  }

  static async start(apiKey = "el-test-key-0123456789"): Promise<FakeElevenLabsServer> {
    let fake!: FakeElevenLabsServer;
    const server = createServer((req, res) => void fake.handle(req, res));
    fake = new FakeElevenLabsServer(server, await listenLoopback(server, 0), apiKey);
    return fake;
  }

  /** The next request (with `key`, when given) fails with `status`. */
  failNext(status: number, detailStatus = status === 429 ? "too_many_concurrent_requests" : "internal_error", key?: string): void {
    this.failures.push({ status, detailStatus, ...(key ? { key } : {}) });
  }

  async close(): Promise<void> {
    await closeLoopback(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.url);
    const match = /^\/v1\/text-to-speech\/([^/]+)$/.exec(url.pathname);
    const detail = (status: number, code: string, message: string) => sendJson(res, status, { detail: { status: code, message } });
    if (req.method !== "POST" || !match) return detail(404, "not_found", `Not found: ${req.method} ${url.pathname}`);
    const raw = await readBody(req);
    const key = String(req.headers["xi-api-key"] ?? "");
    if (!this.apiKeys.has(key)) return detail(401, "invalid_api_key", "Invalid API key");
    let body: ElevenLabsRequest["body"];
    try {
      body = JSON.parse(raw) as ElevenLabsRequest["body"];
    } catch {
      return detail(400, "invalid_json", "The body is not valid JSON");
    }
    const voiceId = decodeURIComponent(match[1]!);
    const outputFormat = url.searchParams.get("output_format") ?? "mp3_44100_128";
    this.requests.push({ headers: req.headers, voiceId, outputFormat, body });
    const at = this.failures.findIndex((f) => f.key === undefined || f.key === key);
    const failure = at >= 0 ? this.failures.splice(at, 1)[0] : undefined;
    if (failure) return detail(failure.status, failure.detailStatus, `fake failure ${failure.status}`);
    if (typeof body.text !== "string" || body.text.trim() === "") return detail(422, "invalid_text", "text is required");
    if (!FORMATS.test(outputFormat)) return detail(400, "invalid_output_format", `output_format ${outputFormat} is not supported`);
    if (!this.voices.has(voiceId)) return detail(404, "voice_not_found", `A voice with the voice_id ${voiceId} was not found.`);
    const audio = fakeElevenLabsAudio(voiceId, outputFormat, body.text);
    res.writeHead(200, { "content-type": outputFormat.startsWith("opus") ? "audio/ogg" : "audio/mpeg", "content-length": audio.byteLength });
    res.end(audio);
  }
}
