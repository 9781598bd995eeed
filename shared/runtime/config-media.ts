/**
 * The `media` config key: the media store (JetStream object store `lurk_media`) where channels put
 * the files users send and the `message` tool puts the files the agent sends.
 *   "media": { "maxFileMb": 20, "maxImageMb": 5, "imageMaxPx": 2048, "retentionDays": 30, "storeMb": 1024 }
 * A file above maxFileMb is not stored: the agent gets a note with its name and why. An image
 * above maxImageMb (providers refuse larger ones) or wider or taller than imageMaxPx (providers
 * scale large images down anyway; Anthropic refuses a side over 8000 px) is scaled down to fit
 * both before it goes to the model; only one that cannot be scaled becomes a note.
 * A text file (UTF-8, a text type or a known text extension) up to inlineTextKb goes to the
 * model with its content (64 KB by default; 0 turns it off).
 * A document (PDF, DOCX, XLSX, PPTX, ODT, ODS, ODP, PPT; DOC and XLS with the system's catdoc) goes to the model with its text, read in a
 * worker thread (at most 200 pages, slides or sheets, documentTimeoutMs per document): at most
 * documentTextKb of it (64 KB by default; 0 turns it off), cut with a marker when longer.
 * A scanned PDF (no text layer) goes to a model without PDF input with the text Tesseract reads
 * from its pages (`ocr`; at most maxPages pages in timeoutMs, in the bubblewrap sandbox) when
 * poppler-utils and tesseract-ocr are installed (shared/runtime/documents/ocr.ts); a model that
 * reads PDFs gets the PDF itself instead.
 * The store keeps a file retentionDays after it was stored and refuses new files once it holds
 * storeMb; both apply when the launcher (or `lurkbot setup`) creates or updates the bucket.
 *
 * `transcription` (off unless its model is set; env LURKBOT_TRANSCRIPTION_MODEL) turns voice
 * notes and other audio files into text before the agent sees them, through OpenAI's
 * /v1/audio/transcriptions (OpenAI, or a compatible server such as a local whisper server):
 *   "transcription": { "model": "openai/gpt-4o-mini-transcribe", "language": "en" }
 * It uses the openai provider's credentials (OPENAI_API_KEY, OPENAI_BASE_URL) unless its own
 * `apiKey` / `baseUrl` are set. Audio above `maxMb` (OpenAI takes 25 MB) is not sent.
 */
import { z } from "zod";

export const OCR_DEFAULTS = { enabled: true, languages: "eng", maxPages: 20, dpi: 200, timeoutMs: 120_000 };
export const MEDIA_DEFAULTS = { maxFileMb: 20, maxImageMb: 5, imageMaxPx: 2048, retentionDays: 30, storeMb: 1024, inlineTextKb: 64, documentTextKb: 64, documentTimeoutMs: 30_000, ocr: OCR_DEFAULTS };

export const transcriptionConfigSchema = z.object({
  /** `openai/<model>`: whisper-1, gpt-4o-mini-transcribe, gpt-4o-transcribe, or a compatible server's model */
  model: z.string().regex(/^openai\/[^\s/][^\s]*$/, "openai/<model>, e.g. openai/whisper-1: transcription goes through the OpenAI API or a server compatible with its /v1/audio/transcriptions"),
  /** the API's base URL when it is not the openai provider's (e.g. http://127.0.0.1:8000/v1) */
  baseUrl: z.url({ protocol: /^https?$/ }).optional(),
  apiKey: z.string().min(1).optional(),
  /** ISO-639-1 language of the audio (better accuracy and speed); absent: detected */
  language: z.string().regex(/^[a-z]{2}$/, "a two-letter ISO-639-1 code, e.g. en").optional(),
  maxMb: z.number().positive().max(1024).default(25),
  timeoutMs: z.number().int().min(1_000).max(600_000).default(120_000),
});
export type TranscriptionConfig = z.infer<typeof transcriptionConfigSchema>;

export const mediaConfigSchema = z.object({
  maxFileMb: z.number().positive().max(1024).default(MEDIA_DEFAULTS.maxFileMb),
  /** `lurkbot acp`: the images and files of one prompt together, MB (absent: 3 × maxFileMb); the input line is sized for them in base64 */
  maxPromptFilesMb: z.number().positive().max(4096).optional(),
  maxImageMb: z.number().positive().max(100).default(MEDIA_DEFAULTS.maxImageMb),
  /** an image's longest side sent to the model, in pixels; larger ones are scaled down (services/agent-runner/image-fit.ts) */
  imageMaxPx: z.number().int().min(64).max(8000).default(MEDIA_DEFAULTS.imageMaxPx),
  retentionDays: z.number().positive().max(3650).default(MEDIA_DEFAULTS.retentionDays),
  storeMb: z.number().int().min(16).max(1024 * 1024).default(MEDIA_DEFAULTS.storeMb),
  /** a text file (notes, code, CSV, JSON...) up to this size goes to the model as its text, not only as a ref; 0: never */
  inlineTextKb: z.number().int().min(0).max(1024).default(MEDIA_DEFAULTS.inlineTextKb),
  /** most of a document's extracted text (PDF, office formats) that goes to the model (services/agent-runner/document-text.ts); 0: none */
  documentTextKb: z.number().int().min(0).max(512).default(MEDIA_DEFAULTS.documentTextKb),
  /** time the document worker may take to read one document */
  documentTimeoutMs: z.number().int().min(1_000).max(600_000).default(MEDIA_DEFAULTS.documentTimeoutMs),
  /** OCR of scanned PDFs for models without PDF input (needs poppler-utils and tesseract-ocr; off or missing: a note) */
  ocr: z.object({
    enabled: z.boolean().default(OCR_DEFAULTS.enabled),
    /** Tesseract languages joined by "+", e.g. "eng+deu" (each needs its tesseract-ocr-<lang> package) */
    languages: z.string().regex(/^[a-z][a-z_]{1,30}(\+[a-z][a-z_]{1,30})*$/, "Tesseract language codes joined by +, e.g. eng+deu").default(OCR_DEFAULTS.languages),
    maxPages: z.number().int().min(1).max(200).default(OCR_DEFAULTS.maxPages),
    /** resolution the pages are rendered at for OCR */
    dpi: z.number().int().min(72).max(600).default(OCR_DEFAULTS.dpi),
    /** time for one document's OCR in all (the pages read by then are kept) */
    timeoutMs: z.number().int().min(1_000).max(600_000).default(OCR_DEFAULTS.timeoutMs),
  }).prefault({}),
  /** speech to text for audio attachments; absent: off */
  transcription: transcriptionConfigSchema.optional(),
}).prefault({});
export type MediaConfig = z.infer<typeof mediaConfigSchema>;

export const MB = 1024 * 1024;
