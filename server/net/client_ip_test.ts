import assert from "node:assert/strict";
import { NO_TRUSTED_PROXIES, parseTrustedProxies, peerInfo } from "./client_ip.ts";

const trusted = parseTrustedProxies(["127.0.0.1/32", "10.0.0.0/8", "::1"]);

Deno.test("parseTrustedProxies refuses an entry that is not an IP or CIDR", () => {
  assert.throws(() => parseTrustedProxies(["10.0.0.0/8", "proxy.local"]), /proxy\.local/);
});

Deno.test("peerInfo ignores forwarding headers from an untrusted peer (spec 4.5)", () => {
  const headers = { "x-forwarded-for": "203.0.113.7", "x-forwarded-proto": "https" };
  assert.deepEqual(peerInfo("198.51.100.2", headers, trusted, false), {
    remoteAddress: "198.51.100.2",
    secure: false,
  });
  assert.deepEqual(peerInfo("127.0.0.1", headers, NO_TRUSTED_PROXIES, true), {
    remoteAddress: "127.0.0.1",
    secure: true,
  });
});

Deno.test("peerInfo takes the client address and scheme from a trusted proxy", () => {
  const headers = { "x-forwarded-for": "203.0.113.7", "x-forwarded-proto": "https" };
  assert.deepEqual(peerInfo("127.0.0.1", headers, trusted, false), {
    remoteAddress: "203.0.113.7",
    secure: true,
  });
});

Deno.test("peerInfo walks X-Forwarded-For from the right past trusted hops only", () => {
  // The leftmost entry is whatever the client claimed; only the rightmost untrusted one counts.
  const headers = { "x-forwarded-for": "1.1.1.1, 203.0.113.7, 10.0.0.3, 10.0.0.2" };
  assert.equal(peerInfo("::ffff:127.0.0.1", headers, trusted, false).remoteAddress, "203.0.113.7");
});

Deno.test("peerInfo joins repeated X-Forwarded-For headers in order", () => {
  const headers = { "x-forwarded-for": ["1.1.1.1", "203.0.113.8, 10.0.0.9"] };
  assert.equal(peerInfo("10.1.1.1", headers, trusted, false).remoteAddress, "203.0.113.8");
});

Deno.test("peerInfo uses the leftmost entry when every hop is trusted", () => {
  const headers = { "x-forwarded-for": "10.0.0.7, 10.0.0.8" };
  assert.equal(peerInfo("127.0.0.1", headers, trusted, false).remoteAddress, "10.0.0.7");
});

Deno.test("peerInfo stops at an unreadable entry and keeps the last trusted hop", () => {
  const headers = { "x-forwarded-for": "203.0.113.7, unknown, 10.0.0.8" };
  assert.equal(peerInfo("127.0.0.1", headers, trusted, false).remoteAddress, "10.0.0.8");
});

Deno.test("peerInfo reads forwarded entries with ports and IPv6 brackets", () => {
  assert.equal(
    peerInfo("::1", { "x-forwarded-for": "[2001:db8::7]:4711" }, trusted, false).remoteAddress,
    "2001:db8::7",
  );
  assert.equal(
    peerInfo("::1", { "x-forwarded-for": "203.0.113.7:4711" }, trusted, false).remoteAddress,
    "203.0.113.7",
  );
});

Deno.test("peerInfo keeps the socket's scheme when a trusted proxy sends no proto", () => {
  assert.equal(peerInfo("127.0.0.1", {}, trusted, true).secure, true);
  assert.equal(peerInfo("127.0.0.1", { "x-forwarded-proto": "http" }, trusted, true).secure, false);
  assert.equal(
    peerInfo("127.0.0.1", { "x-forwarded-proto": "HTTPS, http" }, trusted, false).secure,
    true,
  );
});

Deno.test("peerInfo reports IPv4-mapped socket addresses as IPv4", () => {
  assert.equal(peerInfo("::ffff:198.51.100.2", {}, trusted, false).remoteAddress, "198.51.100.2");
});
