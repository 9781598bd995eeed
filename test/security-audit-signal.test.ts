/**
 * `lurkbot security audit` on the Signal channel (`channels.signal`), as a real process on a real
 * home: signal-cli's HTTP daemon has no authentication, so a daemon off this machine is critical
 * over plain http, a warning over https (with allowRemote), and a warning saying the channel will
 * refuse to start without allowRemote; a loopback daemon or a disabled channel: nothing. Signal
 * DMs count among the platform channels' open DMs.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { audit, byId, freshHome, removeAuditDirs, writeConfig } from "./harness/audit.js";

const IDS = ["channel.signal.remote-daemon", "channel.signal.remote-refused"];
const account = "+15550001111";

after(removeAuditDirs);

describe("lurkbot security audit: the Signal channel", () => {
  it("a remote signal-cli daemon: critical over http, a warning over https, a refusal warning without allowRemote; loopback or disabled: nothing", async () => {
    const { home, env } = await freshHome({ channels: { signal: { enabled: true, account, url: "http://10.0.0.5:8080", allowRemote: true } } });
    const plain = await audit(env);
    const p = byId(plain.report, "channel.signal.remote-daemon");
    assert.equal(p?.level, "critical");
    assert.match(p!.detail, /checks no credentials: any process that reaches http:\/\/10\.0\.0\.5:8080 reads every message \+15550001111 receives/);
    assert.match(p!.detail, /cross the network in clear/);
    assert.match(p!.fix, /daemon --http 127\.0\.0\.1:8080/);

    writeConfig(home, { channels: { signal: { enabled: true, account, url: "https://signal.example.org", allowRemote: true } } });
    assert.equal(byId((await audit(env)).report, "channel.signal.remote-daemon")?.level, "warning");

    writeConfig(home, { channels: { signal: { enabled: true, account, url: "http://10.0.0.5:8080" } } });
    const refused = await audit(env);
    const r = byId(refused.report, "channel.signal.remote-refused");
    assert.equal(r?.level, "warning");
    assert.match(r!.detail, /channel-signal stops at start/);
    assert.equal(byId(refused.report, "channel.signal.remote-daemon"), undefined);

    for (const config of [{ channels: { signal: { enabled: true, account } } }, { channels: { signal: { enabled: false, account, url: "http://10.0.0.5:8080", allowRemote: true } } }]) {
      writeConfig(home, config);
      const none = await audit(env);
      assert.deepEqual(none.report.findings.filter((x) => IDS.includes(x.id)), [], JSON.stringify(config));
    }
  });

  it("open Signal DMs are reported like the other platform channels'", async () => {
    const { env } = await freshHome({ channels: { signal: { enabled: true, account } }, routing: { dm: { policy: "open" } } });
    const open = byId((await audit(env)).report, "routing.dm.signal.open");
    assert.equal(open?.level, "warning");
    assert.match(open!.title, /anyone on signal can DM the agent/);
  });
});
