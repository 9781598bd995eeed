/**
 * writeFileAtomicSync (shared/runtime/atomic-write.ts), the one writer of config.json and the
 * credentials files: the mode at creation, a replaced file, nothing left behind, a symlink at
 * the target replaced and not followed, a failed write leaving the target as it was; and its
 * users (stored secrets, NATS credentials, channel secrets) through it.
 */
import assert from "node:assert/strict";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { writeFileAtomicSync } from "../shared/runtime/atomic-write.js";
import { ensureChannelSecret } from "../shared/runtime/channel/secrets.js";
import { parseConfig } from "../shared/runtime/config.js";
import { ensureCredentials } from "../shared/runtime/credentials.js";
import { readStoredSecrets, writeStoredSecrets } from "../services/cli/stored-secrets.js";

const mode = (path: string) => statSync(path).mode & 0o777;

describe("writeFileAtomicSync", () => {
  const dirs: string[] = [];
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), "lurk-atomic-"));
    dirs.push(d);
    return d;
  };
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("creates the file (and its directory) with the mode, replaces it, leaves no temporary file", () => {
    const dir = tmp();
    const path = join(dir, "sub", "config.json");
    writeFileAtomicSync(path, "one\n");
    assert.equal(readFileSync(path, "utf8"), "one\n");
    assert.equal(mode(path), 0o600);
    assert.equal(mode(join(dir, "sub")), 0o700);
    writeFileAtomicSync(path, "two\n", 0o640);
    assert.equal(readFileSync(path, "utf8"), "two\n");
    assert.equal(mode(path), 0o640, "the mode of the new file, exactly");
    // an old file with a wider mode is replaced, not chmodded in place
    writeFileSync(path, "wide\n", { mode: 0o666 });
    writeFileAtomicSync(path, "three\n");
    assert.equal(mode(path), 0o600);
    assert.deepEqual(readdirSync(join(dir, "sub")), ["config.json"]);
  });

  it("a symlink at the target is replaced, never followed; the old fixed temporary name is not used", () => {
    const dir = tmp();
    const victim = join(dir, "victim.txt");
    writeFileSync(victim, "keep me\n");
    const path = join(dir, "secrets.json");
    symlinkSync(victim, path);
    // a planted file under the predictable name of the old writer
    symlinkSync(victim, `${path}.tmp-${process.pid}`);
    writeFileAtomicSync(path, "{}\n");
    assert.equal(readFileSync(victim, "utf8"), "keep me\n", "the symlink's target is untouched");
    assert.equal(lstatSync(path).isSymbolicLink(), false);
    assert.equal(readFileSync(path, "utf8"), "{}\n");
    assert.equal(mode(path), 0o600);
  });

  it("a failed rename removes the temporary file and leaves the target as it was", () => {
    const dir = tmp();
    const path = join(dir, "taken");
    mkdirSync(path);
    writeFileSync(join(path, "inside"), "x");
    assert.throws(() => writeFileAtomicSync(path, "text"));
    assert.deepEqual(readdirSync(dir), ["taken"]);
    assert.deepEqual(readdirSync(path), ["inside"]);
  });

  it("stored secrets, NATS credentials and channel secrets are written through it (0600, replaced)", () => {
    const home = tmp();
    const secrets = join(home, "credentials", "secrets.json");
    writeStoredSecrets(secrets, { OPENAI_API_KEY: "sk-one" });
    writeStoredSecrets(secrets, { OPENAI_API_KEY: "sk-two" });
    assert.deepEqual(readStoredSecrets(secrets), { OPENAI_API_KEY: "sk-two" });
    assert.equal(mode(secrets), 0o600);

    const nats = join(home, "credentials", "nats.json");
    writeFileSync(nats, JSON.stringify({ users: {} }), { mode: 0o600 });
    const creds = ensureCredentials(nats);
    assert.ok(Object.keys(creds.users).length > 1);
    assert.equal(mode(nats), 0o600);
    assert.deepEqual(JSON.parse(readFileSync(nats, "utf8")), creds);

    const cfg = parseConfig({}, { LURKBOT_HOME: home }, home);
    const made = ensureChannelSecret(cfg, "webhook", "secret", undefined);
    assert.equal(made.source, "generated");
    assert.equal(mode(made.path), 0o600);
    assert.equal(ensureChannelSecret(cfg, "webhook", "secret", undefined).value, made.value);
    assert.deepEqual(readdirSync(join(home, "credentials")).sort(), ["channels.json", "nats.json", "secrets.json"]);
    assert.ok(existsSync(made.path));
  });
});
