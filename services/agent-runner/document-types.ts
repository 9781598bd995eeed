/**
 * Which attachments are documents whose text the agent-runner extracts (document-text.ts) and
 * transcript.ts words as such: by the attachment's MIME type, or by its name's extension when
 * the type is a generic one (the formats: shared/runtime/documents/formats.ts).
 */
import type { Attachment } from "../../shared/contract/index.js";
import { formatOf, type DocumentFormat } from "../../shared/runtime/documents/formats.js";

export type { DocumentFormat };

export function documentFormat(a: Pick<Attachment, "mime" | "name">): DocumentFormat | undefined {
  return formatOf(a.mime, a.name);
}
