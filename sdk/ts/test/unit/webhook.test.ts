import assert from "node:assert/strict";
import { test } from "node:test";
import { signWebhook, verifyWebhook } from "../../src/webhook.ts";

// The example of the Standard Webhooks specification, which NixMsg's signatures follow.
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TS = 1614265330;
const BODY = '{"test": 2432232314}';
const SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

test("signWebhook makes the Standard Webhooks signature", async () => {
  assert.equal(await signWebhook(SECRET, ID, TS, BODY), SIG);
  assert.equal(await signWebhook(SECRET, ID, TS, new TextEncoder().encode(BODY)), SIG);
});

test("verifyWebhook accepts a valid request within the tolerance and refuses the rest", async () => {
  const now = TS * 1000;
  const headers = { "webhook-id": ID, "webhook-timestamp": String(TS), "webhook-signature": SIG };
  assert.equal(await verifyWebhook(SECRET, headers, BODY, { now }), true);
  assert.equal(await verifyWebhook(SECRET, new Headers(headers), BODY, { now }), true);
  const several = { ...headers, "webhook-signature": `v1,AAAA ${SIG}` };
  assert.equal(await verifyWebhook(SECRET, several, BODY, { now }), true);
  assert.equal(await verifyWebhook(SECRET, headers, BODY + " ", { now }), false);
  assert.equal(
    await verifyWebhook(SECRET, { ...headers, "webhook-id": "x" }, BODY, { now }),
    false,
  );
  assert.equal(await verifyWebhook(SECRET, headers, BODY, { now: now + 301_000 }), false);
  assert.equal(await verifyWebhook("whsec_%%%", headers, BODY, { now }), false);
  assert.equal(await verifyWebhook(SECRET, {}, BODY, { now }), false);
});
