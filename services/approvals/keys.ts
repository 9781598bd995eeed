/** The approvals actor's ed25519 signing key: generated on first start, kept as PEM with mode 0600. */
import { generateKeyPairSync, createPublicKey, type KeyObject } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { privateKeyFromPem, publicKeyToBase64 } from "../../shared/runtime/approval-token.js";

export const SIGNING_KEY_FILE = "signing-key.pem";

export function loadOrCreateSigningKey(dir: string): { privateKey: KeyObject; publicKeyBase64: string } {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, SIGNING_KEY_FILE);
  // a key is generated only when there is none (metadata and start both load it)
  if (!existsSync(file)) {
    try {
      const { privateKey } = generateKeyPairSync("ed25519");
      // "wx": never overwrite a key another start wrote first
      writeFileSync(file, privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600, flag: "wx" });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  const privateKey = privateKeyFromPem(readFileSync(file, "utf8"));
  return { privateKey, publicKeyBase64: publicKeyToBase64(createPublicKey(privateKey)) };
}
