/**
 * The `media` config key: the media store (JetStream object store `lurk_media`) where channels put
 * the files users send and the `message` tool puts the files the agent sends.
 *   "media": { "maxFileMb": 20, "maxImageMb": 5, "retentionDays": 30, "storeMb": 1024 }
 * A file above maxFileMb is not stored: the agent gets a note with its name and why. An image
 * above maxImageMb (providers refuse larger ones) goes to the model as a note, not as an image.
 * The store keeps a file retentionDays after it was stored and refuses new files once it holds
 * storeMb; both apply when the launcher (or `lurkbot setup`) creates or updates the bucket.
 */
import { z } from "zod";

export const MEDIA_DEFAULTS = { maxFileMb: 20, maxImageMb: 5, retentionDays: 30, storeMb: 1024 };

export const mediaConfigSchema = z.object({
  maxFileMb: z.number().positive().max(1024).default(MEDIA_DEFAULTS.maxFileMb),
  maxImageMb: z.number().positive().max(100).default(MEDIA_DEFAULTS.maxImageMb),
  retentionDays: z.number().positive().max(3650).default(MEDIA_DEFAULTS.retentionDays),
  storeMb: z.number().int().min(16).max(1024 * 1024).default(MEDIA_DEFAULTS.storeMb),
}).prefault({});
export type MediaConfig = z.infer<typeof mediaConfigSchema>;

export const MB = 1024 * 1024;
