/**
 * `lurkbot security audit` on the web chat published with Tailscale (`channels.web.tailscale`),
 * as a real process on a real home: funnel a warning saying what guards the chat, serve info,
 * settings the channel would refuse (a weak token with funnel, a host beyond loopback) a warning
 * with the channel's own reason and fix, nothing when off or the channel is disabled; a funnel
 * port Tailscale does not offer is a config error. No token in any output. With a fake
 * `tailscale` first on PATH: a serve or funnel tailscaled keeps to the chat's port that the
 * config does not want is a warning with the command that turns it off; no binary, or a status
 * that cannot be read, says nothing.
 */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { assertNoSecret, audit, auditTempDir, byId, freshHome, level, removeAuditDirs, writeConfig } from "./harness/audit.js";
import { runCli } from "./harness/cli.js";

const STRONG = "Zq7f-Kd93_xPw2LmA8vRt5Ny1Hc6Ue4B";
const WEAK = "password12345678";
const IDS = ["channel.web.tailscale-funnel", "channel.web.tailscale-serve", "channel.web.tailscale-refused"];
const DNS = "box.tail1234.ts.net";
/** a fake `tailscale`: `serve status --json` prints status.json next to it (exit 1 when there is none); anything else fails */
const FAKE = `#!${process.execPath}
const fs = require("node:fs");
const args = process.argv.slice(2);
if (args.join(" ") !== "serve status --json") { process.stderr.write("unexpected\\n"); process.exit(2); }
try { process.stdout.write(fs.readFileSync(__dirname + "/status.json", "utf8")); } catch { process.stderr.write("failed to connect to local tailscaled\\n"); process.exit(1); }
`;

after(removeAuditDirs);

