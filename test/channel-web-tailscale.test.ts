/**
 * The web channel published with Tailscale (`channels.web.tailscale`), the channel a real process
 * on a real nats-server, `tailscale` a fake executable (a node script first on the actor's PATH
 * that records its argv and answers like Tailscale 1.8x): serve runs `status --json` then
 * `serve --bg --https=443 http://127.0.0.1:<port>/`, publishes the URL (event, log, `lurkbot
 * status`) and turns it off at stop; funnel on another port, without the reset when
 * resetOnExit is false; funnel with a weak token and serve beyond loopback refused before any
 * command; no binary, a host not logged in, a failing serve (its stderr in the error) and a
 * hanging tailscale (killed after timeoutMs) each reported while the chat serves locally; a stop
 * while serve hangs ends cleanly. Every start with a binary first reads `serve status --json`: a
 * serve or funnel to the chat's port the config does not want (mode off, another https port) is a
 * warning and `tailscale_stale` with the command that turns it off, and nothing is removed; a
 * publish that failed is not turned off at stop.
 */
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import type { NatsConnection } from "@nats-io/transport-node";
import { startActorProcess, waitFor, type ActorProcess } from "./harness/actors.js";
import { runCli } from "./harness/cli.js";
import { collectActorEvents, type SeenActorEvent } from "./harness/events.js";
import { freePort, TestNats } from "./harness/nats.js";

const STRONG = "Zq7f-Kd93_xPw2LmA8vRt5Ny1Hc6Ue4B";
const WEAK = "password12345678";
const DNS = "box.tail1234.ts.net";
const SERVE_STATUS = ["serve", "status", "--json"];

/** The fake: argv of every call appended to calls.jsonl; what it does read from behavior.json next to it. */
const FAKE = `#!${process.execPath}
const fs = require("node:fs");
const path = require("node:path");
const dir = __dirname;
const args = process.argv.slice(2);
fs.appendFileSync(path.join(dir, "calls.jsonl"), JSON.stringify(args) + "\\n");
const b = JSON.parse(fs.readFileSync(path.join(dir, "behavior.json"), "utf8"));
const cmd = args[0] === "serve" && args[1] === "status" ? "serve-status" : args[0];
if (b.hang === cmd) {
  setInterval(() => {}, 1000);
} else if (cmd === "serve-status") {
  process.stdout.write(JSON.stringify(b.serveStatus || {}, null, 2));
} else if (args[0] === "status") {
  process.stdout.write(JSON.stringify({ Version: "1.84.0", BackendState: b.backendState || "Running", AuthURL: "", Self: { ID: "n1", HostName: "box", DNSName: "${DNS}.", TailscaleIPs: ["100.64.0.1"], Online: true }, MagicDNSSuffix: "tail1234.ts.net" }, null, 2));
} else if ((args[0] === "serve" || args[0] === "funnel") && args.at(-1) !== "off" && b.publishError) {
  process.stderr.write("\\n  " + b.publishError + "  \\n\\n");
  process.exit(1);
} else if (args[0] === "serve" || args[0] === "funnel") {
  process.stdout.write(args.at(-1) === "off" ? "" : "Available within your tailnet:\\n\\nhttps://${DNS}/\\n|-- proxy " + args.at(-1) + "\\n\\nServe started and running in the background.\\n");
} else {
  process.stderr.write("unexpected command\\n");
  process.exit(2);
}
`;

