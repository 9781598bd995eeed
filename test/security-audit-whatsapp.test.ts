/**
 * `lurkbot security audit` on the WhatsApp channel (`channels.whatsapp`), as a real process on a
 * real home: a channel missing its app secret or verify token (or token, or phone number id) is a
 * warning that it will refuse to start; its secrets written into config.json are a warning naming
 * the WHATSAPP_* variables to move them to; a webhook listening off loopback is reported like the
 * other listeners; open WhatsApp DMs like the other platform channels'. Disabled: nothing.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { audit, byId, freshHome, removeAuditDirs, writeConfig } from "./harness/audit.js";

after(removeAuditDirs);

const base = { enabled: true, phoneNumberId: "106540352242922" };
const secrets = { accessToken: "EAAT0123456789abcdefghijklmnop", appSecret: "0123456789abcdef0123456789abcdef", verifyToken: "verify-0123456789abcdef" };

describe("lurkbot security audit: the WhatsApp channel", () => {
  it("missing appSecret / verifyToken: a warning that the channel refuses to start; set (in the environment): none", async () => {
    const { home, env } = await freshHome({ channels: { whatsapp: { ...base } } }, { WHATSAPP_ACCESS_TOKEN: secrets.accessToken });
    const missing = byId((await audit(env)).report, "channel.whatsapp.refused");
    assert.equal(missing?.level, "warning");
    assert.match(missing!.title, /channels\.whatsapp\.appSecret, channels\.whatsapp\.verifyToken are not set/);
    assert.match(missing!.detail, /channel-whatsapp stops at start[\s\S]*forged messages/);
    assert.match(missing!.fix, /WHATSAPP_APP_SECRET[\s\S]*WHATSAPP_VERIFY_TOKEN/);
    assert.ok(!missing!.title.includes("accessToken"), "the token from the environment counts");

    const withEnv = await audit({ ...env, WHATSAPP_APP_SECRET: secrets.appSecret, WHATSAPP_VERIFY_TOKEN: secrets.verifyToken });
    assert.equal(byId(withEnv.report, "channel.whatsapp.refused"), undefined);
    assert.equal(byId(withEnv.report, "secrets.config-plaintext"), undefined, "nothing secret in config.json");

    writeConfig(home, { channels: { whatsapp: { ...base, enabled: false } } });
    assert.equal(byId((await audit(env)).report, "channel.whatsapp.refused"), undefined, "disabled: nothing");
  });

  it("secrets written into config.json: a warning naming the variables; a webhook off loopback: exposed; open DMs reported", async () => {
    const { env } = await freshHome({ channels: { whatsapp: { ...base, ...secrets, host: "0.0.0.0" } }, routing: { dm: { policy: "open" } } });
    const { report } = await audit(env);
    const plain = byId(report, "secrets.config-plaintext");
    assert.equal(plain?.level, "warning");
    for (const [key, variable] of [["accessToken", "WHATSAPP_ACCESS_TOKEN"], ["appSecret", "WHATSAPP_APP_SECRET"], ["verifyToken", "WHATSAPP_VERIFY_TOKEN"]]) {
      assert.match(plain!.fix, new RegExp(`channels\\.whatsapp\\.${key} → ${variable}`));
    }
    for (const value of Object.values(secrets)) assert.ok(!JSON.stringify(report).includes(value), "no secret value in the report");
    const exposed = byId(report, "channel.whatsapp.exposed");
    assert.equal(exposed?.level, "warning");
    assert.match(exposed!.detail, /WhatsApp webhook/);
    assert.equal(byId(report, "channel.whatsapp.refused"), undefined);
    const open = byId(report, "routing.dm.whatsapp.open");
    assert.equal(open?.level, "warning");
    assert.match(open!.title, /anyone on whatsapp can DM the agent/);
  });
});
