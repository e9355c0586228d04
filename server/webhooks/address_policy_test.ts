import assert from "node:assert/strict";
import {
  allowListOf,
  checkAddresses,
  isNonPublic,
  parseWebhookUrl,
  resolveChecked,
  WebhookAddressError,
} from "./address_policy.ts";
import { parseIp } from "../net/ip.ts";

const NONE = allowListOf([]);

Deno.test("isNonPublic() refuses loopback, private, link-local and mapped private addresses", () => {
  for (
    const a of [
      "127.0.0.1",
      "10.1.2.3",
      "172.16.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "::1",
      "fe80::1",
      "fd00::1",
      "::ffff:127.0.0.1",
      "::ffff:10.0.0.1",
    ]
  ) {
    assert.equal(isNonPublic(parseIp(a)!), true, a);
  }
  for (const a of ["1.1.1.1", "8.8.8.8", "2606:4700:4700::1111"]) {
    assert.equal(isNonPublic(parseIp(a)!), false, a);
  }
});

Deno.test("checkAddresses() lets an allow-listed host or network through, nothing else", () => {
  assert.throws(() => checkAddresses("h", ["127.0.0.1"], NONE), WebhookAddressError);
  assert.throws(() => checkAddresses("h", ["1.1.1.1", "10.0.0.1"], NONE), WebhookAddressError);
  assert.deepEqual(checkAddresses("h", ["1.1.1.1"], NONE), ["1.1.1.1"]);
  assert.deepEqual(checkAddresses("h", ["127.0.0.1"], allowListOf(["127.0.0.0/8"])), [
    "127.0.0.1",
  ]);
  assert.deepEqual(checkAddresses("hooks.lan", ["10.0.0.9"], allowListOf(["hooks.lan"])), [
    "10.0.0.9",
  ]);
  assert.throws(() => checkAddresses("h", [], NONE), WebhookAddressError);
});

Deno.test("resolveChecked() checks what an IP literal or a name resolves to", async () => {
  await assert.rejects(resolveChecked("127.0.0.1", NONE), WebhookAddressError);
  await assert.rejects(resolveChecked("localhost", NONE), WebhookAddressError);
  assert.deepEqual(await resolveChecked("127.0.0.1", allowListOf(["127.0.0.1/32"])), [
    "127.0.0.1",
  ]);
});

Deno.test("parseWebhookUrl() takes http and https only, without credentials", () => {
  assert.equal(parseWebhookUrl("https://hooks.example/in?x=1").pathname, "/in");
  for (const bad of ["ftp://h/x", "file:///etc/passwd", "not a url", "https://u:p@h/x"]) {
    assert.throws(() => parseWebhookUrl(bad), WebhookAddressError, bad);
  }
});
