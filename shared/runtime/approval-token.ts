/**
 * Approval decision tokens (shared/contract/messages/approvals.ts): `base64url(JSON payload).base64url(ed25519 signature)`,
 * signed by the approvals actor with its own key; anyone holding the public key (published as
 * `approvalsPublicKey` in the approvals service's `$SRV.INFO` metadata, SPKI DER in base64) can
 * verify one without a shared secret. The args hash is sha256 of the canonical JSON (sorted keys).
 */
import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from "node:crypto";
import { approvalTokenPayloadSchema } from "../contract/index.js";
import type { z } from "zod";

export type ApprovalTokenPayload = z.infer<typeof approvalTokenPayloadSchema>;

/** JSON with object keys sorted at every level (arrays keep their order). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

export function argsHash(args: unknown): string {
  return createHash("sha256").update(canonicalJson(args), "utf8").digest("hex");
}

export function signApprovalToken(privateKey: KeyObject, payload: ApprovalTokenPayload): string {
  const body = Buffer.from(JSON.stringify(approvalTokenPayloadSchema.parse(payload)), "utf8");
  return `${body.toString("base64url")}.${sign(null, body, privateKey).toString("base64url")}`;
}

export function publicKeyFromBase64(b64: string): KeyObject {
  return createPublicKey({ key: Buffer.from(b64, "base64"), format: "der", type: "spki" });
}

export function publicKeyToBase64(key: KeyObject): string {
  return key.export({ format: "der", type: "spki" }).toString("base64");
}

export function privateKeyFromPem(pem: string): KeyObject {
  return createPrivateKey(pem);
}

/** The payload of a token whose signature verifies with `publicKey`; null otherwise. Claims are not checked here. */
export function verifyApprovalToken(publicKey: KeyObject, token: string): ApprovalTokenPayload | null {
  const parts = token.split(".");
  if (parts.length !== 2 || !parts[0] || !parts[1]) return null;
  try {
    const body = Buffer.from(parts[0], "base64url");
    const signature = Buffer.from(parts[1], "base64url");
    if (!verify(null, body, publicKey, signature)) return null;
    const parsed = approvalTokenPayloadSchema.safeParse(JSON.parse(body.toString("utf8")));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
