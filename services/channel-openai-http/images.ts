/**
 * The images of a request (`image_url` content parts of the last user message) as attachments:
 * a `data:<image type>;base64,...` URL is decoded (at most media.maxFileMb) and stored in the
 * media store, and the inbound message carries its ref; an http(s) URL stays a url attachment
 * (not downloaded here: the model's provider fetches it). Anything else, a malformed data URL,
 * a type that is not an image or a file above the cap is an ImageError (a 400 for the client).
 */
import type { Attachment } from "../../shared/contract/index.js";
import { decodeBase64Capped } from "../../shared/runtime/channel/media.js";
import { formatBytes, mimeFromName, type MediaStore } from "../../shared/runtime/media.js";
import type { UserImage } from "./wire.js";

/** the inbound message's attachment cap */
const MAX_IMAGES = 32;
const IMAGE_MIME = /^image\/[a-z0-9.+-]{1,100}$/;
/** a URL image's type is known once fetched; the provider reads it then, this stands in */
const URL_IMAGE_FALLBACK_MIME = "image/jpeg";

export class ImageError extends Error {
  constructor(message: string, readonly param: string, readonly code: "invalid_image_url" | "image_too_large") {
    super(message);
  }
}

export async function imageAttachments(media: MediaStore, images: UserImage[]): Promise<Attachment[]> {
  if (images.length > MAX_IMAGES) throw new ImageError(`at most ${MAX_IMAGES} images per message`, images[MAX_IMAGES]!.param, "invalid_image_url");
  const out: Attachment[] = [];
  for (const image of images) {
    if (/^https?:\/\//i.test(image.url)) {
      let path: string;
      try {
        path = new URL(image.url).pathname;
      } catch {
        throw new ImageError("the image URL is not a valid URL", image.param, "invalid_image_url");
      }
      const guessed = mimeFromName(path);
      out.push({ kind: "image", mime: guessed.startsWith("image/") ? guessed : URL_IMAGE_FALLBACK_MIME, url: image.url });
      continue;
    }
    const { mime, bytes } = decodeDataUrl(image, media.maxFileBytes);
    const stored = await media.put(bytes, { mime });
    out.push({ kind: "image", mime, size: stored.size, ref: stored.ref });
  }
  return out;
}

/** `data:image/<type>[;param];base64,<standard base64>`, checked before decoding. */
function decodeDataUrl(image: UserImage, maxBytes: number): { mime: string; bytes: Buffer } {
  const bad = (why: string) => new ImageError(`the image_url must be an http(s) URL or a data:image/<type>;base64,... URL: ${why}`, image.param, "invalid_image_url");
  if (!image.url.startsWith("data:")) throw bad("it is neither");
  const comma = image.url.indexOf(",");
  if (comma < 0) throw bad("the data URL has no ','");
  const [type = "", ...params] = image.url.slice(5, comma).split(";");
  const mime = type.trim().toLowerCase();
  if (!IMAGE_MIME.test(mime)) throw bad(`"${mime.slice(0, 100)}" is not an image type`);
  if (!params.some((p) => p.trim().toLowerCase() === "base64")) throw bad("the data is not base64");
  const decoded = decodeBase64Capped(image.url.slice(comma + 1), maxBytes);
  if ("bytes" in decoded) return { mime, bytes: decoded.bytes };
  if (decoded.problem === "too_large") throw new ImageError(`the image is ${formatBytes(decoded.size)}, above the ${formatBytes(maxBytes)} cap (media.maxFileMb)`, image.param, "image_too_large");
  throw bad("the base64 data is malformed");
}