describe("web channel published with Tailscale (a fake tailscale binary)", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let events: SeenActorEvent[];
  let dir: string;
  let bin: string;
  let channel: ActorProcess | undefined;
  let port: number;

  const calls = (): string[][] => (existsSync(join(bin, "calls.jsonl")) ? readFileSync(join(bin, "calls.jsonl"), "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as string[]) : []);
  const eventOf = (name: string) => events.find((e) => e.event === name && e.pid === channel?.child.pid);
  /** Starts channel-web with `web` settings; `path` is the actor's PATH (default: the fake's dir first); `behavior` may depend on the chat's port. */
  const start = async (web: Record<string, unknown>, behavior: Record<string, unknown> | ((port: number) => Record<string, unknown>) = {}, path = `${bin}:/usr/bin:/bin`) => {
    rmSync(join(bin, "calls.jsonl"), { force: true });
    port = await freePort();
    writeFileSync(join(bin, "behavior.json"), JSON.stringify(typeof behavior === "function" ? behavior(port) : behavior));
    writeFileSync(join(nats.home, "config.json"), JSON.stringify({ channels: { web: { enabled: true, port, token: STRONG, ...web } } }));
    channel = await startActorProcess("channel-web", nats, { PATH: path, LURKBOT_LOG_LEVEL: "info" });
  };
  const servesLocally = async () => {
    const page = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(page.status, 200, "the chat still serves on loopback");
    const api = await fetch(`http://127.0.0.1:${port}/api/sessions`);
    assert.equal(api.status, 401, "and still wants its token");
  };

  before(async () => {
    nats = await TestNats.start();
    mkdirSync(nats.home, { recursive: true });
    nc = await nats.connect("cli");
    events = await collectActorEvents(nc, "channel-web");
    dir = mkdtempSync(join(tmpdir(), "lurk-ts-"));
    bin = join(dir, "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "tailscale"), FAKE);
    chmodSync(join(bin, "tailscale"), 0o755);
    mkdirSync(join(dir, "empty"));
  });
  beforeEach(async () => {
    await channel?.stop();
    channel = undefined;
  });
  after(async () => {
    await channel?.stop();
    await nc?.close();
    await nats?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serve: status, then serve --bg --https=443 to the chat's loopback port; the URL published; `lurkbot status` shows it; stop turns it off", async () => {
    await start({ tailscale: { mode: "serve" } });
    const published = await waitFor(() => eventOf("tailscale_published"), 10_000, "tailscale_published");
    const local = `http://127.0.0.1:${port}/`;
    assert.deepEqual(published.data, { mode: "serve", url: `https://${DNS}/`, httpsPort: 443, local });
    assert.deepEqual(calls(), [SERVE_STATUS, ["status", "--json", "--peers=false"], ["serve", "--bg", "--https=443", local]]);
    assert.match(channel!.output(), new RegExp(`web chat published on the tailnet \\(Tailscale Serve\\): https://${DNS.replace(/\./g, "\\.")}/`));
    await servesLocally();

    const status = await runCli(["status"], nats.env(nats.passwordEnv("cli")));
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`channel-web@\\S+:${channel!.child.pid} publishes the web chat on the tailnet \\(tailscale serve, https port 443\\)`));

    const pid = channel!.child.pid;
    assert.equal(await channel!.stop(), 0);
    assert.deepEqual(calls().at(-1), ["serve", "--https=443", "off"], "reset at exit");
    assert.equal(calls().length, 4);
    assert.equal(events.find((e) => e.event === "tailscale_stale" && e.pid === pid), undefined, "nothing stale");
    await waitFor(() => events.find((e) => e.event === "tailscale_reset" && e.pid === pid), 5_000, "tailscale_reset");
  });

  it("funnel on https port 8443 with strong tokens (users): funnel --bg --https=8443, the URL with the port; resetOnExit false leaves it on", async () => {
    await start({ users: [{ id: "alice", token: STRONG }, { id: "bob", token: `${STRONG}-bob` }], tailscale: { mode: "funnel", httpsPort: 8443, resetOnExit: false } });
    const published = await waitFor(() => eventOf("tailscale_published"), 10_000, "tailscale_published");
    assert.equal(published.data.url, `https://${DNS}:8443/`);
    assert.equal(published.data.mode, "funnel");
    assert.deepEqual(calls()[2], ["funnel", "--bg", "--https=8443", `http://127.0.0.1:${port}/`]);
    assert.match(channel!.output(), /published on the internet \(Tailscale Funnel\)/);
    await channel!.stop();
    assert.equal(calls().length, 3, "no `off` with resetOnExit: false");
  });

  it("funnel with a weak token, and serve on a non-loopback host: refused before any publish command (only the stale check runs), the chat serves locally", async () => {
    await start({ token: WEAK, tailscale: { mode: "funnel" } });
    const weak = await waitFor(() => eventOf("tailscale_failed"), 10_000, "tailscale_failed");
    assert.equal(weak.data.problem, "refused");
    assert.match(String(weak.data.message), /puts the chat on the internet.*channels\.web\.token is easy to guess \(it is shorter than 24 characters\).*use mode "serve"/);
    assert.ok(!JSON.stringify(weak.data).includes(WEAK) && !channel!.output().includes(WEAK), "the token is never shown");
    await waitFor(() => calls().length === 1, 10_000, "the check");
    assert.deepEqual(calls(), [SERVE_STATUS], "only the check for a stale serve");
    await servesLocally();
    assert.equal(eventOf("tailscale_published"), undefined);

    await channel!.stop();
    await start({ host: "0.0.0.0", tailscale: { mode: "serve" } });
    const exposed = await waitFor(() => eventOf("tailscale_failed"), 10_000, "tailscale_failed");
    assert.equal(exposed.data.problem, "refused");
    assert.match(String(exposed.data.message), /channels\.web\.host is "0\.0\.0\.0", not loopback.*set channels\.web\.host to "127\.0\.0\.1"/);
    await waitFor(() => calls().length === 1, 10_000, "the check");
    assert.deepEqual(calls(), [SERVE_STATUS]);
    await servesLocally();
  });

  it("no tailscale binary: the error says how to install it or turn the mode off; the chat serves locally", async () => {
    await start({ tailscale: { mode: "serve" } }, {}, join(dir, "empty"));
    const failed = await waitFor(() => eventOf("tailscale_failed"), 10_000, "tailscale_failed");
    assert.equal(failed.data.problem, "not-installed");
    assert.match(String(failed.data.message), /no `tailscale` on PATH.*https:\/\/tailscale\.com\/download.*tailscale\.mode to "off"/);
    assert.match(channel!.output(), /tailscale serve not set up: no `tailscale` on PATH.*the web chat still serves on http:\/\/127\.0\.0\.1:\d+\//);
    await servesLocally();
    assert.equal(await channel!.stop(), 0, "stops cleanly with nothing to reset");
  });

  it("not logged in (BackendState NeedsLogin): says `tailscale up`, runs no serve and no reset", async () => {
    await start({ tailscale: { mode: "serve" } }, { backendState: "NeedsLogin" });
    const failed = await waitFor(() => eventOf("tailscale_failed"), 10_000, "tailscale_failed");
    assert.equal(failed.data.problem, "not-running");
    assert.match(String(failed.data.message), /not connected on this host \(BackendState "NeedsLogin"\): run `tailscale up`/);
    await servesLocally();
    await channel!.stop();
    assert.deepEqual(calls(), [SERVE_STATUS, ["status", "--json", "--peers=false"]]);
  });

  it("a failing serve command: its stderr, trimmed, in the error; nothing turned off at stop (the publish did not take)", async () => {
    const said = "Funnel not available; \"funnel\" node attribute not set. Please visit https://login.tailscale.com/f/funnel?node=n1";
    await start({ tailscale: { mode: "funnel" } }, { publishError: said });
    const failed = await waitFor(() => eventOf("tailscale_failed"), 10_000, "tailscale_failed");
    assert.equal(failed.data.problem, "failed");
    assert.equal(failed.data.message, `\`tailscale funnel --bg --https=443 http://127.0.0.1:${port}/\` failed (exit 1): ${said}`);
    await servesLocally();
    const pid = channel!.child.pid;
    assert.equal(await channel!.stop(), 0);
    assert.deepEqual(calls().filter((c) => c.at(-1) === "off"), [], "a publish that failed is not turned off: that port may serve something else");
    assert.equal(events.find((e) => e.event === "tailscale_reset" && e.pid === pid), undefined);
  });

  it("a hanging tailscale is killed after timeoutMs; the channel was ready at once and serves locally", async () => {
    await start({ tailscale: { mode: "serve", timeoutMs: 1000 } }, { hang: "status" });
    await servesLocally();
    const failed = await waitFor(() => eventOf("tailscale_failed"), 15_000, "tailscale_failed");
    assert.equal(failed.data.problem, "timeout");
    assert.match(String(failed.data.message), /`tailscale status --json --peers=false` did not finish within 1000 ms and was stopped/);
    assert.equal(await channel!.stop(), 0);
  });

  it("a serve and a funnel left to this chat's port while mode is off (an unclean exit): a warning and tailscale_stale each with the command, nothing removed; others' serves not reported", async () => {
    const other = await freePort();
    await start({ tailscale: { mode: "off" } }, (p) => ({
      serveStatus: {
        TCP: { "443": { HTTPS: true }, "8443": { HTTPS: true }, "10000": { HTTPS: true } },
        Web: {
          [`${DNS}:443`]: { Handlers: { "/": { Proxy: `http://127.0.0.1:${p}` } } },
          [`${DNS}:8443`]: { Handlers: { "/": { Proxy: `http://127.0.0.1:${other}` } } },
          [`${DNS}:10000`]: { Handlers: { "/chat/": { Proxy: `http://localhost:${p}/` } } },
        },
        AllowFunnel: { [`${DNS}:443`]: true },
      },
    }));
    const pid = channel!.child.pid;
    await waitFor(() => events.filter((e) => e.event === "tailscale_stale" && e.pid === pid).length === 2, 10_000, "two tailscale_stale");
    const stale = events.filter((e) => e.event === "tailscale_stale" && e.pid === pid).sort((a, b) => Number(a.data.servedPort) - Number(b.data.servedPort));
    assert.deepEqual(stale.map((e) => [e.data.servedPort, e.data.funnel, e.data.command]), [
      [443, true, "tailscale funnel --https=443 off"],
      [10000, false, "tailscale serve --https=10000 --set-path=/chat/ off"],
    ]);
    assert.match(String(stale[0]!.data.message), /still publishes this web chat on the internet \(Tailscale Funnel\) on https port 443 .*while channels\.web\.tailscale\.mode is "off": run `tailscale funnel --https=443 off`/);
    assert.match(channel!.output(), /still publishes this web chat on the internet \(Tailscale Funnel\)/);
    await servesLocally();
    assert.equal(await channel!.stop(), 0);
    assert.deepEqual(calls(), [SERVE_STATUS], "nothing turned off or published");
    assert.equal(events.find((e) => (e.event === "tailscale_failed" || e.event === "tailscale_published") && e.pid === pid), undefined);
  });

  it("serve on 443 with an old serve of this chat left on 8443: that one is stale, the one on 443 is the chat's own; mode off without tailscale: nothing", async () => {
    await start({ tailscale: { mode: "serve" } }, (p) => ({
      serveStatus: {
        TCP: { "443": { HTTPS: true }, "8443": { HTTPS: true } },
        Web: { [`${DNS}:443`]: { Handlers: { "/": { Proxy: `http://127.0.0.1:${p}` } } }, [`${DNS}:8443`]: { Handlers: { "/": { Proxy: `http://127.0.0.1:${p}` } } } },
      },
    }));
    const pid = channel!.child.pid;
    await waitFor(() => eventOf("tailscale_published"), 10_000, "tailscale_published");
    const stale = events.filter((e) => e.event === "tailscale_stale" && e.pid === pid);
    assert.deepEqual(stale.map((e) => [e.data.servedPort, e.data.command]), [[8443, "tailscale serve --https=8443 off"]]);
    assert.match(String(stale[0]!.data.message), /while channels\.web\.tailscale\.httpsPort is 443/);
    await channel!.stop();
    assert.ok(!calls().some((c) => c.includes("--https=8443")), "the stale one is left alone");

    await start({ tailscale: { mode: "off" } }, {}, join(dir, "empty"));
    await servesLocally();
    assert.equal(await channel!.stop(), 0);
    assert.equal(events.find((e) => e.event.startsWith("tailscale_") && e.pid === channel!.child.pid), undefined, "no binary, mode off: silent");
  });

  it("stopping while `tailscale serve` hangs: the command is killed, the reset tried within its own limit, the process exits cleanly", async () => {
    await start({ tailscale: { mode: "serve", timeoutMs: 60_000 } }, { hang: "serve" });
    await waitFor(() => calls().some((c) => c[0] === "serve" && c[1] === "--bg"), 10_000, "the serve call");
    assert.equal(await channel!.stop(), 0, "exits by itself, not by the 10 s force");
    assert.deepEqual(calls().at(-1), ["serve", "--https=443", "off"], "it may have taken effect: turned off");
    assert.equal(eventOf("tailscale_published"), undefined);
  });
});
