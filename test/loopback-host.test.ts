/** The one loopback rule (shared/runtime/loopback-host.ts) the launcher, the NATS transport check, nats.ssh, Tailscale, Matrix, Signal and the audit share. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isLoopbackHost, isLoopbackUrl } from "../shared/runtime/loopback-host.js";

describe("isLoopbackHost / isLoopbackUrl", () => {
  it("takes localhost, ::1 (bracketed or not) and 127.x.y.z addresses", () => {
    for (const host of ["localhost", "::1", "[::1]", "127.0.0.1", "127.1.2.3"]) assert.equal(isLoopbackHost(host), true, host);
    for (const url of ["http://localhost:8080/", "http://[::1]:8008", "nats://127.0.0.1:4222"]) assert.equal(isLoopbackUrl(url), true, url);
  });

  it("refuses a DNS name that merely starts with 127., other addresses and URLs that do not parse", () => {
    for (const host of ["127.example.com", "127.0.0.1.nip.io", "10.0.0.1", "0.0.0.0", "::", "example.org", ""]) assert.equal(isLoopbackHost(host), false, host);
    for (const url of ["http://127.example.com/", "https://matrix.example.org", "not a url"]) assert.equal(isLoopbackUrl(url), false, url);
  });
});
