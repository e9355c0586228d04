import assert from "node:assert/strict";
import { addressGroup, formatIp, normalizeIp, parseIp, parseIpRange, rangeContains } from "./ip.ts";

function mustParse(text: string) {
  const ip = parseIp(text);
  assert.ok(ip !== null, `${text} should parse`);
  return ip;
}

function inRange(range: string, ip: string): boolean {
  const r = parseIpRange(range);
  assert.ok(r !== null, `${range} should parse`);
  return rangeContains(r, mustParse(ip));
}

Deno.test("parseIp reads IPv4 and IPv6 addresses as numbers", () => {
  assert.deepEqual(parseIp("10.0.0.1"), { family: 4, value: 0x0a000001n });
  assert.deepEqual(parseIp("::1"), { family: 6, value: 1n });
  assert.deepEqual(parseIp("2001:db8::8:800:200c:417a"), {
    family: 6,
    value: 0x20010db80000000000080800200c417an,
  });
  assert.deepEqual(parseIp("fe80::1%eth0"), {
    family: 6,
    value: 0xfe800000000000000000000000000001n,
  });
});

Deno.test("parseIp treats an IPv4-mapped IPv6 address as IPv4", () => {
  assert.deepEqual(parseIp("::ffff:127.0.0.1"), { family: 4, value: 0x7f000001n });
  assert.deepEqual(parseIp("::ffff:7f00:1"), { family: 4, value: 0x7f000001n });
});

Deno.test("parseIp refuses text that is not an address", () => {
  for (const bad of ["", "unknown", "1.2.3", "256.1.1.1", "1.2.3.4:80", "::g", "[::1]"]) {
    assert.equal(parseIp(bad), null, bad);
  }
});

Deno.test("formatIp writes IPv4 dotted and IPv6 compressed", () => {
  assert.equal(formatIp(mustParse("10.0.0.1")), "10.0.0.1");
  assert.equal(formatIp(mustParse("2001:0DB8:0:0:0:0:0:1")), "2001:db8::1");
  assert.equal(formatIp(mustParse("1:0:0:2:0:0:0:3")), "1:0:0:2::3");
  assert.equal(formatIp(mustParse("1:2:3:4:5:6:7:8")), "1:2:3:4:5:6:7:8");
  assert.equal(formatIp(mustParse("::")), "::");
  assert.equal(formatIp(mustParse("1::")), "1::");
});

Deno.test("normalizeIp unwraps IPv4-mapped addresses and leaves non-addresses alone", () => {
  assert.equal(normalizeIp("::ffff:192.168.1.9"), "192.168.1.9");
  assert.equal(normalizeIp("::1"), "::1");
  assert.equal(normalizeIp("not-an-ip"), "not-an-ip");
});

Deno.test("parseIpRange reads CIDR ranges and bare addresses", () => {
  assert.ok(inRange("10.0.0.0/8", "10.255.1.2"));
  assert.ok(!inRange("10.0.0.0/8", "11.0.0.1"));
  assert.ok(inRange("127.0.0.1", "127.0.0.1"));
  assert.ok(!inRange("127.0.0.1", "127.0.0.2"));
  assert.ok(inRange("0.0.0.0/0", "203.0.113.9"));
  assert.ok(inRange("fd00::/8", "fd12:3456::1"));
  assert.ok(!inRange("fd00::/8", "fe80::1"));
  assert.ok(inRange("::1", "::1"));
});

Deno.test("an IPv4 range matches the IPv4-mapped form of its addresses and not IPv6", () => {
  assert.ok(inRange("127.0.0.0/8", "::ffff:127.0.0.1"));
  assert.ok(inRange("::ffff:10.0.0.0/104", "10.1.2.3"));
  assert.ok(!inRange("::ffff:10.0.0.0/104", "11.1.2.3"));
  assert.ok(!inRange("0.0.0.0/0", "::1"));
  assert.ok(!inRange("::/0", "127.0.0.1"));
});

Deno.test("parseIpRange refuses malformed ranges", () => {
  for (const bad of ["10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/8/8", "x/8", "10.0.0.0/-1"]) {
    assert.equal(parseIpRange(bad), null, bad);
  }
});

Deno.test("addressGroup() keeps IPv4 addresses and groups IPv6 ones by prefix", () => {
  assert.equal(addressGroup("192.0.2.7"), "192.0.2.7");
  assert.equal(addressGroup("::ffff:192.0.2.7"), "192.0.2.7");
  assert.equal(addressGroup("2001:db8:1:2:aaaa::7"), "2001:db8:1:2::/64");
  assert.equal(addressGroup("2001:db8:1:2:aaaa::7", 48), "2001:db8:1::/48");
  assert.equal(addressGroup("2001:db8:1:2:aaaa::7", 128), "2001:db8:1:2:aaaa::7");
  assert.equal(addressGroup("not an ip"), "not an ip");
});