describe("lurkbot security audit: the web chat published with Tailscale", () => {
  it("funnel: a warning naming the internet and what guards the chat; serve: info; off or disabled: nothing", async () => {
    const web = { enabled: true, port: 18790 };
    const { home, env } = await freshHome({ channels: { web: { ...web, tailscale: { mode: "funnel", httpsPort: 8443 } } } }, { LURKBOT_WEB_TOKEN: STRONG });
    const funnel = await audit(env);
    assert.equal(funnel.run.code, 0, "a warning, not critical");
    const f = byId(funnel.report, "channel.web.tailscale-funnel");
    assert.equal(f?.level, "warning");
    assert.match(f!.title, /on the internet \(Tailscale Funnel\)/);
    assert.match(f!.detail, /anyone on the internet who learns https:\/\/<this host>\.<tailnet>\.ts\.net:8443\/ reaches the chat/);
    assert.match(f!.detail, /What guards it: the web token \(channels\.web\.token\), checked on every socket and API call/);
    assert.match(f!.fix, /channels\.web\.tailscale\.mode to "serve"/);
    assert.equal(byId(funnel.report, "channel.web.tailscale-refused"), undefined);
    assertNoSecret(funnel.run, STRONG);
    const human = await runCli(["security", "audit"], env);
    assert.match(human.stdout, /\nWARNING\n[\s\S]*\[channel\.web\.tailscale-funnel\]/);

    writeConfig(home, { channels: { web: { ...web, users: [{ id: "alice", token: STRONG }], tailscale: { mode: "serve" } } } });
    const serve = await audit(env);
    assert.equal(level(serve.report, "channel.web.tailscale-serve"), "info");
    assert.match(byId(serve.report, "channel.web.tailscale-serve")!.detail, /https:\/\/<this host>\.<tailnet>\.ts\.net\/ over HTTPS; each user's token \(channels\.web\.users, 1 user\) still guards/);
    assert.equal(byId(serve.report, "channel.web.tailscale-funnel"), undefined);

    for (const config of [{ channels: { web } }, { channels: { web: { ...web, enabled: false, tailscale: { mode: "funnel" } } } }]) {
      writeConfig(home, config);
      const none = await audit(env);
      assert.deepEqual(none.report.findings.filter((x) => IDS.includes(x.id)), [], JSON.stringify(config));
    }
  });

  it("settings the channel refuses: funnel with a weak token, serve beyond loopback; a warning with the reason and the fix", async () => {
    const { home, env } = await freshHome({ channels: { web: { enabled: true, token: WEAK, tailscale: { mode: "funnel" } } } });
    const weak = await audit(env);
    const r = byId(weak.report, "channel.web.tailscale-refused");
    assert.equal(r?.level, "warning");
    assert.match(r!.detail, /channels\.web\.token is easy to guess \(it is shorter than 24 characters\)\. The web channel checks this rule at start and publishes nothing/);
    assert.match(r!.fix, /openssl rand -hex 32.*as channels\.web\.token, or use mode "serve"/);
    assert.equal(byId(weak.report, "channel.web.tailscale-funnel"), undefined, "nothing is published");
    assertNoSecret(weak.run, WEAK);

    // a weak token is no reason to refuse serve (the tailnet, not the internet)
    writeConfig(home, { channels: { web: { enabled: true, token: WEAK, tailscale: { mode: "serve" } } } });
    assert.equal(level((await audit(env)).report, "channel.web.tailscale-serve"), "info");

    writeConfig(home, { channels: { web: { enabled: true, host: "0.0.0.0", tailscale: { mode: "serve" } } } });
    const open = await audit({ ...env, LURKBOT_WEB_TOKEN: STRONG });
    assert.equal(level(open.report, "channel.web.tailscale-refused"), "warning");
    assert.match(byId(open.report, "channel.web.tailscale-refused")!.fix, /channels\.web\.host to "127\.0\.0\.1"/);
    assert.equal(level(open.report, "channel.web.exposed"), "warning");
  });

  it("funnel on a port Tailscale Funnel does not serve: the config does not load (exit 78), naming the key and the ports", async () => {
    const { env } = await freshHome({ channels: { web: { enabled: true, tailscale: { mode: "funnel", httpsPort: 444 } } } });
    const run = await runCli(["security", "audit", "--json"], env);
    assert.equal(run.code, 78, run.stdout + run.stderr);
    assert.match(run.stderr, /channels\.web\.tailscale\.httpsPort: Tailscale Funnel serves only on ports 443, 8443, 10000/);
  });

  it("a serve or funnel tailscaled keeps to the chat's port that the config does not want: a warning with the command; no tailscale or no status: nothing", async () => {
    const bin = join(auditTempDir(), "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "tailscale"), FAKE);
    chmodSync(join(bin, "tailscale"), 0o755);
    const port = 18791;
    const status = (web: Record<string, unknown>, funnel: Record<string, boolean> = {}) => writeFileSync(join(bin, "status.json"), JSON.stringify({ Web: web, AllowFunnel: funnel }));
    status({ [`${DNS}:443`]: { Handlers: { "/": { Proxy: `http://127.0.0.1:${port}` } } }, [`${DNS}:8443`]: { Handlers: { "/": { Proxy: "http://127.0.0.1:3000" } } } }, { [`${DNS}:443`]: true });
    const { home, env } = await freshHome({ channels: { web: { enabled: true, port } } }, { LURKBOT_WEB_TOKEN: STRONG });
    const faked = { ...env, PATH: `${bin}:${env.PATH}` };

    const off = await audit(faked);
    assert.equal(off.run.code, 0, "a warning");
    const f = byId(off.report, "channel.web.tailscale-stale");
    assert.equal(f?.level, "warning");
    assert.match(f!.title, /on the internet through a Tailscale Funnel the config does not ask for/);
    assert.match(f!.detail, /still publishes this web chat on the internet \(Tailscale Funnel\) on https port 443 \(to http:\/\/127\.0\.0\.1:18791\) while channels\.web\.tailscale\.mode is "off"/);
    assert.match(f!.detail, /Anyone on the internet who learns the URL reaches the chat/);
    assert.equal(f!.fix, "if you did not set it up on purpose: tailscale funnel --https=443 off");
    assert.ok(!f!.detail.includes("3000"), "another port's serve is not the chat's");
    assertNoSecret(off.run, STRONG);

    // serve as configured on 443 is the chat's own; on another port it is stale (a serve, not the internet)
    status({ [`${DNS}:443`]: { Handlers: { "/": { Proxy: `http://127.0.0.1:${port}/` } } }, [`${DNS}:10000`]: { Handlers: { "/": { Proxy: `http://localhost:${port}` } } } });
    writeConfig(home, { channels: { web: { enabled: true, port, tailscale: { mode: "serve" } } } });
    const other = byId((await audit(faked)).report, "channel.web.tailscale-stale");
    assert.match(other!.title, /on your tailnet through a Tailscale Serve/);
    assert.match(other!.detail, /on https port 10000 .*while channels\.web\.tailscale\.httpsPort is 443/);
    assert.equal(other!.fix, "if you did not set it up on purpose: tailscale serve --https=10000 off");

    status({ [`${DNS}:443`]: { Handlers: { "/": { Proxy: `http://127.0.0.1:${port}/` } } } });
    assert.equal(byId((await audit(faked)).report, "channel.web.tailscale-stale"), undefined, "only the chat's own serve");
    writeConfig(home, { channels: { web: { enabled: true, port } } });
    assert.equal(byId((await audit(env)).report, "channel.web.tailscale-stale"), undefined, "no tailscale binary: nothing");
    writeFileSync(join(bin, "status.json"), "not json");
    assert.equal(byId((await audit(faked)).report, "channel.web.tailscale-stale"), undefined, "an unreadable status: nothing");
  });
});
